"""Contract tests of EventLog on real DuckDB files: round trip, idempotency, atomicity, concurrency, blobs, reads.

The parts that make an append-only log with a chain hold for the central PostgreSQL log too (docs/how-to/scale.md): those
tests take `opener`, run once on a DuckDB file and once on a PostgreSQL database of the session's server."""

from __future__ import annotations

import tracemalloc
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import msgspec
import pytest

import searchtrace.store._append as append_mod
import searchtrace.store._blobs as blobs_mod
from searchtrace.store import (
    ConcurrencyError,
    EventLog,
    LogRow,
    NewEvent,
    RunStarted,
    bulk_appends,
    encode_payload,
    open_read_only,
    pull,
    type_of,
    verify,
)
from searchtrace.store._events import TYPE_NAMES
from searchtrace.store._ship import _local_rows
from tests.store.store_support import covered_types, ev, every_payload, intact

if TYPE_CHECKING:  # the central log's module imports psycopg: only the postgres runs load it
    from searchtrace.store import CentralLog

    Log = EventLog | CentralLog


@pytest.fixture(params=["duckdb", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Log]:
    """Opens the same log again each call: a DuckDB file, or a database of the session's PostgreSQL server."""
    if request.param == "duckdb":
        return lambda: EventLog(tmp_path / "t.duckdb")
    from searchtrace.store import CentralLog

    url = request.getfixturevalue("postgres").database()
    return lambda: CentralLog(url)


def rows_of(log: Log) -> list[LogRow]:
    """Every stored row as the chain hashes it (payload bytes as stored)."""
    if isinstance(log, EventLog):
        return _local_rows(log, 0, log.head + 1_000_000)
    return log.rows(0, 1_000_000)[0]


def checked(log: Log, tmp_path: Path, events: int | None = None) -> None:
    """The log verifies: a DuckDB store itself, the central log through a replica of it (as users check it)."""
    if isinstance(log, EventLog):
        intact(log, events)
        return
    with EventLog(tmp_path / f"replica-{uuid.uuid4().hex[:6]}.duckdb") as replica:
        pull(log, replica)
        intact(replica, events)


def count(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchone()[0])  # type: ignore[index]
    finally:
        con.close()


def test_every_event_type_round_trips(opener: Callable[[], Log]) -> None:
    payloads = every_payload()
    assert {type(p) for p in payloads} == covered_types(), "add an example for the new event type"
    events = [NewEvent(stream_id=f"s{i % 3}", run_id="r", payload=p) for i, p in enumerate(payloads)]
    with opener() as log:
        assert log.append(events) == list(range(1, len(events) + 1))
    with opener() as log:
        stored = list(log.read())
        rows = rows_of(log)
    assert [s.payload for s in stored] == payloads
    assert [s.type for s in stored] == [type_of(p) for p in payloads]
    assert {s.type for s in stored} == set(TYPE_NAMES)
    assert [s.event_id for s in stored] == [e.event_id for e in events]
    # stream_seq counts 0, 1, 2, … within each of the three round-robin streams
    assert [(s.stream_id, s.stream_seq) for s in stored] == [(f"s{i % 3}", i // 3) for i in range(len(stored))]
    # the payload column holds exactly the msgspec bytes, and the `type` column is the union tag
    for row, p in zip(rows, payloads, strict=True):
        assert row.payload == encode_payload(p)
        assert row.type == msgspec.json.decode(row.payload)["type"] == type_of(p)


def test_reappending_an_event_id_is_a_no_op_also_after_reopening(opener: Callable[[], Log], tmp_path: Path) -> None:
    first = [ev("a", i) for i in range(5)]
    with opener() as log:
        assert log.append(first) == [1, 2, 3, 4, 5]
        assert log.append(first) == [0, 0, 0, 0, 0]
        head_hash = log.head_hash
        assert (log.head, log.stream_head("a"), log.head_hash) == (5, 4, head_hash)
    new = ev("a", 5)
    with opener() as log:  # the set of stored ids is rebuilt from the file
        assert log.append([first[2], new, new, first[0]]) == [0, 6, 0, 0]
        assert (log.head, log.stream_head("a")) == (6, 5)
        checked(log, tmp_path, 6)


def test_a_failing_batch_writes_nothing(opener: Callable[[], Log], tmp_path: Path) -> None:
    with opener() as log:
        log.append([ev("a", 0)])
        bad = NewEvent(stream_id="a", run_id="r", payload=RunStarted(run_id="r", config={"x": object()}, code_version="v"))
        with pytest.raises(TypeError):
            log.append([ev("a", 1), ev("b", 0), bad])
        assert (log.head, log.stream_head("a"), log.stream_head("b")) == (1, 0, -1)
        assert log.append([ev("a", 1)]) == [2]
        checked(log, tmp_path, 2)


def test_a_database_error_mid_transaction_rolls_back_every_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.duckdb"
    monkeypatch.setattr(append_mod, "CHUNK_ROWS", 100)
    real = append_mod._Inserter._insert
    calls = 0

    def flaky(self: append_mod._Inserter, table: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise duckdb.IOException("disk went away")
        real(self, table)  # type: ignore[arg-type]

    with EventLog(path) as log:
        log.append([ev("a", 0)])
        calls = 100
        monkeypatch.setattr(append_mod._Inserter, "_insert", flaky)
        calls = 0
        batch = [ev(f"s{i % 7}", i) for i in range(450)]
        with pytest.raises(duckdb.IOException):
            log.append(batch)
        assert calls == 3  # two chunks went in before the failure, and were rolled back
        assert log.head == 1 and log.stream_head("s0") == -1
        monkeypatch.setattr(append_mod._Inserter, "_insert", real)
        assert log.append(batch) == list(range(2, 452))  # the same ids are not mistaken for stored ones
        intact(log)
    assert count(path) == 451


def test_expected_stream_seq_that_no_longer_holds_fails_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        assert log.append([ev("a", 0), ev("a", 1)], expected={"a": -1}) == [1, 2]
        with pytest.raises(ConcurrencyError, match="'a': expected last stream_seq 0, found 1"):
            log.append([ev("a", 2), ev("b", 0)], expected={"a": 0})
        assert (log.head, log.stream_head("b")) == (2, -1)
        assert log.append([ev("a", 2)], expected={"a": 1, "new": -1}) == [3]
    assert count(path) == 3


def test_group_commit_isolates_a_stale_group(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        log.append([ev("x", 0)])
        winner = [ev("x", 1), ev("x", 2)]
        loser = [ev("x", 99), ev("y", 0)]  # raced on the same head as winner
        other = [ev("z", 0)]
        results = log.append_groups([(winner, {"x": 0}), (loser, {"x": 0}), (other, None)])
        assert results[0] == [2, 3]
        assert isinstance(results[1], ConcurrencyError)
        assert results[2] == [4]
        assert (log.stream_head("x"), log.stream_head("y"), log.stream_head("z")) == (2, -1, 0)
        texts = [e.payload.text for e in log.read(stream_id="x")]  # type: ignore[union-attr]
        assert texts == ["x:0", "x:1", "x:2"]
        intact(log)


def test_blobs_are_content_addressed_compressed_and_stored_once(opener: Callable[[], Log], tmp_path: Path) -> None:
    page = ("<p>the same page</p>" * 500).encode()
    with opener() as log:
        d1 = log.put_blob(page)
        d2 = log.put_blob(page)
        log.append([ev("a", 0)], blobs=[page, b"other", b"other"])
        assert d1 == d2 and log.has_blob(d1) and log.get_blob(d1) == page
        assert not log.has_blob("0" * 64)
        with pytest.raises(KeyError):
            log.get_blob("0" * 64)
        if not isinstance(log, EventLog):
            import psycopg

            con = psycopg.connect(log.url)
            sql = "SELECT sha256, octet_length(bytes), n_bytes, codec, bytes FROM blobs ORDER BY n_bytes"
            rows = [tuple(r) for r in con.execute(sql).fetchall()]
            con.close()
    if isinstance(log, EventLog):
        con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
        rows = con.execute("SELECT sha256, octet_length(bytes), n_bytes, codec, bytes FROM blobs ORDER BY n_bytes").fetchall()
        con.close()
    assert [r[0] for r in rows].count(d1) == 1 and len(rows) == 2
    big = rows[1]
    assert big[2] == len(page) and big[1] < len(page) // 10
    assert zlib.decompress(big[4]) == page


def test_a_blob_is_stored_once_across_reopening_prepared_commits_and_a_failed_append(tmp_path: Path) -> None:
    """The writer keeps the stored digests instead of looking each commit's blobs up in the table: what it knows
    must be what the file holds, after a reopen, a prepared (Writer) commit and an append that failed."""
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        log.append([ev("a", 0)], blobs=[b"one"])
    with EventLog(path) as log:  # the digests are read from the file: b"one" is not stored twice
        log.append([ev("a", 1)], blobs=[b"one", b"two"])
        log.commit_prepared(log.prepare_groups([([ev("a", 2)], None)], blobs=[b"two", b"three"]))
        with pytest.raises(TypeError):  # its first transaction rolls back, the one without the group commits
            log.append([_not_an_event()], blobs=[b"four"])
        log.append([ev("a", 3)], blobs=[b"four"])
        assert log.put_blob(b"one") == blobs_mod.digest(b"one")
    con = duckdb.connect(str(path), read_only=True)
    stored = sorted(r[0] for r in con.execute("SELECT sha256 FROM blobs").fetchall())
    con.close()
    assert stored == sorted(blobs_mod.digest(b) for b in (b"one", b"two", b"three", b"four"))


def test_reads_by_range_stream_and_type_stream_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    n = 6_000
    text = "x" * 300
    with EventLog(path) as log:
        log.append([ev(f"s{i % 10}", i, text=text) for i in range(n)])
        log.append([NewEvent(stream_id="s0", run_id="r", payload=RunStarted(run_id="r", config={}, code_version="v"))])
        assert [e.position for e in log.read(100, 105)] == [100, 101, 102, 103, 104]
        s3 = list(log.read(stream_id="s3"))
        assert [e.stream_seq for e in s3] == list(range(n // 10))
        assert all(e.position % 10 == 4 for e in s3)
        started = list(log.read(types=["run.started"]))
        assert [(e.position, e.stream_seq) for e in started] == [(n + 1, n // 10)]
        assert [e.position for e in log.read(n - 1, types=["answer.final", "run.started"])] == [n - 1, n, n + 1]

        def peak(consume: bool) -> int:
            tracemalloc.start()
            try:
                if consume:
                    for _ in log.read(batch_size=500):
                        pass
                else:
                    _ = list(log.read(batch_size=500))
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

        streamed, loaded = peak(True), peak(False)
        assert streamed * 5 < loaded, (streamed, loaded)


def test_read_only_log_refuses_appends_and_sees_the_data(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        log.append([ev("a", 0)])
    with EventLog(path, read_only=True) as log:
        assert log.head == 1
        with pytest.raises(PermissionError):
            log.append([ev("a", 1)])
    con = open_read_only(path)
    assert verify(con).ok
    con.close()


def test_event_ids_stored_as_uuid(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    eid = uuid.uuid4()
    with EventLog(path) as log:
        log.append([ev("a", 0, event_id=eid)])
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT event_id, typeof(event_id), typeof(payload) FROM events").fetchone() == (eid, "UUID", "JSON")
    con.close()
    assert msgspec.json.decode(encode_payload(every_payload()[0]))["type"] == "run.started"


def test_stored_hashes_follow_the_documented_formula(opener: Callable[[], Log]) -> None:
    from searchtrace.store._schema import GENESIS, epoch_us, row_hash

    with opener() as log:
        log.append([ev("a", 0), ev("b", 0)])
        log.append([NewEvent(stream_id="a", run_id="r2", payload=p) for p in every_payload()[:4]])
        prev = GENESIS
        for e in log.read():
            want = row_hash(
                prev, e.position, e.event_id, e.stream_id, e.stream_seq, e.type, e.run_id,
                epoch_us(e.recorded_at), encode_payload(e.payload),
            )
            assert e.hash == want
            prev = e.hash
        assert prev == log.head_hash


def test_an_unencodable_group_fails_alone_even_after_chunks_went_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(append_mod, "CHUNK_ROWS", 50)
    path = tmp_path / "t.duckdb"
    bad = NewEvent(stream_id="b", run_id="r", payload=RunStarted(run_id="r", config={"x": object()}, code_version="v"))
    first = [ev("a", i) for i in range(120)]  # more than two chunks before the bad group is reached
    broken = [ev("b", 0), bad]
    last = [ev("a", 120), ev("c", 0)]
    with EventLog(path) as log:
        # the blob goes in with the first attempt, which rolls back at the bad group: the retry stores it again
        results = log.append_groups([(first, None), (broken, None), (last, {"a": 119})], blobs=[b"page"])
        assert log.has_blob(blobs_mod.digest(b"page"))
        assert results[0] == list(range(1, 121))
        assert isinstance(results[1], TypeError)
        assert results[2] == [121, 122]
        assert (log.head, log.stream_head("b"), log.stream_head("a")) == (122, -1, 120)
        with pytest.raises(TypeError, match="not a store event"):
            log.append([_not_an_event()])
        intact(log)
    assert count(path) == 122


def _not_an_event() -> NewEvent:
    e = ev("z", 0)
    e.payload = {"type": "answer.final"}  # type: ignore[assignment]  # what a careless caller might pass
    return e


def test_a_big_append_gives_duckdb_its_threads_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(append_mod, "CHUNK_ROWS", 64)
    with EventLog(tmp_path / "t.duckdb") as log, bulk_appends(log):  # narrowing is bulk tuning only
        cur = log.cursor()
        before = cur.execute("SELECT current_setting('threads')").fetchone()
        assert log.append([ev(f"s{i % 5}", i) for i in range(300)]) == list(range(1, 301))
        assert cur.execute("SELECT current_setting('threads')").fetchone() == before
        cur.close()


def test_a_failing_commit_raises_its_own_error_not_the_rollback_s() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from searchtrace.store._schema import GENESIS

    class CommitFails:  # DuckDB ends the transaction when COMMIT fails: a ROLLBACK after it raises
        def execute(self, sql: str, *args: object) -> None:
            if sql == "COMMIT":
                raise duckdb.IOException("disk went away at commit")
            if sql == "ROLLBACK":
                raise duckdb.TransactionException("cannot rollback - no transaction is active")

        def register(self, *args: object) -> None:
            pass

        def unregister(self, *args: object) -> None:
            pass

    head = append_mod.Head(0, GENESIS, {}, set())
    with ThreadPoolExecutor(1) as executor, pytest.raises(duckdb.IOException, match="at commit"):
        append_mod.append_groups(CommitFails(), executor, head, [([ev("a", 0)], None)], (), 0,  # type: ignore[arg-type]
                                 blob_digests=(), known_blobs=frozenset())
    assert head.position == 0 and not head.ids
