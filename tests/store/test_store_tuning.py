"""No silent process-wide tuning: the store alone leaves the GIL switch interval and DuckDB's threads as it found
them; `bulk_appends` (bench ingest, import) changes both for its block only and gives back exactly what it found."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import searchtrace.store._append as append_mod
from searchtrace.store import EventLog, bulk_appends, open_writer
from searchtrace.store._tuning import GIL_TURN_S
from tests.store.store_support import ev, intact

THREADS = 3  # not the machine's default, so "given back" cannot be confused with "reset to the default"
INTERVAL = 0.0025  # likewise for the switch interval


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    rows = con.execute("SELECT current_setting('threads')").fetchall()
    return int(rows[0][0])


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, str, float]]]:
    """Every chunk insert: (DuckDB threads then, the statement run, the switch interval then); chunks of 64 rows."""
    monkeypatch.setattr(append_mod, "CHUNK_ROWS", 64)
    real = append_mod.insert
    calls: list[tuple[int, str, float]] = []

    def spy(con: duckdb.DuckDBPyConnection, table: object, *statement: str) -> None:
        calls.append((_threads(con), " ".join(statement), sys.getswitchinterval()))
        real(con, table, *statement)  # type: ignore[arg-type]

    monkeypatch.setattr(append_mod, "insert", spy)
    saved = sys.getswitchinterval()
    sys.setswitchinterval(INTERVAL)
    try:
        yield calls
    finally:
        sys.setswitchinterval(saved)


def _open(path: Path) -> EventLog:
    log = EventLog(path)
    cur = log.cursor()
    cur.execute(f"SET threads = {THREADS}")
    cur.close()
    return log


@pytest.mark.anyio
async def test_opening_a_writer_and_appending_in_bulk_change_nothing_process_wide(
    tmp_path: Path, seen: list[tuple[int, str, float]]
) -> None:
    log = _open(tmp_path / "w.duckdb")
    try:
        async with open_writer(log) as writer:
            assert sys.getswitchinterval() == INTERVAL
            await writer.append([ev(f"s{i % 5}", i) for i in range(300)])  # a multi-chunk pipelined flush
        log.append([ev(f"t{i % 5}", i) for i in range(300)])  # a multi-chunk synchronous transaction
        assert sys.getswitchinterval() == INTERVAL and _threads(log.cursor()) == THREADS
        assert len(seen) >= 2
        assert all(threads == THREADS and "SET threads" not in stmt and interval == INTERVAL
                   for threads, stmt, interval in seen), seen
        intact(log, 600)
    finally:
        log.close()


@pytest.mark.anyio
async def test_bulk_appends_tune_for_their_block_and_restore_exactly(
    tmp_path: Path, seen: list[tuple[int, str, float]]
) -> None:
    log = _open(tmp_path / "b.duckdb")
    try:
        with bulk_appends(log):
            assert sys.getswitchinterval() == min(INTERVAL, GIL_TURN_S)
            with bulk_appends(log):  # nested: the inner block gives back the outer one's settings
                assert sys.getswitchinterval() == min(INTERVAL, GIL_TURN_S)
            assert sys.getswitchinterval() == min(INTERVAL, GIL_TURN_S)
            log.append([ev(f"t{i % 5}", i) for i in range(300)])  # synchronous: DuckDB on one thread meanwhile
            assert any(threads == 1 for threads, _, _ in seen)
            seen.clear()
            async with open_writer(log) as writer:  # pipelined: the one statement narrows and gives back
                await writer.append([ev(f"s{i % 5}", i) for i in range(300)])
            assert any(stmt.startswith("SET threads = 1;") and stmt.endswith(f"SET threads = {THREADS}")
                       for _, stmt, _ in seen), seen
            assert _threads(log.cursor()) == THREADS  # given back after each transaction
        assert sys.getswitchinterval() == INTERVAL and _threads(log.cursor()) == THREADS
        seen.clear()
        log.append([ev(f"u{i % 5}", i) for i in range(300)])  # after the block: untouched again
        assert all(threads == THREADS and "SET threads" not in stmt for threads, stmt, _ in seen), seen
        with pytest.raises(RuntimeError), bulk_appends(log):
            raise RuntimeError("the block failed")
        assert sys.getswitchinterval() == INTERVAL and _threads(log.cursor()) == THREADS
        intact(log, 900)
    finally:
        log.close()
