"""One append transaction: assign positions and stream sequences, chain hashes, insert through Arrow in chunks.

Big transactions are cut into chunks; each chunk's INSERT runs on a worker thread (DuckDB releases the GIL)
while this thread encodes and hashes the next chunk, so Python work and DuckDB work overlap on two cores.
A transaction can also be prepared ahead (`prepare`, no database work) and committed later (`commit`), so the
Writer builds one flush while the previous one commits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

import searchtrace.store._blobs as _blobs
from searchtrace.store._errors import ConcurrencyError, EventConflict
from searchtrace.store._events import NewEvent, _encoder
from searchtrace.store._rows import TAGS, Chain, Columns, fill
from searchtrace.store._schema import HEAD_KEY

if TYPE_CHECKING:
    import pyarrow as pa

Group = tuple[Sequence[NewEvent], Mapping[str, int] | None]
Result = list[int] | Exception
Identity = tuple[str, str, str, bytes]  # (stream_id, type, run_id, payload bytes): what must match for a known id
# (the central log compares the same four, store._postgres)
Lookup = Callable[[Sequence[int]], Mapping[int, Identity]]  # stored identities of known event ids (as ints)

CHUNK_ROWS = 8_192
_INSERT = "INSERT INTO events SELECT * FROM __batch"  # columns in table order, Arrow types DuckDB maps 1:1


def stale_message(stream_id: str, expected: int, have: int) -> str:
    return f"stream {stream_id!r}: expected last stream_seq {expected}, found {have}; nothing of this batch was written"


@dataclass
class Head:
    """What the log knows after its last commit; changed only once a transaction has committed."""

    position: int
    hash: str
    streams: dict[str, int]
    ids: set[int]
    lookup: Lookup | None = None  # how to read a known id's stored identity (None: a known id is not compared)


@dataclass
class _Delta:
    position: int
    hash: str
    streams: dict[str, int] = field(default_factory=dict)
    ids: set[int] = field(default_factory=set)


@dataclass
class Pending:
    """What transactions prepared ahead (not yet committed) will have changed: later ones build on it."""

    position: int
    hash: str
    streams: dict[str, int] = field(default_factory=dict)
    ids: list[set[int]] = field(default_factory=list)


@dataclass
class Prepared:
    """A transaction built ahead of its commit: valid only while the log's head is still `base`."""

    base: tuple[int, str]
    tables: list[pa.Table]
    blobs: Sequence[bytes]
    blob_digests: list[str]  # taken here, off the commit thread; the writer adds them to its set once committed
    results: list[Result]
    delta: _Delta


class Stale(Exception):
    """The transaction a prepared one continued from did not commit: prepare it again."""


def insert(con: duckdb.DuckDBPyConnection, table: pa.Table, statement: str = _INSERT) -> None:
    """One INSERT of an Arrow table of rows in the events layout."""
    con.register("__batch", table)
    try:
        con.execute(statement)
    finally:
        con.unregister("__batch")


