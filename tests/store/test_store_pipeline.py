"""Pipelined appends: a transaction prepared while the one before it commits, refused when that one did not."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import duckdb
import pytest

import searchtrace.store._append as append_mod
from searchtrace.store import EventLog, bulk_appends, open_writer
from searchtrace.store._append import Stale
from tests.store.store_support import ev, intact


def test_prepared_ahead_continues_positions_ids_and_streams_and_commits_only_in_order(tmp_path: Path) -> None:
    with EventLog(tmp_path / "t.duckdb") as log:
        log.append([ev("a", 0)])
        first = [ev("a", i) for i in range(1, 4)]
        p1 = log.prepare_groups([(first, {"a": 0})])
        again = [first[1], ev("a", 4), ev("b", 0)]  # one id already in p1: a no-op, not a duplicate
        p2 = log.prepare_groups([(again, {"a": 3}), ([ev("c", 0)], {"a": 0})])  # the second group is stale
        assert p1.results == [[2, 3, 4]] and p2.results[0] == [0, 5, 6]
        assert isinstance(p2.results[1], Exception) and "found 4" in str(p2.results[1])
        with pytest.raises(Stale):
            log.commit_prepared(p2)  # p1 has not committed: p2 writes nothing
        assert log.head == 1
        assert log.commit_prepared(p1) == [[2, 3, 4]]
        assert log.commit_prepared(p2)[0] == [0, 5, 6]
        assert (log.head, log.stream_head("a"), log.stream_head("b"), log.stream_head("c")) == (6, 4, 0, -1)
        assert [e.payload.iteration for e in log.read(stream_id="a")] == [0, 1, 2, 3, 4]  # type: ignore[union-attr]
        intact(log, 6)


def test_a_failed_commit_makes_the_transaction_prepared_after_it_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = append_mod.insert

    def broken(con: duckdb.DuckDBPyConnection, table: object, *statement: str) -> None:
        raise duckdb.IOException("disk went away")

    with EventLog(tmp_path / "t.duckdb") as log:
        lost = [ev("a", i) for i in range(3)]
        kept = [ev("b", i) for i in range(2)]
        p1 = log.prepare_groups([(lost, None)])
        p2 = log.prepare_groups([(kept, None)])
        assert p2.results == [[4, 5]]
        monkeypatch.setattr(append_mod, "insert", broken)
        with pytest.raises(duckdb.IOException):
            log.commit_prepared(p1)
        monkeypatch.setattr(append_mod, "insert", real)
        with pytest.raises(Stale):
            log.commit_prepared(p2)
        assert log.head == 0
        assert log.commit_prepared(log.prepare_groups([(kept, None)])) == [[1, 2]]
        assert log.commit_prepared(log.prepare_groups([(lost, None)])) == [[3, 4, 5]]  # its ids were never stored
        intact(log, 5)


def test_a_sync_append_in_between_makes_a_prepared_transaction_stale(tmp_path: Path) -> None:
    with EventLog(tmp_path / "t.duckdb") as log:
        p = log.prepare_groups([([ev("a", 0)], None)])
        assert log.append([ev("b", 0)]) == [1]
        with pytest.raises(Stale):
            log.commit_prepared(p)
        assert log.commit_prepared(log.prepare_groups([([ev("a", 0)], None)])) == [[2]]
        intact(log, 2)


@pytest.mark.anyio
async def test_writer_prepares_again_after_a_failed_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = append_mod.insert
    calls = 0
    second = threading.Event()  # the next flush has been prepared on top of the one committing

    def fails_first(con: duckdb.DuckDBPyConnection, table: object, *statement: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            assert second.wait(60)  # fails only once the next flush is prepared on top of it (60 s: a hang guard)
            raise duckdb.IOException("disk went away")
        real(con, table, *statement)  # type: ignore[arg-type]

    monkeypatch.setattr(append_mod, "insert", fails_first)
    with EventLog(tmp_path / "t.duckdb") as log:
        prepares = 0
        prepare = log.prepare_groups

        def counted(*args: object, **kwargs: object) -> object:
            nonlocal prepares
            prepares += 1
            try:
                return prepare(*args, **kwargs)  # type: ignore[arg-type]
            finally:
                if prepares == 2:
                    second.set()

        log.prepare_groups = counted  # type: ignore[method-assign,assignment]
        outcomes: dict[str, object] = {}
        async with open_writer(log, max_events=3, max_delay=0) as writer:

            async def put(name: str, stream: str) -> None:
                try:
                    outcomes[name] = await writer.append([ev(stream, i) for i in range(3)])
                except duckdb.IOException as exc:
                    outcomes[name] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(put, "first", "a")
                await anyio.sleep(0.05)
                tg.start_soon(put, "second", "b")
        assert isinstance(outcomes["first"], duckdb.IOException)
        assert outcomes["second"] == [1, 2, 3]
        assert prepares == 3  # the second flush was prepared on the failed one, then again on the real head
        assert (log.head, log.stream_head("a"), log.stream_head("b")) == (3, -1, 2)
        intact(log, 3)


def test_a_multi_chunk_prepared_commit_gives_duckdb_its_threads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(append_mod, "CHUNK_ROWS", 64)
    real = append_mod.insert

    def broken(con: duckdb.DuckDBPyConnection, table: object, *statement: str) -> None:
        con.execute("SET threads = 1")  # as far as the statement got before failing
        raise duckdb.IOException("disk went away")

    with EventLog(tmp_path / "t.duckdb") as log, bulk_appends(log):  # narrowing is bulk tuning only
        cur = log.cursor()
        before = cur.execute("SELECT current_setting('threads')").fetchone()
        p = log.prepare_groups([([ev(f"s{i % 5}", i) for i in range(300)], None)])
        assert len(p.tables) == 5
        monkeypatch.setattr(append_mod, "insert", broken)
        with pytest.raises(duckdb.IOException):
            log.commit_prepared(p)
        assert cur.execute("SELECT current_setting('threads')").fetchone() == before
        monkeypatch.setattr(append_mod, "insert", real)
        assert log.commit_prepared(log.prepare_groups([([ev(f"s{i % 5}", i) for i in range(300)], None)])) == [
            list(range(1, 301))
        ]
        assert cur.execute("SELECT current_setting('threads')").fetchone() == before
        cur.close()
        intact(log, 300)
