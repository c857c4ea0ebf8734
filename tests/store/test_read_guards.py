"""Read sessions on `<db>.sock` read the store and nothing else, within bounds (docs/concepts/security.md)."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path

import duckdb
import pytest

from searchtrace.pipeline import serving_reads
from searchtrace.store import EventLog, ReadOnlyViolation, ReadServer, read_statements
from searchtrace.store._readserver import ReadsBusy, RemoteCursor, SocketTaken, socket_path
from tests.store.store_support import ev

FORBIDDEN = [
    "SELECT content FROM read_text('/proc/self/environ')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('x.parquet')",
    "SELECT * FROM read_json('x.json')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT * FROM parquet_metadata('x.parquet')",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "SELECT * FROM query('SELECT 1')",
    "SELECT * FROM query_table('events')",
    "FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
    "SELECT * FROM enable_logging()",
    "SELECT * FROM duckdb_secrets()",
    "WITH x AS (SELECT * FROM checkpoint()) SELECT 1",
    "SELECT (SELECT count(*) FROM read_text('/etc/hostname'))",
    "SELECT nextval('s')",
    "DESCRIBE SELECT * FROM read_text('/etc/hostname')",
    "EXPLAIN ANALYZE SELECT * FROM glob('*')",
    "SUMMARIZE SELECT * FROM read_text('/etc/hostname')",
]
STATEMENTS = [
    "ATTACH '/tmp/other.duckdb' AS o", "ATTACH ':memory:' AS m", "DETACH searchtrace_derived", "SET threads = 1",
    "RESET threads", "SET enable_external_access = true", "PRAGMA enable_profiling", "CHECKPOINT", "INSTALL httpfs",
    "LOAD httpfs", "COPY events TO '/tmp/x.csv'", "EXPORT DATABASE '/tmp/x'", "CREATE TABLE t AS SELECT 1",
    "CREATE VIEW v AS SELECT 1", "CREATE OR REPLACE VIEW searchtrace_derived.ev.trajectories AS SELECT 1",
    "CREATE SCHEMA IF NOT EXISTS searchtrace_derived.other", "CREATE MACRO m() AS 1", "DROP VIEW v_trajectories",
    "DELETE FROM events", "UPDATE events SET position = 0", "CALL checkpoint()", "USE searchtrace_derived",
    "CREATE TEMP VIEW leak AS SELECT * FROM read_text('/etc/hostname')", "SET VARIABLE x = (SELECT * FROM checkpoint())",
]


@pytest.fixture()
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "live.duckdb"
    with EventLog(path) as log:
        log.append([ev("s0", i) for i in range(3)])
        with serving_reads(log):
            yield path, log


@pytest.fixture(scope="module")
def served_once(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One served store for the two statement catalogues (each server costs its views): every case checks the
    store is as it was, so a statement that changed it fails there, and after it."""
    path = tmp_path_factory.mktemp("reads") / "live.duckdb"
    with EventLog(path) as log:
        log.append([ev("s0", i) for i in range(3)])
        with serving_reads(log):
            yield path, log


@pytest.mark.parametrize("sql", FORBIDDEN)
def test_no_function_reaches_beyond_the_store_on_a_session_or_a_free_store(served_once, sql: str) -> None:  # type: ignore[no-untyped-def]
    path, _ = served_once
    with RemoteCursor(path) as cur, pytest.raises((ReadOnlyViolation, duckdb.Error)):
        cur.execute(sql).fetchall()
    with pytest.raises(ReadOnlyViolation):
        read_statements(sql)  # the same rules before `sql` opens a free store


@pytest.mark.parametrize("sql", STATEMENTS)
def test_no_statement_changes_what_another_session_sees(served_once, sql: str) -> None:  # type: ignore[no-untyped-def]
    path, _ = served_once
    with RemoteCursor(path) as cur, RemoteCursor(path) as other:
        before = other.execute("SELECT count(*) FROM searchtrace_derived.ev.trajectories").fetchall()
        with pytest.raises((ReadOnlyViolation, duckdb.Error)):
            cur.execute(sql)
        assert other.execute("SELECT count(*) FROM searchtrace_derived.ev.trajectories").fetchall() == before
        assert other.execute("SELECT count(*) FROM events").fetchone() == (3,)
        assert other.execute("SELECT current_setting('enable_external_access')").fetchone() == (False,)