class _Inserter:
    """Inserts chunks in order; all but the last run on the worker thread while the caller builds the next."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, executor: ThreadPoolExecutor, recorded_at_us: int, narrow: bool = False
    ) -> None:
        self.con = con
        self.executor = executor
        self.narrow = narrow  # run DuckDB on one thread while this thread prepares the next chunk (bulk tuning)
        self.ts = recorded_at_us
        self.pending: Future[None] | None = None
        self.threads: str | None = None  # DuckDB's thread count while lowered to 1

    def _insert(self, table: pa.Table) -> None:
        insert(self.con, table)

    def submit(self, cols: Columns) -> None:
        table = cols.table(self.ts)
        self.wait()
        if self.narrow and self.threads is None:  # a multi-chunk transaction: DuckDB on one core, this on the other
            self.threads = str(self.con.execute("SELECT current_setting('threads')").fetchone()[0])  # type: ignore[index]
            self.con.execute("SET threads = 1")
        self.pending = self.executor.submit(self._insert, table)

    def restore(self) -> None:
        """Give DuckDB its threads back (readers sharing the database use them)."""
        if self.threads is not None:
            self.con.execute(f"SET threads = {int(self.threads)}")
            self.threads = None

    def finish(self, cols: Columns) -> None:
        self.wait()
        if cols.ids:
            self._insert(cols.table(self.ts))

    def wait(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()


class _Collector:
    """Stands in for `_Inserter` when a transaction is prepared ahead: keeps the chunk tables for `commit`."""

    def __init__(self, recorded_at_us: int) -> None:
        self.ts = recorded_at_us
        self.tables: list[pa.Table] = []

    def submit(self, cols: Columns) -> None:
        self.tables.append(cols.table(self.ts))

    def finish(self, cols: Columns) -> None:
        if cols.ids:
            self.tables.append(cols.table(self.ts))


class _GroupFailed(Exception):
    def __init__(self, index: int, error: Exception) -> None:
        self.index, self.error = index, error


def append_groups(
    con: duckdb.DuckDBPyConnection,
    executor: ThreadPoolExecutor,
    head: Head,
    groups: Sequence[Group],
    blobs: Sequence[bytes],
    recorded_at_us: int,
    *,
    narrow: bool = False,
    blob_digests: Sequence[str],
    known_blobs: AbstractSet[str],
) -> tuple[list[Result], Head]:
    """Commit the groups in one transaction; returns each group's positions (or its error) and the new head.

    `narrow`: a multi-chunk transaction runs DuckDB on one thread and gives its threads back (bulk tuning only).
    `blob_digests`: the blobs' digests, taken once by the caller; `known_blobs`: the digests already stored, which
    the blobs are checked against (no default: an empty set would insert a stored blob again)."""
    failed: dict[int, Exception] = {}
    while True:
        con.execute("BEGIN")
        inserter = _Inserter(con, executor, recorded_at_us, narrow)
        try:
            if blobs:
                _blobs.insert(con, blobs, blob_digests, known_blobs)
            results, delta, last = _build(inserter, head, None, groups, failed)
            inserter.finish(last)
            inserter.restore()
            if delta.position != head.position:
                con.execute(head_sql(delta.position, delta.hash))
            con.execute("COMMIT")
        except _GroupFailed as exc:  # a payload msgspec cannot encode: run again without that group
            _abort(con, inserter)
            failed[exc.index] = exc.error
            continue
        except BaseException:
            _abort(con, inserter)
            raise
        return results, publish(head, delta)


def publish(head: Head, delta: _Delta) -> Head:
    """The head after `delta` committed (the stream and id maps are updated in place)."""
    head.streams.update(delta.streams)
    head.ids.update(delta.ids)
    return Head(delta.position, delta.hash, head.streams, head.ids, head.lookup)


def prepare(
    head: Head, pending: Pending | None, groups: Sequence[Group], blobs: Sequence[bytes], recorded_at_us: int
) -> Prepared:
    """Build a transaction's tables without touching the database, continuing after `pending` when given."""
    failed: dict[int, Exception] = {}
    while True:
        collector = _Collector(recorded_at_us)
        try:
            results, delta, last = _build(collector, head, pending, groups, failed)
        except _GroupFailed as exc:
            failed[exc.index] = exc.error
            continue
        collector.finish(last)
        base = (pending.position, pending.hash) if pending is not None else (head.position, head.hash)
        return Prepared(base, collector.tables, blobs, [_blobs.digest(b) for b in blobs], results, delta)


def commit(con: duckdb.DuckDBPyConnection, prepared: Prepared, threads: int | None,
           known_blobs: AbstractSet[str]) -> None:
    """Insert a prepared transaction in one statement and commit it; roll back on any error.

    With `threads` (DuckDB's usual thread count) a multi-chunk transaction runs DuckDB on one thread, since
    the next transaction is being prepared on the other core, and gives the threads back afterwards.
    """
    tables = prepared.tables
    if len(tables) > 1:
        import pyarrow as pa

        table: pa.Table | None = pa.concat_tables(tables)
    else:
        table = tables[0] if tables else None
    narrow = threads is not None and len(tables) > 1
    moved = prepared.delta.position != prepared.base[0]
    head = head_sql(prepared.delta.position, prepared.delta.hash) if moved else ""
    try:
        if table is not None and not prepared.blobs:
            # one call, so the thread waits for the GIL once on return, not after BEGIN, INSERT and COMMIT each
            statement = f"BEGIN; {_INSERT}; {head} COMMIT"
            if narrow:
                statement = f"SET threads = 1; {statement}; SET threads = {threads}"
            insert(con, table, statement)
        else:
            con.execute("BEGIN")
            if prepared.blobs:
                _blobs.insert(con, prepared.blobs, prepared.blob_digests, known_blobs)
            if table is not None:
                insert(con, table)
            if head:
                con.execute(head)
            con.execute("COMMIT")
    except BaseException:
        rollback(con)
        if narrow:
            con.execute(f"SET threads = {threads}")
        raise


def head_sql(position: int, hash_: str) -> str:
    """The statements (inside the append's transaction) that record the log's head: its last position and hash.

    `verify` compares the events with it, so deleting the last events (a plain DELETE) does not go unseen.
    """
    if not all(c in "0123456789abcdef" for c in hash_):
        raise ValueError("a head hash is hex")
    return (f"DELETE FROM searchtrace_meta WHERE key = '{HEAD_KEY}'; "
            f"INSERT INTO searchtrace_meta VALUES ('{HEAD_KEY}', '{int(position)}:{hash_}');")


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.TransactionException:  # the failure was the COMMIT itself: nothing is open
        pass


def _abort(con: duckdb.DuckDBPyConnection, inserter: _Inserter) -> None:
    try:
        inserter.wait()
    except BaseException:
        pass
    rollback(con)
    inserter.restore()


