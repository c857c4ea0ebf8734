"""Which judge run the report uses: the latest with a valid verdict; runs passed over and partial coverage are said
in one line each on stderr (stdout keeps exactly the table or the JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchtrace.analytics import shown
from searchtrace.store import EventLog, JudgeStarted, NewEvent
from tests.analytics.analytics_fixture import import_fixture, verdict
from tests.builders import run_cli, write_jsonl

ITEMS = 10  # alpha 6 (t-a1 4, t-a2 2), beta 2, gamma 2 (t-g2 searched with no result)
IMPORTED = shown.assumed_note(4)  # imported traces carry no model requests: every result counts as shown


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.duckdb"
    import_fixture(path, tmp_path / "in")  # j1 judges 8 items, then j2 judges 1
    return path


def _report(db: Path, *extra: str) -> tuple[str, list[str]]:
    import json

    code, out, err = run_cli("report", "--db", str(db), "--json", *extra)
    assert code == 0, err
    return json.loads(out)["judge_run_id"], err.splitlines()


def test_partial_coverage_is_said_in_one_line(db: Path) -> None:
    assert _report(db) == ("j2", [f"judge run j2: 1 of {ITEMS} items have a verdict", IMPORTED])
    assert _report(db, "--judge-run-id", "j1") == ("j1", [f"judge run j1: 8 of {ITEMS} items have a verdict", IMPORTED])


def test_a_later_run_without_a_valid_verdict_is_passed_over_aloud(
    db: Path, tmp_path: Path
) -> None:
    invalid = write_jsonl(tmp_path / "j3.jsonl", [verdict("j3", "t-a2", "https://x.org", None, valid=False)])
    assert run_cli("import", "--db", str(db), "--judgments", str(invalid))[0] == 0
    with EventLog(db) as log:  # a judge run that started and wrote nothing (e.g. killed at once)
        log.append([NewEvent(stream_id="judge:j4", run_id="j4",
                             payload=JudgeStarted(judge_run_id="j4", model="m", prompt_version="p", prompt_sha256="0"))])
    run, notes = _report(db)
    assert run == "j2"
    assert notes == [
        "judge run j3 has no valid verdict; using judge run j2",
        "judge run j4 has no valid verdict; using judge run j2",
        f"judge run j2: 1 of {ITEMS} items have a verdict",
        IMPORTED,
    ]
    assert _report(db, "--judge-run-id", "j4") == ("j4", [f"judge run j4: 0 of {ITEMS} items have a verdict", IMPORTED])


def test_no_run_with_a_valid_verdict_means_no_judge_run(tmp_path: Path) -> None:
    from tests.analytics.analytics_fixture import TRACES

    db = tmp_path / "none.duckdb"
    t = write_jsonl(tmp_path / "t.jsonl", TRACES)
    j = write_jsonl(tmp_path / "j.jsonl", [verdict("j9", "t-a2", "https://x.org", None, valid=False)])
    assert run_cli("import", "--db", str(db), str(t), "--judgments", str(j))[0] == 0
    assert _report(db) == (None, ["judge run j9 has no valid verdict; the report uses no judge run", IMPORTED])
    code, _, err = run_cli("audit", "sample", "--db", str(db), "--out", str(tmp_path / "x.tsv"))
    assert code == 2 and "no judge run with a valid verdict" in err
