"""Trajectory ids cannot collide whatever the qid (docs/reliability.md, hostile input): a qid that ends like an epoch or
attempt suffix is escaped, an ordinary qid keeps the id it always had."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from searchtrace.adapters.sandbox import write_questions_jsonl
from searchtrace.engine import trajectory_id
from tests.builders import run_cli

CONFIG = """run_id = "ids"
[agent]
model = "sandbox-agent"
rps = 10000
concurrency = 16
timeout_s = 5
[providers.brave]
rps = 10000
[fetch]
rps = 10000
cache_dir = ""
[dataset]
path = "{questions}"
[run]
epochs = 2
"""


def test_ordinary_qids_keep_their_ids_and_odd_ones_cannot_collide() -> None:
    assert trajectory_id("r", "brave", "q1") == "r:brave:q1"
    assert trajectory_id("r", "brave", "q1", attempt=3, epoch=2) == "r:brave:q1~2#3"
    qids = ["q1", "q1~2", "q1#2", "q1~2#2", "q1%7E2", "q1%257E2", "q1%", "%", "~", "#", "q1~"]
    ids = {trajectory_id("r", "p", q, attempt=a, epoch=e) for q in qids for a in (1, 2) for e in (1, 2)}
    assert len(ids) == len(qids) * 4


def test_qids_q1_and_q1_tilde_2_with_two_epochs_record_four_trajectories(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in write_questions_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[:2]]
    rows[0]["qid"], rows[1]["qid"] = "q1", "q1~2"
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG.format(questions=questions))
    db = tmp_path / "ids.duckdb"
    got = run_cli("record", "--config", str(cfg), "--sandbox", "--db", str(db), "--no-progress")
    assert got.code == 0, got.err
    con = duckdb.connect(str(db), read_only=True)
    try:
        started = con.execute(
            "SELECT payload->>'qid', coalesce(CAST(payload->>'epoch' AS INTEGER), 1), payload->>'trajectory_id' "
            "FROM events WHERE type = 'trajectory.started' ORDER BY 1, 2").fetchall()
        finished = con.execute("SELECT count(DISTINCT stream_id) FROM events WHERE type = 'trajectory.finished'").fetchone()
    finally:
        con.close()
    assert started == [("q1", 1, "ids:brave:q1"), ("q1", 2, "ids:brave:q1~2"),
                       ("q1~2", 1, "ids:brave:q1%7E2"), ("q1~2", 2, "ids:brave:q1%7E2~2")]
    assert finished == (4,)
    report = run_cli("report", "--db", str(db), "--json")
    assert report.code == 0, report.err
    assert json.loads(report.out)["providers"]["brave"]["trajectories"] == 4
