"""Other processes: a held lock gives one line and exit 2 (never a hang); SIGKILL mid-append loses no ack."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from searchtrace.store import EventLog, NotAStore, StoreLocked, open_read_only, verify
from tests.builders import run_cli
from tests.store.store_support import ev

ROOT = Path(__file__).resolve().parents[2]
SEARCHTRACE = Path(sys.executable).with_name("searchtrace")

HOLDER = """
import sys
from searchtrace.store import EventLog
from searchtrace.store import open_read_only
if sys.argv[2] == "write":
    log = EventLog(sys.argv[1])
else:
    con = open_read_only(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
"""

CRASHER = """
import sys
import searchtrace.store._append
from searchtrace.store import EventLog, NewEvent
from searchtrace.store import AnswerFinal
searchtrace.store._append.CHUNK_ROWS = 1_000  # several chunks per transaction: the kill lands between chunks too
log = EventLog(sys.argv[1])
b = 0
while True:
    batch = [
        NewEvent(stream_id=f"s{(b * 7 + i) % 50}", run_id="crash", payload=AnswerFinal(iteration=b, text=f"{b}:{i}"))
        for i in range(5_000)
    ]
    positions = log.append(batch)
    print(b, positions[0], positions[-1], flush=True)
    b += 1
"""


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("mode", ["write", "read"])
def test_a_held_database_gives_one_line_and_exit_2(
    tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "held.duckdb"
    with EventLog(path) as log:
        log.append([ev("a", 0)])
    with spawn(HOLDER, str(path), mode) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLocked, match=f"PID {holder.pid}"):
            EventLog(path)  # one read-only reader locks out a writer too
        if mode == "write":
            for argv in (["verify", "--db", str(path)], ["sql", "SELECT count(*) FROM events", "--db", str(path)]):
                code, out, err = run_cli(*argv)
                assert code == 2 and out == "" and err.count("\n") == 1
                # a plain Python holder is named as what it is, never as "another searchtrace process"
                assert str(path) in err and f"held by another process ({Path(sys.executable).name}, PID {holder.pid})" in err
            done = subprocess.run(
                [str(SEARCHTRACE), "verify", "--db", str(path)], capture_output=True, text=True, timeout=60
            )
            assert done.returncode == 2 and done.stdout == ""
            assert done.stderr.count("\n") == 1 and str(path) in done.stderr
            assert "another process" in done.stderr and "searchtrace process" not in done.stderr
        else:  # readers may share the file
            con = open_read_only(path)
            assert verify(con).ok
            con.close()
            # `report` beside an explorer on a finished run: it reads the raw views instead of waiting for a writer's lock
            code, out, err = run_cli("report", "--db", str(path), "--json")
            assert code == 0, err
            assert json.loads(out)["schema"] == "searchtrace.report/1"
        holder.communicate(timeout=30)  # nothing above waits for the holder: none of it retries a lock
    with EventLog(path) as log:  # released with its holder, nothing damaged
        assert log.head == 1


def test_files_that_are_not_stores(tmp_path: Path) -> None:
    noise = tmp_path / "noise.duckdb"
    noise.write_bytes(os.urandom(20_000))
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE events(x INTEGER)")
    con.close()
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    for path, why in ((noise, "not a valid DuckDB database"), (other, "not a searchtrace store"), (empty, "empty")):
        before = path.read_bytes()
        for argv in (["verify", "--db", str(path)], ["sql", "SELECT 1", "--db", str(path)]):
            code, out, err = run_cli(*argv)
            assert code == 2 and out == "" and err.count("\n") == 1, err
            assert str(path) in err and why in err
        assert path.read_bytes() == before
    with pytest.raises(NotAStore):
        EventLog(noise)
    with pytest.raises(NotAStore, match="other tables"):
        EventLog(other)


def test_sigkill_mid_append_keeps_exactly_the_acknowledged_events(tmp_path: Path) -> None:
    path = tmp_path / "crash.duckdb"
    acked: list[int] = []
    with spawn(CRASHER, str(path)) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            while len(acked) < 12:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                acked.append(int(line.split()[0]))
            time.sleep(0.013 * (os.getpid() % 7))  # land somewhere inside the next append
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            # lines printed before the kill are acknowledgements too
            acked += [int(ln.split()[0]) for ln in proc.stdout.read().splitlines() if ln.strip()]
        finally:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    con = open_read_only(path)  # the WAL is replayed in memory; the file is not written
    try:
        report = verify(con)
        stored = dict(
            con.execute("SELECT CAST(payload->>'$.iteration' AS INTEGER), count(*) FROM events GROUP BY 1").fetchall()
        )
    finally:
        con.close()
    assert report.ok, report.line()
    assert acked == list(range(len(acked)))
    assert all(stored.get(b) == 5_000 for b in acked)  # every acknowledged event is there
    extra = sorted(set(stored) - set(acked))
    # at most the one batch that committed before its ack could be printed, and never a part of a batch
    assert extra in ([], [len(acked)]) and all(stored[b] == 5_000 for b in extra)
    assert report.events == 5_000 * len(stored)
    with EventLog(path) as log:  # a writer carries on after the crash
        assert log.append([ev("after", 0)]) == [report.events + 1]
        assert verify(log.cursor()).ok
