"""A `searchtrace record` against a real sandbox server, held at a gate, is read by other processes while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx

from searchtrace.adapters.sandbox import create_app, running
from searchtrace.store import EventLog
from searchtrace.store._readserver import socket_path
from searchtrace.web import create_app as create_view
from tests.builders import Gate, run_cli
from tests.engine.test_resume_kill import CONFIG

SEARCHTRACE = str(Path(sys.executable).parent / "searchtrace")


def st(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SEARCHTRACE, *args], capture_output=True, text=True, timeout=timeout)


def shape(db: Path) -> Counter[tuple[str, int, str]]:
    """Which events a run wrote (stream, sequence, type); latencies and clocks differ between runs."""
    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        rows = cur.execute("SELECT stream_id, stream_seq, type FROM events").fetchall()
        cur.close()
    return Counter((str(a), int(b), str(c)) for a, b, c in rows)


def listed(app: Any) -> int:
    """`total` of the explorer's /api/trajectories (in this process: it reads through the run's socket)."""

    async def get() -> int:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765",
                                     cookies={"searchtrace-view-8765": app.state.token}) as c:
            r = await c.get("/api/trajectories?limit=5")
            assert r.status_code == 200, r.text
            return int(r.json()["total"])

    return anyio.run(get)


def read_while_running(proc: subprocess.Popen[str], db: Path, gate: Gate) -> tuple[list[int], int, list[int]]:
    """`sql` and `report --json` (run here, in another process than the recording one: a `searchtrace` process per
    read costs a start-up each) and the explorer's list, while the run records; every one must succeed. The run
    waits at the sandbox's gate between reads: one more trajectory is let in each time the last one's events show,
    until the reads have seen the run grow, and then all are."""
    counts: list[int] = []
    totals: list[int] = []
    view = create_view(db)
    reports = 0
    admitted_at = -1
    deadline = time.monotonic() + 120  # a guard against a hang: the loop ends when the reads have seen the run grow
    while proc.poll() is None and time.monotonic() < deadline:
        if not socket_path(db).exists():
            time.sleep(0.05)
            continue
        code, out, err = run_cli("sql", "--db", str(db), "--json", "SELECT count(*) AS n FROM events")
        assert code == 0, err
        counts.append(json.loads(out)[0]["n"])
        if reports == 0 and len(counts) >= 2:  # every read takes its turn at the run's share of the clock: few of them
            code, out, err = run_cli("report", "--db", str(db), "--json")
            assert code == 0, err
            data = json.loads(out)
            assert data["schema"] == "searchtrace.report/1" and data["providers"]
            reports += 1
        totals.append(listed(view))
        if reports and counts[-1] > counts[0] and totals[-1] > totals[0]:
            break
        if counts[-1] > admitted_at:  # the run moved since the last admission: one more trajectory in
            gate.admit()
            admitted_at = counts[-1]
        time.sleep(0.05)
    view.state.source.close()
    return counts, reports, totals


def test_sql_and_report_read_a_recording_store_and_the_run_writes_what_it_would_alone(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    # 4 questions x 3 providers, two at a time, held at the sandbox's gate while the reads run (a model call may wait
    # that long)
    cfg.write_text(CONFIG.replace("max_trajectories = 6", "max_trajectories = 2").replace("n = 12", "n = 4")
                   .replace("timeout_s = 10", "timeout_s = 600"))
    db, alone = tmp_path / "live.duckdb", tmp_path / "alone.duckdb"
    gate = Gate(create_app(), traces=1)
    with running(app=gate) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--no-progress"]
        with subprocess.Popen([*cmd, "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                counts, reports, totals = read_while_running(proc, db, gate)
                assert proc.poll() is None  # every read met the run under way
                gate.open()
            finally:
                if proc.poll() is None and gate.traces is not None:
                    proc.kill()
                out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert len(counts) >= 2 and reports == 1, (counts, reports)
        assert counts == sorted(counts) and counts[-1] > counts[0]  # every read saw more committed events
        assert totals == sorted(totals) and totals[-1] > totals[0], totals  # the explorer lists new trajectories
        assert not socket_path(db).exists()
        ref = subprocess.run([*cmd, "--db", str(alone)], capture_output=True, text=True, timeout=120)
        assert ref.returncode == 0, ref.stderr
    assert st("verify", "--db", str(db)).returncode == 0
    assert shape(db) == shape(alone)  # the readers changed nothing the run wrote
    with EventLog(alone, read_only=True) as log:  # a store only `record` wrote has the documented views
        cur = log.cursor()
        views = {r[0] for r in cur.execute("SELECT view_name FROM duckdb_views() WHERE NOT temporary").fetchall()}
        cur.close()
    assert {"v_trajectories", "v_search_results", "v_verdicts", "v_judge_items"} <= views
