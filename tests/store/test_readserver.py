"""Reads while a run records: the writing process serves read-only sessions on `<db>.sock` to other processes."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from searchtrace.pipeline import serving_reads
from searchtrace.store import (
    EventLog,
    ReadOnlyViolation,
    ReadsEnded,
    ReadServer,
    StoreLocked,
    open_remote,
    read_again,
)
from searchtrace.store._readserver import RemoteCursor, socket_path
from tests.store.store_support import ev

SEARCHTRACE = Path(sys.executable).with_name("searchtrace")


def count(cur: RemoteCursor) -> int:
    row = cur.execute("SELECT count(*) FROM events").fetchone()
    assert row is not None
    return int(row[0])


def test_a_session_sees_each_commit_and_can_only_read(tmp_path: Path) -> None:
    path = tmp_path / "live.duckdb"
    with EventLog(path) as log, ReadServer(path, log.cursor) as server:
        sock = socket_path(path)
        assert server.path == sock and stat.S_ISSOCK(os.lstat(sock).st_mode)
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        with RemoteCursor(path) as cur:
            assert count(cur) == 0
            log.append([ev("s0", i) for i in range(3)], blobs=[b"page body"])
            assert count(cur) == 3
            log.append([ev("s1", 0)])
            assert count(cur) == 4
            rows = cur.execute("SELECT stream_id, stream_seq FROM events WHERE position > ? ORDER BY position", [2]).fetchall()
            assert rows == [("s0", 2), ("s1", 0)]
            assert cur.description is not None and [d[0] for d in cur.description] == ["stream_id", "stream_seq"]
            for bad in ("DELETE FROM events", "CREATE TABLE x AS SELECT 1", "CREATE VIEW v AS SELECT 1",
                        "SELECT 1; DROP TABLE blobs", "ATTACH 'other.duckdb'", "CREATE VIEW live.main.v AS SELECT 1",
                        "CREATE SCHEMA live.s", "SET threads = 1", "CREATE TABLE mem.s.t AS SELECT 1"):
                with pytest.raises(ReadOnlyViolation):
                    cur.execute(bad)
            with pytest.raises(duckdb.Error, match="no_such_table"):
                cur.execute("SELECT * FROM no_such_table")
            cur.execute("CREATE TEMP VIEW mine AS SELECT position FROM events")  # the report's raw views need this
            assert cur.execute("SELECT count(*) FROM mine").fetchone() == (4,)
            # an in-memory catalog is the instance's, seen by every session: neither made nor changed from one
            for shared in ("ATTACH IF NOT EXISTS ':memory:' AS mem (READ_ONLY false)", "ATTACH ':memory:' AS mem",
                           "CREATE SCHEMA IF NOT EXISTS mem.s", "CREATE OR REPLACE VIEW temp_not.main.v AS SELECT 1"):
                with pytest.raises(ReadOnlyViolation, match="changes no catalog another session sees"):
                    cur.execute(shared)
            cur.execute("SET search_path = 'temp.main,main'")  # the session's own
            assert cur.execute("SELECT count(*) FROM mine").fetchone() == (4,)
            other = cur.cursor()  # another session: its own temp catalogue, as a DuckDB cursor
            with pytest.raises(duckdb.Error):
                other.execute("SELECT * FROM mine")
            other.close()
            assert count(cur) == 4  # the refused statements changed nothing
    assert not sock.exists()  # removed on close
    with pytest.raises(StoreLocked, match="held by another process"):
        open_remote(path)  # nobody serves: the usual lock message


def test_a_stale_socket_is_replaced_and_a_long_path_works(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / "store.duckdb"
    assert len(str(socket_path(path))) > 108  # beyond sockaddr_un: served through the folder's descriptor
    with EventLog(path) as log:
        log.append([ev("s", 0)])
        stale = socket.socket(socket.AF_UNIX)
        fd = os.open(deep, os.O_RDONLY)
        stale.bind(f"/proc/self/fd/{fd}/{socket_path(path).name}")  # as a killed writer leaves it
        stale.close()
        os.close(fd)
        assert socket_path(path).exists()
        with ReadServer(path, log.cursor), RemoteCursor(path) as cur:
            assert count(cur) == 1
    assert not socket_path(path).exists()


def test_the_socket_path_appears_only_once_it_accepts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that sees the path connects at once: the socket listens before it is renamed into place (a reader
    that came between bind and listen was refused as if nobody served the store)."""
    path = tmp_path / "store.duckdb"
    seen: list[bool] = []

    class Watched(socket.socket):
        def listen(self, backlog: int = 0) -> None:
            seen.append(socket_path(path).exists())  # what a polling reader would find at this instant
            super().listen(backlog)

    monkeypatch.setattr("searchtrace.store._readserver.socket.socket", Watched)
    with EventLog(path) as log:
        log.append([ev("s", 0)])
        with ReadServer(path, log.cursor):
            assert seen == [False]
            assert stat.S_ISSOCK(os.lstat(socket_path(path)).st_mode)
            assert stat.S_IMODE(os.lstat(socket_path(path)).st_mode) == 0o600
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no private name left
            with RemoteCursor(path) as cur:
                assert count(cur) == 1
    assert not socket_path(path).exists()