def test_session_local_statements_stay_local(served) -> None:  # type: ignore[no-untyped-def]
    path, _ = served
    with RemoteCursor(path) as cur, RemoteCursor(path) as other:
        cur.execute("CREATE TEMP VIEW mine AS SELECT position FROM events")
        cur.execute("SET VARIABLE searchtrace_runs = ?::VARCHAR[]", [["r1"]])
        assert cur.execute("SELECT getvariable('searchtrace_runs')").fetchone() == (["r1"],)
        assert other.execute("SELECT getvariable('searchtrace_runs')").fetchone() == (None,)
        with pytest.raises(duckdb.Error):
            other.execute("SELECT * FROM mine")
        cur.execute("ATTACH IF NOT EXISTS ':memory:' AS searchtrace_derived (READ_ONLY false)")  # a no-op


def raw(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(socket_path(path)))
    s.settimeout(10)
    return s


@pytest.mark.parametrize("head", [struct.pack(">I", 1 << 31), struct.pack(">I", 0x7FFFFFFF),
                                  struct.pack(">I", (1 << 20) + 1), b"\xff\xff\xff\xff"])
def test_an_oversized_frame_header_closes_the_session_at_once(served, head: bytes) -> None:  # type: ignore[no-untyped-def]
    path, _ = served
    s = raw(path)
    s.sendall(head)
    assert s.recv(10) == b""  # closed without reading (or allocating) the announced body
    s.close()
    with RemoteCursor(path) as cur:
        assert cur.execute("SELECT count(*) FROM events").fetchone() == (3,)


def test_a_malformed_body_and_a_huge_statement_are_refused(served) -> None:  # type: ignore[no-untyped-def]
    path, _ = served
    s = raw(path)
    s.sendall(struct.pack(">I", 5) + b"\xc1junk")
    assert s.recv(10) == b""
    s.close()
    with RemoteCursor(path) as cur, pytest.raises(duckdb.Error, match="at most"):
        cur.execute("SELECT '" + "x" * (2 << 20) + "'")


def test_the_ninth_session_is_refused_in_one_line_and_idle_ones_are_closed(tmp_path: Path) -> None:
    path = tmp_path / "busy.duckdb"
    with EventLog(path) as log, ReadServer(path, log.cursor, idle_s=1.0):
        held = [RemoteCursor(path) for _ in range(8)]
        for c in held:
            assert c.execute("SELECT 1").fetchone() == (1,)
        with RemoteCursor(path) as ninth, pytest.raises(ReadsBusy, match="8 sessions") as exc:
            ninth.execute("SELECT 1")
        assert "\n" not in str(exc.value)
        time.sleep(2.0)  # every held session is idle past 1 s: closed, the slots are free again
        with RemoteCursor(path) as later:
            assert later.execute("SELECT 2").fetchone() == (2,)
        for c in held:
            c.close()


def test_a_statement_past_its_timeout_is_stopped_and_the_session_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "slow.duckdb"
    with EventLog(path) as log, ReadServer(path, log.cursor, timeout_s=0.5), RemoteCursor(path) as cur:
        failed: list[BaseException] = []

        def endless() -> None:
            try:
                cur.execute("SELECT count(*) FROM range(1000000000000) a, range(10) b").fetchall()
            except BaseException as exc:
                failed.append(exc)

        reader = threading.Thread(target=endless)
        reader.start()
        reader.join(timeout=60)  # a guard against a hang: the statement has hours of rows left, so ending is being stopped
        assert len(failed) == 1 and isinstance(failed[0], duckdb.Error) and "0.5 s limit" in str(failed[0]), failed
        assert cur.execute("SELECT 3").fetchone() == (3,)


