"""docs/concepts/statistics.md audits per epoch: the audit TSV names an epoch or a trajectory; a (provider, qid) row against a cell of
several epochs is refused at import (exit 2, nothing written) and, in an older store, not applied by the report."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from searchtrace.analytics import build_report
from searchtrace.store import AuditAnswer, EventLog, NewEvent
from searchtrace.web._data import trajectory as web_trajectory
from tests.builders import model, run_cli, traj, write_jsonl


def _line(tid: str, provider: str, qid: str, epoch: int) -> dict[str, object]:
    return {**traj(tid, provider, qid, "Paris", "Paris", [model(1, 10, 1)]), "epoch": epoch}


# p: q1 in epochs 1..3 (t1, t2, t3), q2 in epoch 1 (u1); r: q1 in epoch 1 (v1)
TRACES = [_line("t1", "p", "q1", 1), _line("t2", "p", "q1", 2), _line("t3", "p", "q1", 3), _line("u1", "p", "q2", 1),
          _line("v1", "r", "q1", 1)]
HEADER = "provider\tqid\tepoch\ttrajectory_id\tsemantic_match\n"
GOOD = HEADER + "p\tq1\t1\t\ttrue\np\tq1\t2\t\tfalse\n\t\t\tt3\ttrue\np\tq2\t\t\ttrue\nr\tq1\t1\t\tfalse\n"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "e.duckdb"
    code, _, err = run_cli("import", "--db", str(db), str(write_jsonl(tmp_path / "t.jsonl", TRACES)))
    assert code == 0, err
    return db


def audits(db: Path) -> list[tuple[str | None, str | None, str | None, str | None, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [tuple(r) for r in con.execute(  # type: ignore[misc]
            "SELECT payload->>'$.trajectory_id', payload->>'$.provider', payload->>'$.qid', payload->>'$.epoch', "
            "payload->>'$.semantic_match' FROM events WHERE type = 'audit.answer' ORDER BY position").fetchall()]
    finally:
        con.close()


def providers(db: Path) -> dict[str, dict[str, object]]:
    code, out, err = run_cli("report", "--db", str(db), "--json")
    assert code == 0, err
    return dict(json.loads(out)["providers"])


def test_rows_per_epoch_and_per_trajectory(store: Path, tmp_path: Path) -> None:
    tsv = tmp_path / "a.tsv"
    tsv.write_text(GOOD, encoding="utf-8")
    code, _, err = run_cli("import", "--db", str(store), "--audit", str(tsv))
    assert code == 0, err
    assert audits(store) == [
        (None, "p", "q1", "1", "true"),  # epoch 1 of a cell with three: the epoch is kept
        (None, "p", "q1", "2", "false"),
        ("t3", "p", "q1", None, "true"),  # a trajectory row carries its cell too
        (None, "p", "q2", None, "true"),  # a one-epoch cell: no epoch needed
        (None, "r", "q1", None, "false"),  # epoch 1 of a one-epoch cell is the row without an epoch (same event)
    ]
    got = providers(store)
    assert (got["p"]["audited"], got["p"]["correct"]) == (4, 3)  # each epoch its own audit: t1, t2, t3, u1
    assert (got["r"]["audited"], got["r"]["correct"]) == (1, 0)
    # the same file again adds nothing; the plain row of the one-epoch cell is the very same event
    plain = tmp_path / "plain.tsv"
    plain.write_text("provider\tqid\tsemantic_match\nr\tq1\tfalse\n", encoding="utf-8")
    for again in (tsv, plain):
        code, out, err = run_cli("import", "--db", str(store), "--audit", str(again))
        assert code == 0 and " 0 new events" in out, err
    # export writes the epoch of every decided cell; a fresh store importing it reports the same
    out_dir = tmp_path / "out"
    assert run_cli("export", "--db", str(store), "--out", str(out_dir))[0] == 0
    assert (out_dir / "audit.tsv").read_text().splitlines() == [
        "provider\tqid\tepoch\tsemantic_match", "p\tq1\t1\ttrue", "p\tq1\t2\tfalse", "p\tq1\t3\ttrue",
        "p\tq2\t1\ttrue", "r\tq1\t1\tfalse"]
    fresh = tmp_path / "fresh.duckdb"
    code, _, err = run_cli("import", "--db", str(fresh), str(out_dir / "traces.jsonl"), "--audit",
                           str(out_dir / "audit.tsv"))
    assert code == 0, err
    assert providers(fresh) == got


BAD: list[tuple[str, str, int, str, str]] = [
    ("no epoch for a cell of three", "p\tq1\t\t\ttrue\n", 2, "epoch", "have 3 epochs in run 'import'"),
    ("an epoch the cell does not have", "p\tq1\t4\t\ttrue\n", 2, "epoch", "no epoch 4 (epochs 1, 2, 3)"),
    ("not a number", "p\tq2\tone\t\ttrue\n", 2, "epoch", "is not an epoch"),
    ("epoch 0", "p\tq2\t0\t\ttrue\n", 2, "epoch", "is not an epoch"),
    ("unknown trajectory", "\t\t\tt9\ttrue\n", 2, "trajectory_id", "no trajectory 't9'"),
    ("trajectory of another epoch", "p\tq1\t3\tt2\ttrue\n", 2, "epoch", "trajectory 't2' is epoch 2"),
    ("trajectory of another provider", "r\t\t\tt2\ttrue\n", 2, "provider", "'r' but trajectory 't2' has 'p'"),
    ("the same epoch twice", "p\tq1\t2\t\ttrue\np\tq1\t2\t\ttrue\n", 3, "qid", "(line 3)"),
    ("a trajectory and its epoch", "p\tq1\t2\t\ttrue\n\t\t\tt2\ttrue\n", 3, "trajectory_id", "line 3 already"),
    ("one-epoch cell with and without epoch", "p\tq2\t\t\ttrue\np\tq2\t1\t\ttrue\n", 3, "qid", "(line 3)"),
    ("unrecorded cell with and without epoch", "p\tq0\t1\t\ttrue\n", 2, "qid", "(line 2)"),
]


@pytest.mark.parametrize(("name", "rows", "line", "field", "needle"), BAD, ids=[b[0] for b in BAD])
def test_ambiguous_or_wrong_rows_write_nothing(
    store: Path, tmp_path: Path, name: str, rows: str, line: int, field: str, needle: str
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text(HEADER + "p\tq2\t\t\ttrue\n".replace("q2", "q0") + rows, encoding="utf-8")  # a good first row
    code, _, err = run_cli("import", "--db", str(store), "--audit", str(bad))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and f"{bad}: line {line + 1}: field {field}: " in err and needle in err
    assert audits(store) == []


def test_an_older_stores_cell_rows_are_not_applied_and_counted(store: Path) -> None:
    """A row written before docs/concepts/statistics.md (provider, qid only) against three epochs: left out, and the report says so."""
    with EventLog(store) as log:
        log.append([NewEvent(stream_id="audit:imported", run_id="import", payload=AuditAnswer(
            trajectory_id=None, provider=p, qid=q, semantic_match=True, source="imported")) for p, q in
            (("p", "q1"), ("p", "q2"))])
        built = build_report(log.cursor(), judge_run_id=None)
        # the explorer's trajectory page decides as the report does (its narrowed relations keep the cell's epochs)
        shown = {tid: web_trajectory(log.cursor(), tid, None).answer.semantic_match for tid in ("t1", "u1")}
    assert shown == {"t1": None, "u1": True}
    p = built.report.providers["p"]
    assert (p.audited, p.correct) == (1, 1)  # u1 only: q1's row does not say which epoch it judged
    assert ("1 audit row naming only provider and qid of a cell recorded in several epochs is not applied; "
            "import them again with an epoch or trajectory_id column") in built.notes


def test_rows_imported_before_the_traces_keep_their_epochs(tmp_path: Path) -> None:
    """Audit rows for cells not recorded yet keep the epoch they name, so each applies once the epochs arrive."""
    db = tmp_path / "a.duckdb"
    tsv = tmp_path / "a.tsv"
    tsv.write_text(HEADER + "p\tq1\t1\t\ttrue\np\tq1\t2\t\tfalse\np\tq1\t3\t\ttrue\n", encoding="utf-8")
    assert run_cli("import", "--db", str(db), "--audit", str(tsv))[0] == 0
    assert [a[3] for a in audits(db)] == ["1", "2", "3"]
    assert run_cli("import", "--db", str(db), str(write_jsonl(tmp_path / "t.jsonl", TRACES[:3])))[0] == 0
    assert (providers(db)["p"]["audited"], providers(db)["p"]["correct"]) == (3, 2)
