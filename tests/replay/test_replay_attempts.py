"""Superseded attempts (a cell that errored, then was recorded again): export writes the latest attempt only (and
re-imports to the same report), the grader skips them, replay re-executes every attempt under its own id."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import msgspec
import pytest

from searchtrace.replay import grade_answers, load_recorded, replay_trajectories
from searchtrace.store import EventLog
from tests.analytics.analytics_fixture import report_json
from tests.analytics.attempts_fixture import JUDGE, NEW, O1, P2, build
from tests.builders import run_cli


def test_export_writes_the_latest_attempt_and_reimports_to_the_same_report(
    tmp_path: Path
) -> None:
    first = tmp_path / "a.duckdb"
    build(first)
    out = tmp_path / "out"
    code, _, err = run_cli("export", "--db", str(first), "--out", str(out))
    assert code == 0, err
    traces = [json.loads(x) for x in (out / "traces.jsonl").read_text().splitlines()]
    assert [t["trajectory_id"] for t in traces] == [O1, P2, NEW]  # one per (provider, qid): the latest attempt
    judged = [json.loads(x)["trajectory_id"] for x in (out / "judgments.jsonl").read_text().splitlines()]
    assert judged == [NEW, P2, O1]  # the superseded attempt's verdict is not exported
    assert (out / "audit.tsv").read_text().splitlines()[1:] == ["o\tq1\t1\tfalse", "p\tq1\t1\ttrue", "p\tq2\t1\ttrue"]
    con = duckdb.connect()
    parquet = con.execute(f"SELECT count(*) FROM '{out / 'events.parquet'}' WHERE type = 'trajectory.started'").fetchone()
    con.close()
    assert parquet == (4,)  # every attempt stays in the event export

    second = tmp_path / "b.duckdb"
    code, _, err = run_cli("import", "--db", str(second), str(out / "traces.jsonl"),
                           "--judgments", str(out / "judgments.jsonl"), "--audit", str(out / "audit.tsv"))
    assert code == 0, err
    _, a = report_json(first, "--judge-run-id", JUDGE)
    _, b = report_json(second, "--judge-run-id", JUDGE)
    assert a["providers"] == b["providers"] and a["complementarity"] == b["complementarity"]
    assert b["providers"]["p"]["trajectories"] == 2


def test_grader_skips_superseded_attempts(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    build(db)
    with EventLog(db) as log:
        grades = grade_answers(log)
    assert sorted((g.trajectory_id, g.semantic_match) for g in grades) == [(O1, False), (NEW, True), (P2, True)]


CONFIG = """
run_id = "rr"
[agent]
model = "sandbox-agent"
max_retries = 2
max_wait_s = 0.05
[providers.brave]
[dataset]
path = "{questions}"
[limits]
max_attempts = 2
"""


@pytest.mark.anyio
async def test_replay_re_executes_every_attempt(tmp_path: Path) -> None:
    from searchtrace import pipeline
    from searchtrace.adapters.sandbox import default_world, in_process, question_rows
    from searchtrace.engine import load_config, point_at_sandbox

    rows = question_rows(default_world().questions)[:2]
    rows[0]["question"] += " !fault:500x3"  # attempt 1 of this cell errors (1 call + 2 retries), attempt 2 succeeds
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    (tmp_path / "run.toml").write_text(CONFIG.format(questions=qfile))
    cfg = load_config(tmp_path / "run.toml")
    cfg.fetch.cache_dir = ""
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "r.duckdb"
    first = await pipeline.record(cfg, db, box.transport, progress=False)
    second = await pipeline.record(cfg, db, box.transport, progress=False)
    assert (first.to_retry, second.retried, second.finished) == (1, 1, True)
    with EventLog(db, read_only=True) as log:
        recs = load_recorded(log)
        report = await replay_trajectories(log, recs)
    tid = f"rr:brave:{rows[0]['qid']}"
    assert {(r.trajectory_id, r.attempt, r.supersedes) for r in recs if r.qid == rows[0]["qid"]} == {
        (tid, 1, None), (tid + "#2", 2, tid)}
    assert report.trajectories == 3 and report.diverged == 0, [o.divergence for o in report.outcomes]