def test_a_client_killed_mid_query_frees_its_core(tmp_path: Path) -> None:
    path = tmp_path / "gone.duckdb"
    with EventLog(path) as log, ReadServer(path, log.cursor) as server:
        cur = RemoteCursor(path)
        threading.Thread(target=lambda: _swallow(cur), daemon=True).start()
        time.sleep(0.5)
        cpu0 = time.process_time()
        cur._sock.shutdown(socket.SHUT_RDWR)  # the client dies: its end closes
        deadline = time.monotonic() + 5
        while server._running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server._running
        time.sleep(0.5)
        t = time.process_time()
        time.sleep(1.0)
        assert time.process_time() - t < 0.3, "an abandoned query still runs"
        assert time.process_time() >= cpu0


def _swallow(cur: RemoteCursor) -> None:
    try:
        cur.execute("SELECT count(*) FROM range(1000000000000) a, range(10) b").fetchall()
    except Exception:  # cut off: expected
        pass
    finally:
        cur.close()


def test_rows_stream_in_frames_of_at_most_1_mib(served) -> None:  # type: ignore[no-untyped-def]
    path, _ = served
    with RemoteCursor(path) as cur:
        cur.execute("SELECT repeat('x', 3000000) AS big, i FROM range(3) t(i)")  # one row beyond a frame
        assert [len(r[0]) for r in cur.fetchall()] == [3000000] * 3
        cur.execute("SELECT i FROM range(200000) t(i)")
        assert cur.fetchmany(5) == [(0,), (1,), (2,), (3,), (4,)]
        assert cur.execute("SELECT 7").fetchone() == (7,)  # the rest of the last answer was drained


@pytest.mark.parametrize("kind", ["file", "dangling", "symlink", "listener"])
def test_a_foreign_file_at_the_socket_path_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x.duckdb"
    sock = socket_path(path)
    other = None
    if kind == "file":
        sock.write_text("mine")
    elif kind == "dangling":
        os.symlink(tmp_path / "nowhere", sock)
    elif kind == "symlink":
        (tmp_path / "target").write_text("t")
        os.symlink(tmp_path / "target", sock)
    else:
        other = socket.socket(socket.AF_UNIX)
        other.bind(str(sock))
        other.listen(1)
    with EventLog(path) as log:
        with pytest.raises(SocketTaken) as exc:
            ReadServer(path, log.cursor)
    assert str(sock) in str(exc.value) and "\n" not in str(exc.value)
    assert os.path.lexists(sock)  # not ours: left alone
    if other is not None:
        other.close()


def test_view_sql_is_capped_and_store_only_through_the_socket(served) -> None:  # type: ignore[no-untyped-def]
    import searchtrace.web._data as data
    from searchtrace.store import BadInput

    path, _ = served
    with RemoteCursor(path) as cur:  # one session a request, as the explorer's source hands them out
        got = data.run_sql(cur, "SELECT i FROM range(3000000) t(i)")
        assert len(got.rows) == data.SQL_ROWS and got.truncated is True
    with RemoteCursor(path) as cur:
        got = data.run_sql(cur, "SELECT count(*) AS n FROM events")
        assert got.rows == [[3]] and got.truncated is False
    with RemoteCursor(path) as cur:
        with pytest.raises((BadInput, ReadOnlyViolation)):
            data.run_sql(cur, "SELECT content FROM read_text('/proc/self/environ')")


def test_a_value_wider_than_64_bits_is_one_line_and_the_session_lives_on(served) -> None:  # type: ignore[no-untyped-def]
    path, _ = served
    with RemoteCursor(path) as cur:
        with pytest.raises(duckdb.Error) as exc:
            cur.execute("SELECT 170141183460469231731687303715884105727::HUGEINT AS h").fetchall()
        assert "64 bits" in str(exc.value) and "\n" not in str(exc.value) and "ended" not in str(exc.value)
        big = ("SELECT CASE WHEN i < 3000 THEN i::HUGEINT ELSE i::HUGEINT * 100000000000000000000 END AS h "
               "FROM range(5000) t(i)")  # fails after the first batches went out
        with pytest.raises(duckdb.Error):
            cur.execute(big).fetchall()
        assert cur.execute("SELECT count(*) FROM events").fetchall() == [(3,)]
        assert cur.execute("SELECT CAST(2::HUGEINT ** 100 AS VARCHAR) AS h").fetchall()[0][0]
