"""A `searchtrace record` killed with SIGKILL half-way, then resumed against the same real sandbox server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from searchtrace.adapters.sandbox import FaultPlan, create_app, running
from searchtrace.store import EventLog, RunStarted, TrajectoryFinished
from tests.builders import INTERRUPTIBLE, check_chain, signal_state, trajectories

SEARCHTRACE = str(Path(sys.executable).parent / "searchtrace")
ROUTES = ("chat", "brave", "tavily", "firecrawl", "jina")

CONFIG = """
run_id = "kill"
[agent]
model = "sandbox-agent"
rps = 10000
concurrency = 16
timeout_s = 10
[providers.brave]
rps = 10000
[providers.tavily]
rps = 10000
[providers.firecrawl]
rps = 10000
[fetch]
rps = 10000
cache_dir = ""
[limits]
max_trajectories = 6
[dataset]
path = "sandbox"
[sample]
n = 12
seed = "kill"
"""


def finished_ids(db: Path) -> set[str]:
    with EventLog(db, read_only=True) as log:
        return {tid for tid, ps in trajectories(log).items() if isinstance(ps[-1], TrajectoryFinished)}


def test_sigkill_half_way_then_resume_records_only_the_rest(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG)
    db = tmp_path / "k.duckdb"
    # every chat request takes 250 ms, so the run lasts several seconds and can be killed in the middle
    app = create_app(faults=FaultPlan(seed=0, rates={"slow": 1.0}, routes=frozenset({"chat"})))
    totals: Counter[str] = app.state.totals
    counters: Counter[Any] = app.state.counters
    with running(app=app) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--db", str(db), "--no-progress"]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while totals["chat"] < 45 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        killed_at = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        assert proc.returncode == -signal.SIGKILL, err
        first = finished_ids(db)
        assert 0 < len(first) < 36
        snapshot = Counter(counters)
        app.state.sandbox.faults = None  # the resumed run need not be slow
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        print(f"killed after {killed_at - started:.1f} s with {len(first)} finished; resume took {time.monotonic() - killed_at:.1f} s")
        assert f"{len(first)} already recorded" in again.stdout
    with EventLog(db, read_only=True) as log:
        trajs = trajectories(log)
        run_head = [ev.payload for ev in log.read(stream_id="run:kill")]
    # exactly one finished trajectory per (question, provider), every stream whole
    cells = Counter((tid.split(":")[2], tid.split(":")[1]) for tid in trajs)
    assert len(cells) == 36 and set(cells.values()) == {1}
    for payloads in trajs.values():
        assert isinstance(payloads[-1], TrajectoryFinished)
        assert sum(isinstance(p, TrajectoryFinished) for p in payloads) == 1
    assert sum(isinstance(p, RunStarted) for p in run_head) == 1
    assert type(run_head[-1]).__name__ == "RunFinished"
    check_chain(db)
    verified = subprocess.run([SEARCHTRACE, "verify", "--db", str(db)], capture_output=True, text=True)
    assert verified.returncode == 0 and "hash chain intact" in verified.stdout, verified.stderr
    # a trajectory finished before the kill was never called again
    for tid in first:
        for route in ROUTES:
            assert counters[(route, tid)] == snapshot[(route, tid)], (tid, route)
    # and each of the others got its calls (the ones cut off by the kill were started over)
    assert all(counters[("chat", tid)] > 0 for tid in trajs)


def test_ctrl_c_keeps_what_finished_and_says_how_to_resume(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG.replace('"kill"', '"intr"').replace("n = 12", "n = 6"))
    db = tmp_path / "i.duckdb"
    app = create_app(faults=FaultPlan(seed=0, rates={"slow": 1.0}, routes=frozenset({"chat"})))
    with running(app=app) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--db", str(db), "--no-progress"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **INTERRUPTIBLE)
        deadline = time.monotonic() + 60
        while app.state.totals["chat"] < 20 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        state = f"chats {app.state.totals['chat']}, exited {proc.poll()}, {signal_state(proc.pid)}"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and "run the same command again" in err, (state, err)
        first = finished_ids(db)
        assert 0 < len(first) < 18
        app.state.sandbox.faults = None
        again = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f'"already":{len(first)}' in again.stdout and f'"recorded":{18 - len(first)}' in again.stdout
    assert len(finished_ids(db)) == 18
    check_chain(db)
