"""A real `searchtrace record` serves reads that stay inside the store; `report --run-id` works during it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from searchtrace.adapters.sandbox import create_app, running
from searchtrace.store._readserver import socket_path
from tests.builders import run_cli
from tests.engine.test_live_reads import SEARCHTRACE, Gate, st
from tests.engine.test_resume_kill import CONFIG


def test_reads_during_a_run_are_store_only_and_report_by_run_works(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    # 2 questions x 3 providers, two at a time; the run advances a model turn at a time through the sandbox's gate
    # until a trajectory has finished, then waits there while the reads below run (a model call may wait that
    # long), so it is under way for all of them on any machine, and then ends at the usual pace
    cfg.write_text(CONFIG.replace("max_trajectories = 6", "max_trajectories = 2").replace("n = 12", "n = 2")
                   .replace("timeout_s = 10", "timeout_s = 600"))
    db = tmp_path / "live.duckdb"
    gate = Gate(create_app())
    with running(app=gate) as root:
        cmd = [SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--no-progress", "--db", str(db)]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            try:
                deadline = time.monotonic() + 120  # a guard against a hang: the loop ends when a trajectory is finished
                run_id = None
                read_at = 0.0
                while proc.poll() is None and time.monotonic() < deadline and run_id is None:
                    if gate.stalled():  # the run waits at the gate: one more turn
                        gate.let(1)
                    if socket_path(db).exists() and time.monotonic() > read_at:  # polled from this process, every
                        read_at = time.monotonic() + 0.2  # 0.2 s (a `searchtrace` each time costs CPU)
                        code, out, err = run_cli("sql", "--db", str(db), "--json",
                                                 "SELECT DISTINCT run_id FROM events WHERE type = 'trajectory.finished'")
                        assert code == 0, err
                        rows = json.loads(out)
                        run_id = rows[0]["run_id"] if rows else None
                    time.sleep(0.01)
                assert run_id is not None and proc.poll() is None
                rep = st("report", "--db", str(db), "--json", "--run-id", run_id)
                assert rep.returncode == 0, rep.stderr  # was "statement 1 is SET…"
                assert json.loads(rep.stdout)["schema"] == "searchtrace.report/1"
                for bad in ("SELECT content FROM read_text('/proc/self/environ')", "SELECT * FROM checkpoint()",
                            "ATTACH ':memory:' AS m", "CREATE OR REPLACE VIEW searchtrace_derived.ev.trajectories AS "
                            "SELECT * FROM searchtrace_derived.ev.trajectories WHERE false"):
                    code, _, err = run_cli("sql", "--db", str(db), bad)  # in this process: the run serves the read
                    assert code == 2 and err.count("\n") == 1, (bad, err)
                    assert proc.poll() is None
                rep2 = st("report", "--db", str(db), "--json")
                assert rep2.returncode == 0 and json.loads(rep2.stdout)["providers"], rep2.stderr
                assert proc.poll() is None  # every read above met the run under way
                gate.open()
                _, err = proc.communicate(timeout=120)
            except BaseException:
                gate.open()
                proc.kill()
                raise
        assert proc.returncode == 0, err


def test_a_run_refuses_a_foreign_file_at_its_socket_path_in_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG.replace("max_trajectories = 6", "max_trajectories = 1"))
    db = tmp_path / "taken.duckdb"
    socket_path(db).write_text("not a socket")
    with running(app=create_app()) as root:
        done = subprocess.run([SEARCHTRACE, "record", "--config", str(cfg), "--sandbox-url", root, "--no-progress",
                               "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(socket_path(db)) in lines[0] and "regular file" in lines[0], done.stderr
    assert socket_path(db).read_text() == "not a socket"
