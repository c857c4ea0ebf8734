"""A `searchtrace record` against a slowed real sandbox server is read by other processes while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
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
from tests.builders import run_cli
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


class Gate:
    """Chat turns pass only as the test lets them: the run advances between reads by turns, not by seconds, so a
    loaded machine changes how long the test takes, never what it sees."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.permits = threading.Semaphore(0)
        self.opened = threading.Event()
        self.lock = threading.Lock()
        self.let_through = 0  # permits given
        self.arrived = 0  # chat requests that reached the gate

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions") and not self.opened.is_set():
            with self.lock:
                self.arrived += 1
            await anyio.to_thread.run_sync(self.permits.acquire)
        await self.app(scope, receive, send)

    def let(self, turns: int) -> None:
        with self.lock:
            self.let_through += turns
        self.permits.release(turns)

    def stalled(self) -> bool:
        """Every permit given has been used and a turn waits at the gate: the run cannot go on by itself."""
        with self.lock:
            return self.arrived > self.let_through

    def open(self) -> None:
        self.opened.set()
        self.permits.release(10_000)  # every turn still waiting


def count(db: Path) -> int:
    """`sql` (in this process: a `searchtrace` process per read left too few reads on a loaded machine) through
    the run's socket; every read must succeed."""
    code, out, err = run_cli("sql", "--db", str(db), "--json", "SELECT count(*) AS n FROM events")
    assert code == 0, err
    return int(json.loads(out)[0]["n"])


def read_while_running(proc: subprocess.Popen[str], db: Path, gate: Gate) -> tuple[list[int], int, list[int]]:
    """Three rounds of `sql`, `report --json` and the explorer's list while the run records, the run let on by one
    chat turn at a time between rounds until the explorer lists a new trajectory."""
    counts: list[int] = []
    totals: list[int] = []
    reports = 0
    view = create_view(db)
    gate.let(2)
    while not socket_path(db).exists():
        assert proc.poll() is None, "the run ended before it served reads"
        time.sleep(0.05)
    for round_ in range(3):
        counts.append(count(db))
        code, out, err = run_cli("report", "--db", str(db), "--json")
        assert code == 0, err
        data = json.loads(out)
        # from the second round on, a trajectory has ended (two run at a time, and a third was listed)
        assert data["schema"] == "searchtrace.report/1" and (round_ == 0 or data["providers"]), data
        reports += 1
        totals.append(listed(view))
        before = counts[-1]
        # a turn at a time, each once the run waits at the gate (read then, not polled meanwhile: a read costs
        # CPU a loaded machine lacks), until more events are committed and the explorer lists a new trajectory
        while True:
            while not gate.stalled():
                assert proc.poll() is None, "the run ended while reads were due"
                time.sleep(0.02)
            if count(db) > before and listed(view) > totals[-1]:
                break
            gate.let(1)
    counts.append(count(db))
    totals.append(listed(view))
    view.state.source.close()
    return counts, reports, totals


def test_sql_and_report_read_a_recording_store_and_the_run_writes_what_it_would_alone(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    # 5 questions x 3 providers, two at a time; the agent's timeout is long, for a turn waits at the gate
    cfg.write_text(CONFIG.replace("max_trajectories = 6", "max_trajectories = 2").replace("n = 12", "n = 5")
                   .replace("timeout_s = 10", "timeout_s = 600"))
    db, alone = tmp_path / "live.duckdb", tmp_path / "alone.duckdb"
    app = create_app()
    gate = Gate(app)
    with running(app=gate) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--no-progress"]
        with subprocess.Popen([*cmd, "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                counts, reports, totals = read_while_running(proc, db, gate)
            finally:
                gate.open()
                out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert reports == 3
        assert counts == sorted(counts) and len(set(counts)) == len(counts), counts  # every read saw more events
        assert totals == sorted(totals) and len(set(totals)) == len(totals), totals  # the explorer lists new ones
        assert not socket_path(db).exists()
        ref = subprocess.run([*cmd, "--db", str(alone)], capture_output=True, text=True, timeout=600)
        assert ref.returncode == 0, ref.stderr
    assert st("verify", "--db", str(db)).returncode == 0
    assert shape(db) == shape(alone)  # the readers changed nothing the run wrote
    with EventLog(alone, read_only=True) as log:  # a store only `record` wrote has the documented views
        cur = log.cursor()
        views = {r[0] for r in cur.execute("SELECT view_name FROM duckdb_views() WHERE NOT temporary").fetchall()}
        cur.close()
    assert {"v_trajectories", "v_search_results", "v_verdicts", "v_judge_items"} <= views
