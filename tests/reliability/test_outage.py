"""A provider outage must not cost a cell for good: the next `record` records again the cells that ended in `error`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb

from searchtrace.adapters.sandbox import FaultPlan, create_app, running, write_questions_jsonl
from searchtrace.benchmarks._chaos import SEARCHTRACE

CONFIG = """run_id = "outage"
[agent]
model = "sandbox-agent"
rps = 10000
timeout_s = 2
max_retries = 1
max_wait_s = 0.05
[providers.brave]
rps = 10000
[fetch]
rps = 10000
cache_dir = ""
[dataset]
path = "{questions}"
[sample]
n = 3
seed = "o"
"""


def reasons(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT payload->>'reason', count(*) FROM events WHERE type = 'trajectory.finished' "
                           "GROUP BY 1").fetchall()
    finally:
        con.close()
    return {str(r): int(n) for r, n in rows}


def test_cells_lost_to_an_outage_are_recorded_when_the_endpoint_is_back(tmp_path: Path) -> None:
    questions = write_questions_jsonl(tmp_path / "q.jsonl")
    (tmp_path / "run.toml").write_text(CONFIG.format(questions=questions))
    db = tmp_path / "o.duckdb"
    app = create_app(faults=FaultPlan(seed=0, rates={"503": 1.0}, routes=frozenset({"chat"})))
    with running(app=app) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(tmp_path / "run.toml"), "--sandbox-url", root, "--db", str(db),
               "--no-progress"]
        first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert reasons(db) == {"error": 3}, (first.stdout, first.stderr)
        app.state.sandbox.faults = None  # the outage is over
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        before = sum(app.state.totals.values())
        third = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert sum(app.state.totals.values()) == before, third.stdout  # every cell is final now: no call at all
    assert again.returncode == 0, again.stderr
    assert sum(n for r, n in reasons(db).items() if r != "error") == 3, again.stdout
    assert reasons(db)["error"] == 3  # the errored attempts stay in the store, superseded, never updated or deleted
    assert "3 cells that had ended in error recorded again" in again.stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs_finished = con.execute("SELECT count(*) FROM events WHERE type = 'run.finished'").fetchone()
        retried = con.execute("SELECT payload->>'trajectory_id', payload->>'supersedes', payload->>'attempt' "
                              "FROM events WHERE type = 'trajectory.started' AND payload->>'attempt' = '2'").fetchall()
    finally:
        con.close()
    assert runs_finished == (1,)
    assert sorted(t.rsplit("#", 1) for t, _, _ in retried) == sorted([s, "2"] for _, s, _ in retried)
    report = subprocess.run([SEARCHTRACE, "report", "--json", "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert {p: v["trajectories"] for p, v in json.loads(report.stdout)["providers"].items()} == {"brave": 3}