def _build(
    inserter: _Inserter | _Collector,
    head: Head,
    pending: Pending | None,
    groups: Sequence[Group],
    failed: Mapping[int, Exception],
) -> tuple[list[Result], _Delta, Columns]:
    """Columns are filled a slice at a time with comprehensions; the hash chain runs when a chunk is full."""
    base = head.streams
    stored = [head.ids, *pending.ids] if pending is not None else [head.ids]
    ahead = pending.streams if pending is not None else {}
    position = pending.position if pending is not None else head.position
    delta = _Delta(position, pending.hash if pending is not None else head.hash)
    heads, seen = delta.streams, delta.ids

    def last_seq(s: str) -> int:
        seq = heads.get(s)
        if seq is None:
            seq = ahead.get(s)
        return base.get(s, -1) if seq is None else seq

    chain = Chain(delta.hash, str(inserter.ts))
    cols = Columns(position + 1)
    results: list[Result] = []

    def earlier(ui: int) -> NewEvent | None:
        """The event an earlier kept group of this transaction appended under id `ui` (a rare path: a plain scan)."""
        kept = (g for g, r in zip(groups, results, strict=False) if not isinstance(r, Exception))
        return next((e for events, _ in kept for e in events if e.event_id.int == ui), None)
    for gi, (events, expected) in enumerate(groups):
        if gi in failed:
            results.append(failed[gi])
            continue
        bad = next(((s, q) for s, q in (expected or {}).items() if last_seq(s) != q), None)
        if bad is not None:
            results.append(ConcurrencyError(stale_message(bad[0], bad[1], last_seq(bad[0]))))
            continue
        try:
            keep, positions = _fresh(events, stored, seen, position, head.lookup, earlier)
        except EventConflict as exc:  # before any of its rows were filled: the group is left out, the rest commit
            results.append(exc)
            continue
        except KeyError as exc:
            raise _GroupFailed(gi, TypeError(f"group {gi}: a payload is not a store event ({exc})")) from exc
        try:
            done = 0
            while done < len(keep):
                room = CHUNK_ROWS - len(cols.ids)
                part = keep[done : done + room]
                done += len(part)
                fill(cols, part, heads, ahead, base)
                if len(cols.ids) >= CHUNK_ROWS:
                    chain.seal(cols)
                    inserter.submit(cols)
                    cols = Columns(cols.first + len(cols.ids))
        except KeyError as exc:  # tags[type(body)]: not one of the Payload structs
            err = TypeError(f"group {gi}: a payload is not a store event ({exc})")
            raise _GroupFailed(gi, err) from exc
        except Exception as exc:
            raise _GroupFailed(gi, exc) from exc
        position += len(keep)
        results.append(positions)
    chain.seal(cols)
    delta.position, delta.hash = position, chain.prev
    return results, delta, cols


def _fresh(
    events: Sequence[NewEvent],
    stored: Sequence[set[int]],
    seen: set[int],
    position: int,
    lookup: Lookup | None = None,
    earlier: Callable[[int], NewEvent | None] | None = None,
) -> tuple[Sequence[NewEvent], list[int]]:
    """The events to write and every event's position (0 for an id already stored or repeated); marks them seen.

    A known id is a no-op only when its stream, type and payload bytes are the ones stored (`lookup`) or appended
    earlier in this transaction (`earlier`, or this group); other bytes raise EventConflict and nothing of the group
    is marked.
    """
    ids = [e.event_id.int for e in events]
    if seen.isdisjoint(ids) and all(s.isdisjoint(ids) for s in stored):
        unique = set(ids)
        if len(unique) == len(ids):
            seen |= unique
            return events, list(range(position + 1, position + 1 + len(ids)))
    keep: list[NewEvent] = []
    positions: list[int] = []
    mine: dict[int, NewEvent] = {}
    known: list[NewEvent] = []  # stored before this transaction (or prepared ahead of it)
    for e, ui in zip(events, ids, strict=True):
        if ui in mine or ui in seen:
            first = mine.get(ui) or (earlier(ui) if earlier is not None else None)
            if first is not None:
                _compare(e, _identity(first), "was appended earlier in this transaction")
            positions.append(0)
        elif any(ui in s for s in stored):
            known.append(e)
            positions.append(0)
        else:
            mine[ui] = e
            keep.append(e)
            positions.append(position + len(keep))
    if known and lookup is not None:
        have = lookup([e.event_id.int for e in known])
        for e in known:
            if e.event_id.int in have:
                _compare(e, have[e.event_id.int], "is already stored")
    seen.update(mine)
    return keep, positions


def _identity(e: NewEvent) -> Identity:
    return e.stream_id, TAGS[type(e.payload)], e.run_id, _encoder.encode(e.payload)


def _compare(e: NewEvent, have: Identity, where: str) -> None:
    """Nothing when `e` is the event already `where`; EventConflict naming the id and both versions otherwise."""
    mine = _identity(e)
    if mine == have:
        return
    other = ("with other payload bytes" if mine[:3] == have[:3] else f"in run {have[2]!r}" if mine[:2] == have[:2]
             else f"as {have[1]} in stream {have[0]!r}")
    raise EventConflict(
        f"event {e.event_id} ({mine[1]} in stream {mine[0]!r}) {where} {other}; nothing of this batch was written"
    )
