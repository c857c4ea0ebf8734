"""Which judge run the report uses (docs/how-to/judge-runs.md): the store's first judge run with a valid verdict, or
the one `judge --default` named last; a later judge run never changes a report by itself. Which run was used, the
others and how to choose are said on stderr (stdout keeps exactly the table or the JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.analytics import shown
from searchtrace.store import EventLog, JudgeStarted, NewEvent
from tests.analytics.analytics_fixture import JUDGMENTS, TRACES, import_fixture, labels, verdict
from tests.builders import run_cli, write_jsonl

ITEMS = 10  # alpha 6 (t-a1 4, t-a2 2), beta 2, gamma 2 (t-g2 searched with no result)
IMPORTED = shown.assumed_note(4)  # imported traces carry no model requests: every result counts as shown
CHOOSE = "choose another with --judge-run-id ID, or make one the default with `searchtrace judge --default --judge-run-id ID`"


def used(run: str, others: str, why: str = "the store's first judge run with a valid verdict") -> str:
    return f"judge run {run} used ({why}); also in this store: {others}; {CHOOSE}"


MADE = "made the default with `judge --default`"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.duckdb"
    import_fixture(path, tmp_path / "in")  # j1 judges 8 items, then j2 judges 1
    return path


def _report(db: Path, *extra: str) -> tuple[str, list[str]]:
    code, out, err = run_cli("report", "--db", str(db), "--json", "--bootstrap", "0", *extra)
    assert code == 0, err
    return json.loads(out)["judge_run_id"], err.splitlines()


def _events(db: Path) -> int:
    with EventLog(db, read_only=True) as log:
        row = log.cursor().execute("SELECT count(*) FROM events").fetchone()
    assert row is not None
    return int(row[0])


def test_partial_coverage_and_the_run_used_are_said_in_one_line_each(db: Path) -> None:
    assert _report(db) == ("j1", [used("j1", "j2"), f"judge run j1: 8 of {ITEMS} items have a verdict", IMPORTED])
    assert _report(db, "--judge-run-id", "j2") == ("j2", [f"judge run j2: 1 of {ITEMS} items have a verdict", IMPORTED])


def test_a_second_judge_run_changes_no_report_until_made_the_default(tmp_path: Path) -> None:
    db = tmp_path / "one.duckdb"
    traces = write_jsonl(tmp_path / "t.jsonl", TRACES)
    first = write_jsonl(tmp_path / "j1.jsonl", [j for j in JUDGMENTS if j["judge_run_id"] == "j1"])
    second = write_jsonl(tmp_path / "j2.jsonl", [j for j in JUDGMENTS if j["judge_run_id"] == "j2"])
    assert run_cli("import", "--db", str(db), str(traces), "--judgments", str(first)).code == 0
    code, before, err = run_cli("report", "--db", str(db), "--json")
    assert code == 0 and "also in this store" not in err  # one judge run: nothing to choose between
    table = run_cli("report", "--db", str(db)).out
    assert "judge run j1" in table  # the text output names it

    assert run_cli("import", "--db", str(db), "--judgments", str(second)).code == 0  # a later, exploratory re-judge
    code, after, err = run_cli("report", "--db", str(db), "--json")
    assert code == 0 and after == before  # byte for byte: the later run changed nothing
    assert json.loads(after)["judge_run_chosen_by"] == "first"
    assert used("j1", "j2") in err.splitlines()  # stderr names the run used, the others and how to choose
    assert run_cli("report", "--db", str(db)).out == table

    code, out, err = run_cli("judge", "--db", str(db), "--default", "--judge-run-id", "j2")
    assert (code, out.strip()) == (0, f"judge run j2 is now the default of {db}: report, view and export use it "
                                      "unless --judge-run-id names another"), err
    code, made, err = run_cli("report", "--db", str(db), "--json")
    assert code == 0 and json.loads(made)["judge_run_id"] == "j2" and made != before
    assert json.loads(made)["judge_run_chosen_by"] == "judge --default"
    assert used("j2", "j1", MADE) in err.splitlines()
    n = _events(db)
    assert run_cli("judge", "--db", str(db), "--default", "--judge-run-id", "j2").out.strip() == (
        f"judge run j2 already is the default of {db}")
    assert _events(db) == n  # nothing recorded twice

    third = write_jsonl(tmp_path / "j3.jsonl", [verdict("j3", "t-b1", "https://example.com/a", None, valid=False)])
    assert run_cli("import", "--db", str(db), "--judgments", str(third)).code == 0
    assert _report(db)[0] == "j2"  # a made default stays until another is made
    assert run_cli("judge", "--db", str(db), "--default", "--judge-run-id", "j1").code == 0
    code, back, _ = run_cli("report", "--db", str(db), "--json")
    assert json.loads(back)["judge_run_id"] == "j1" and json.loads(back)["judge_run_chosen_by"] == "judge --default"
    given = json.loads(run_cli("report", "--db", str(db), "--json", "--judge-run-id", "j2").out)
    assert (given["judge_run_id"], given["judge_run_chosen_by"]) == ("j2", "given")


def test_judge_default_of_an_unknown_run_is_one_line_and_records_nothing(db: Path) -> None:
    n = _events(db)
    code, out, err = run_cli("judge", "--db", str(db), "--default", "--judge-run-id", "nope")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "judge run 'nope' not found in the database (known: j1, j2)" in err and "Traceback" not in err
    assert _events(db) == n


def test_a_later_run_without_a_valid_verdict_is_named(db: Path, tmp_path: Path) -> None:
    invalid = write_jsonl(tmp_path / "j3.jsonl", [verdict("j3", "t-a2", "https://x.org", None, valid=False)])
    assert run_cli("import", "--db", str(db), "--judgments", str(invalid))[0] == 0
    with EventLog(db) as log:  # a judge run that started and wrote nothing (e.g. killed at once)
        log.append([NewEvent(stream_id="judge:j4", run_id="j4",
                             payload=JudgeStarted(judge_run_id="j4", model="m", prompt_version="p", prompt_sha256="0"))])
    run, notes = _report(db)
    assert run == "j1"
    assert notes == [
        "judge run j3 has no valid verdict; using judge run j1",
        "judge run j4 has no valid verdict; using judge run j1",
        used("j1", "j2, j3, j4"),
        f"judge run j1: 8 of {ITEMS} items have a verdict",
        IMPORTED,
    ]
    assert _report(db, "--judge-run-id", "j4") == ("j4", [f"judge run j4: 0 of {ITEMS} items have a verdict", IMPORTED])


def test_the_first_run_to_give_a_valid_verdict_is_the_default(tmp_path: Path) -> None:
    """A first judge run that gave no valid verdict is not the default; judged again later, it does not take over."""
    db = tmp_path / "late.duckdb"
    t = write_jsonl(tmp_path / "t.jsonl", TRACES)
    empty = write_jsonl(tmp_path / "j0.jsonl", [verdict("j0", "t-a2", "https://x.org", None, valid=False)])
    good = write_jsonl(tmp_path / "j1.jsonl", [j for j in JUDGMENTS if j["judge_run_id"] == "j1"])
    late = write_jsonl(tmp_path / "j0b.jsonl", [verdict("j0", "t-b1", "https://example.com/a", labels(True, False))])
    for f in (empty, good, late):
        assert run_cli("import", "--db", str(db), str(t), "--judgments", str(f)).code == 0
    run, notes = _report(db)
    assert run == "j1" and used("j1", "j0") in notes


def test_no_run_with_a_valid_verdict_means_no_judge_run(tmp_path: Path) -> None:
    db = tmp_path / "none.duckdb"
    t = write_jsonl(tmp_path / "t.jsonl", TRACES)
    j = write_jsonl(tmp_path / "j.jsonl", [verdict("j9", "t-a2", "https://x.org", None, valid=False)])
    assert run_cli("import", "--db", str(db), str(t), "--judgments", str(j))[0] == 0
    assert _report(db) == (None, ["judge run j9 has no valid verdict; the report uses no judge run", IMPORTED])
    assert json.loads(run_cli("report", "--db", str(db), "--json").out)["judge_run_chosen_by"] is None
    code, _, err = run_cli("audit", "sample", "--db", str(db), "--out", str(tmp_path / "x.tsv"))
    assert code == 2 and "no judge run with a valid verdict" in err


def test_export_and_the_explorer_name_the_judge_run_they_use(db: Path, tmp_path: Path) -> None:
    from tests.web.test_api import get_all

    code, out, err = run_cli("export", "--db", str(db), "--otlp-file", str(tmp_path / "o.json"))
    assert code == 0 and out.strip().endswith("traces, judge run j1 (the store's first judge run with a valid verdict)")
    assert used("j1", "j2") in err.splitlines()
    assert '"stringValue":"j2"' not in (tmp_path / "o.json").read_text()  # the traces carry j1's verdicts only
    code, out, err = run_cli("export", "--db", str(db), "--out", str(tmp_path / "out"))
    assert code == 0 and "the default is judge run j1 (the store's first judge run with a valid verdict)" in err
    assert run_cli("judge", "--db", str(db), "--default", "--judge-run-id", "j2").code == 0
    code, out, err = run_cli("export", "--db", str(db), "--otlp-file", str(tmp_path / "o.json"))
    assert out.strip().endswith("judge run j2 (made the default with judge --default)") and used("j2", "j1", MADE) in err
    (runs,) = get_all(db, ("GET", "/api/judge-runs", None))  # the explorer's scope bar names the default and why
    assert {r["judge_run_id"]: (r["default"], r["chosen_by"]) for r in runs.json()} == {
        "j1": (False, None), "j2": (True, "judge --default")}