def test_commands_read_a_held_store_through_its_writer(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    with EventLog(path) as log, serving_reads(log):
        log.append([ev(f"s{i % 3}", i // 3) for i in range(9)])
        with pytest.raises(StoreLocked):
            EventLog(path, read_only=True)  # this process holds it (another would get the lock error)
        done = subprocess.run([str(SEARCHTRACE), "sql", "--db", str(path), "--json",
                               "SELECT count(*) AS n FROM events"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [{"n": 9}]
        done = subprocess.run([str(SEARCHTRACE), "sql", "--db", str(path), "DELETE FROM events"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "read-only" in done.stderr
        done = subprocess.run([str(SEARCHTRACE), "sql", "--db", str(path), "--json",
                               "SELECT count(*) AS n FROM v_trajectories"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr  # the documented views, even where no report ran
        done = subprocess.run([str(SEARCHTRACE), "report", "--db", str(path), "--json"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["schema"] == "searchtrace.report/1"
        assert log.head == 9


def test_closing_interrupts_a_query_in_flight_so_the_store_closes_cleanly(tmp_path: Path) -> None:
    """A reader's long query must not keep the writer's connection busy when the run ends (it would abort)."""
    import threading
    import time

    path = tmp_path / "busy.duckdb"
    log = EventLog(path)
    log.append([ev("s0", 0)])
    server = ReadServer(path, log.cursor)
    outcome: list[str] = []

    def long_read() -> None:
        try:
            with RemoteCursor(path) as cur:
                cur.execute("SELECT count(*) FROM range(100000000000) a").fetchall()
            outcome.append("finished")
        except (OSError, duckdb.Error, Exception) as exc:  # interrupted or cut off: either is an error line
            outcome.append(type(exc).__name__)

    reader = threading.Thread(target=long_read)
    reader.start()
    hung = time.monotonic() + 60  # a hang guard: the loop ends when the query runs on a session cursor of the writer's
    while not server._running and time.monotonic() < hung:
        time.sleep(0.01)
    server.close()
    log.close()  # raised "connection is busy" (and aborted the process at exit) before sessions were joined
    reader.join(timeout=60)  # a hang guard: the query alone would run for hours
    assert outcome and outcome[0] != "finished"


def test_a_read_whose_server_ended_is_read_again_once(tmp_path: Path) -> None:
    """read_again: the one retry of every reader (sql, report, the explorer) after its serving run ended mid-read."""
    path = tmp_path / "again.duckdb"
    with EventLog(path) as log:
        log.append([ev("s0", 0)])
    served: list[str] = []

    def read() -> int:  # the first read through a server that ends mid-read, then the file, free again
        if not served:
            served.append("session")
            raise ReadsEnded(f"{path}: the run holding it ended during the read; run the command again")
        served.append("file")
        with EventLog(path, read_only=True) as again:
            return again.head

    assert read_again(read) == 1 and served == ["session", "file"]
    served.clear()
    with pytest.raises(ReadsEnded):  # the reader itself has gone (the explorer's client left): no second read
        read_again(read, unless=lambda: True)
    assert served == ["session"]

    def held() -> int:
        served.append("held")
        raise StoreLocked(f"{path}: held")

    with pytest.raises(StoreLocked):  # any other error is the caller's, at once
        read_again(held)
    assert served == ["session", "held"]
