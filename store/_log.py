"""The append-only DuckDB event log: one connection per process, batched atomic appends, hash chain."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import duckdb

import searchtrace.store._append as _append
import searchtrace.store._blobs as _blobs
import searchtrace.store._merge as _merge
from searchtrace.store._append import Group, Head, Identity, Lookup, Pending, Prepared, Stale
from searchtrace.store._errors import StoreError
from searchtrace.store._events import NewEvent, StoredEvent, decode_payload
from searchtrace.store._merge import Merged
from searchtrace.store._rows import LogRow, rows_table
from searchtrace.store._schema import GENESIS, SCHEMA_VERSION, epoch_us, open_store, row_hash, segment_of

__all__ = ["GENESIS", "SCHEMA_VERSION", "EventLog", "epoch_us", "row_hash"]

_CHECKPOINT_THRESHOLD = "1GB"  # the default 16 MB checkpoints every ~25k rows and rewrites row groups (5x slower)


class EventLog:
    """Holds the one DuckDB connection of this process; every append is one transaction."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._con = open_store(self.path, read_only=read_only)
        self._lock = threading.Lock()
        self._ids: set[int] | None = None  # every stored event_id (as int), loaded on the first append
        self._blob_digests: set[str] | None = None  # every stored blob's sha256, loaded on the first blob appended
        self._executor: ThreadPoolExecutor | None = None
        self._committer: ThreadPoolExecutor | None = None  # runs submitted prepared transactions back to back
        self._ahead: list[Prepared] = []  # prepared, not yet committed, in the order they will commit
        self._ahead_lock = threading.Lock()  # guards `_ahead` and the head as preparers see it
        self._prepare_lock = threading.Lock()  # one preparation at a time: each continues the one before
        try:
            if not read_only:
                self._con.execute(f"SET checkpoint_threshold = '{_CHECKPOINT_THRESHOLD}'")
            # DuckDB's thread count to give back after a one-thread multi-chunk transaction; None: never narrowed
            self._bulk_threads: int | None = None
            self._load_heads()
        except BaseException:
            self._con.close()
            raise

    def _load_heads(self) -> None:
        row = self._con.execute("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1").fetchone()
        self._position, self._hash = (int(row[0]), str(row[1])) if row else (0, GENESIS)
        self._heads: dict[str, int] = dict(
            self._con.execute("SELECT stream_id, max(stream_seq) FROM events GROUP BY stream_id").fetchall()
        )

    def _stored_ids(self) -> set[int]:
        if self._ids is None:
            ids: set[int] = set()
            cur = self._con.cursor()
            try:
                reader = cur.sql("SELECT replace(CAST(event_id AS VARCHAR), '-', '') FROM events").to_arrow_reader(100_000)
                for batch in reader:
                    ids.update(int(h, 16) for h in batch.column(0).to_pylist())
            finally:
                cur.close()
            self._ids = ids
        return self._ids

    def _stored_blobs(self) -> set[str]:
        """The stored blobs' digests, read once: this log is its database's one writer, so a commit looks its blobs
        up here instead of joining the whole blobs table (a cost that grew with the store on every commit)."""
        if self._blob_digests is None:
            cur = self._con.cursor()
            try:
                self._blob_digests = {str(r[0]) for r in cur.execute("SELECT sha256 FROM blobs").fetchall()}
            finally:
                cur.close()
        return self._blob_digests

    def _known_blobs(self, digests: Sequence[str]) -> AbstractSet[str]:
        """What a commit with blobs (`digests`) checks them against: the stored digests, read only when needed."""
        return self._stored_blobs() if digests else frozenset()

    def _stored_now(self, digests: Sequence[str]) -> None:
        """After a commit: its blobs are stored."""
        if digests and self._blob_digests is not None:
            self._blob_digests.update(digests)

    def _lookup(self, ahead: Sequence[Prepared]) -> Lookup:
        """Reads the stored identity of known ids: committed rows from the database, else the transactions
        prepared ahead (`ahead`, not committed yet); an append compares a known id's bytes with it."""

        def find(ids: Sequence[int]) -> dict[int, Identity]:
            cur = self._con.cursor()
            try:
                rows = cur.execute(
                    "SELECT event_id, stream_id, type, run_id, CAST(payload AS VARCHAR) FROM events "
                    "WHERE event_id IN (SELECT unnest(?::UUID[]))", [[str(uuid.UUID(int=i)) for i in ids]]
                ).fetchall()
            finally:
                cur.close()
            found = {uuid.UUID(str(eid)).int: (str(sid), str(t), str(r), str(p).encode()) for eid, sid, t, r, p in rows}
            missing = set(ids) - found.keys()
            for prepared in ahead if missing else ():
                for table in prepared.tables:
                    keys = [int.from_bytes(b, "big") for b in table.column("event_id").combine_chunks().storage.to_pylist()]
                    for i, k in enumerate(keys):
                        if k in missing:
                            row = table.slice(i, 1).to_pylist()[0]
                            found[k] = (row["stream_id"], row["type"], row["run_id"], str(row["payload"]).encode())
            return found

        return find

    @property
    def segment(self) -> tuple[str, str] | None:
        """(segment_id, host) of this store (docs/how-to/scale.md); None for an older store opened read-only."""
        with self._lock:
            return segment_of(self._con, writable=not self.read_only)

    # -- writing ---------------------------------------------------------
    @property
    def head(self) -> int:
        """Position of the last committed event (0 when empty)."""
        return self._position

    @property
    def head_hash(self) -> str:
        """Hash of the last committed event (GENESIS when empty)."""
        return self._hash

    def stream_head(self, stream_id: str) -> int:
        """Last stream_seq of a stream, -1 when it has none."""
        return self._heads.get(stream_id, -1)

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected: Mapping[str, int] | None = None,
        blobs: Sequence[bytes] = (),
    ) -> list[int]:
        """Append atomically; returns the position of each event (0 for an event_id already stored)."""
        result = self.append_groups([(events, expected)], blobs=blobs)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def append_groups(self, groups: Sequence[Group], *, blobs: Sequence[bytes] = ()) -> list[list[int] | Exception]:
        """One transaction for several producers' batches (group commit); each group stands or falls alone.

        A group whose expectation fails (ConcurrencyError) or whose payload cannot be encoded is left out and
        its exception returned in its place; the other groups commit. A database error rolls back everything.
        """
        if self.read_only:
            raise PermissionError(f"{self.path}: opened read-only")
        with self._lock:
            return self._append_locked(groups, blobs)

    def _append_locked(self, groups: Sequence[Group], blobs: Sequence[bytes]) -> list[list[int] | Exception]:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="searchtrace-insert")
        head = Head(self._position, self._hash, self._heads, self._stored_ids(), self._lookup(()))
        digests = [_blobs.digest(b) for b in blobs]
        results, head = _append.append_groups(
            self._con, self._executor, head, groups, blobs, epoch_us(datetime.now(UTC)),
            narrow=self._bulk_threads is not None, blob_digests=digests, known_blobs=self._known_blobs(digests),
        )
        self._stored_now(digests)
        with self._ahead_lock:
            self._position, self._hash, self._heads = head.position, head.hash, head.streams
            self._ahead.clear()  # anything prepared ahead continued an older head: it will prepare again
        return results

    def merge(self, paths: Sequence[str | Path]) -> list[Merged]:
        """docs/how-to/scale.md: append the events of other stores (segments) not stored here, each keeping its recorded_at
        (store._merge); a conflict anywhere appends nothing (EventConflict)."""
        if self.read_only:
            raise PermissionError(f"{self.path}: opened read-only")
        here = self.segment
        assert here is not None  # a writable store is always named
        segments = _merge.open_segments(paths, self.path, here)
        with self._lock:
            tip = _merge.Tip(self._position, self._hash, dict(self._heads))
            try:
                return _merge.merge(self._con, tip, here, segments)
            finally:
                with self._ahead_lock:
                    self._ahead.clear()
                    self._load_heads()
                    self._ids = self._blob_digests = None  # loaded again by the next append

    def bulk_threads(self, on: bool) -> bool:
        """Run multi-chunk transactions with DuckDB on one thread (the next chunk is prepared on the other core),
        each giving back the thread count read when this was turned on; off (the default), DuckDB's threads are
        never touched. Returns the previous setting. `store.bulk_appends` is the way to turn it on."""
        with self._lock:
            was = self._bulk_threads is not None
            if on and not was:
                rows = self._con.execute("SELECT current_setting('threads')").fetchall()
                self._bulk_threads = int(rows[0][0]) if rows else None
            elif not on:
                self._bulk_threads = None
            return was

    # -- pipelined appends (the Writer): prepare the next transaction while the previous one commits ----------
    def prepare_groups(self, groups: Sequence[Group], *, blobs: Sequence[bytes] = ()) -> Prepared:
        """Encode, chain and tabulate a transaction after those prepared before it, without touching the database.

        Positions and hashes are decided here, so the next preparation can continue from them while this one
        commits. `commit_prepared` refuses it (`Stale`) if the transaction it continued did not commit.
        """
        if self.read_only:
            raise PermissionError(f"{self.path}: opened read-only")
        if self._ids is None:
            with self._lock:
                self._stored_ids()
        with self._prepare_lock:
            with self._ahead_lock:
                ahead = list(self._ahead)
                head = Head(self._position, self._hash, self._heads, self._stored_ids(), self._lookup(ahead))
            pending = None
            if ahead:
                pending = Pending(ahead[-1].delta.position, ahead[-1].delta.hash)
                for p in ahead:
                    pending.streams.update(p.delta.streams)
                    pending.ids.append(p.delta.ids)
            prepared = _append.prepare(head, pending, groups, blobs, epoch_us(datetime.now(UTC)))
            with self._ahead_lock:
                self._ahead.append(prepared)
        return prepared

    def commit_prepared(self, prepared: Prepared) -> list[list[int] | Exception]:
        """Insert and commit a prepared transaction; `Stale` (nothing written) when it no longer continues the head."""
        with self._lock:
            if (self._position, self._hash) != prepared.base:
                with self._ahead_lock:  # whatever it continued will not commit before it: start afresh
                    self._ahead.clear()
                raise Stale(f"prepared after position {prepared.base[0]}, the log is at {self._position}")
            try:
                _append.commit(self._con, prepared, self._bulk_threads, self._known_blobs(prepared.blob_digests))
            except BaseException:
                self.discard_prepared(prepared)
                raise
            self._stored_now(prepared.blob_digests)
            with self._ahead_lock:
                head = _append.publish(Head(self._position, self._hash, self._heads, self._stored_ids()), prepared.delta)
                self._position, self._hash = head.position, head.hash
                if self._ahead and self._ahead[0] is prepared:
                    del self._ahead[0]
        return prepared.results

    def submit_prepared(self, prepared: Prepared) -> Future[list[list[int] | Exception]]:
        """Queue `commit_prepared` on the log's commit thread, which runs queued transactions back to back.

        The thread goes straight from one commit to the next, so a caller preparing ahead keeps DuckDB busy
        without a round trip through its event loop between commits.
        """
        if self._committer is None:
            self._committer = ThreadPoolExecutor(1, thread_name_prefix="searchtrace-commit")
        return self._committer.submit(self.commit_prepared, prepared)

    def discard_prepared(self, prepared: Prepared) -> None:
        """Forget a prepared transaction that will not be committed, and every one prepared after it (they continue
        it): the next `prepare_groups` starts again from the committed head."""
        with self._ahead_lock:
            for i, p in enumerate(self._ahead):
                if p is prepared:
                    del self._ahead[i:]
                    break

    def extend(self, rows: Sequence[LogRow], blobs: Sequence[bytes] = ()) -> None:
        """Append rows that already carry their positions, sequences, times and hashes (a replica of the central
        log, docs/how-to/scale.md) in one transaction; a row that does not continue this log's chain writes nothing."""
        if self.read_only:
            raise PermissionError(f"{self.path}: opened read-only")
        with self._lock:
            ids = self._stored_ids()
            position, prev, heads = self._position, self._hash, dict(self._heads)
            for r in rows:
                if r.position != position + 1:
                    raise StoreError(f"{self.path}: the log ends at position {position}, the next row given is "
                                     f"{r.position}; nothing of this batch was written")
                if r.stream_seq != heads.get(r.stream_id, -1) + 1 or r.event_id.int in ids:
                    raise StoreError(f"{self.path}: position {r.position} (stream {r.stream_id!r}, seq {r.stream_seq}) "
                                     "does not continue this log's streams; nothing of this batch was written")
                want = row_hash(prev, r.position, r.event_id, r.stream_id, r.stream_seq, r.type, r.run_id,
                                r.recorded_at_us, r.payload)
                if want != r.hash:
                    raise StoreError(f"{self.path}: position {r.position}: its hash does not follow the one before "
                                     "(the source log is broken there); nothing of this batch was written")
                position, prev, heads[r.stream_id] = r.position, r.hash, r.stream_seq
            digests = [_blobs.digest(b) for b in blobs]
            self._con.execute("BEGIN")
            try:
                if blobs:
                    _blobs.insert(self._con, blobs, digests, self._stored_blobs())
                if rows:
                    _append.insert(self._con, rows_table(rows))
                    self._con.execute(_append.head_sql(position, prev))
                self._con.execute("COMMIT")
            except BaseException:
                _append.rollback(self._con)
                raise
            ids.update(r.event_id.int for r in rows)
            self._stored_now(digests)
            with self._ahead_lock:
                self._position, self._hash, self._heads = position, prev, heads
                self._ahead.clear()  # anything prepared ahead continued the old head

    def put_blob(self, data: bytes) -> str:
        """Store content once (by sha256), compressed; returns the digest."""
        digests = [_blobs.digest(data)]
        with self._lock:
            self._con.execute("BEGIN")
            try:
                _blobs.insert(self._con, [data], digests, self._stored_blobs())
                self._con.execute("COMMIT")
            except BaseException:
                _append.rollback(self._con)
                raise
            self._stored_now(digests)
        return digests[0]

    # -- reading ---------------------------------------------------------
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for a reader thread (the connection refuses two callers at once)."""
        return self._con.cursor()

    def get_blob(self, digest: str) -> bytes:
        cur = self.cursor()
        try:
            return _blobs.get(cur, digest)
        finally:
            cur.close()

    def has_blob(self, digest: str) -> bool:
        cur = self.cursor()
        try:
            return _blobs.exists(cur, digest)
        finally:
            cur.close()

    def read(
        self,
        start: int = 1,
        stop: int | None = None,
        *,
        types: Sequence[str] | None = None,
        stream_id: str | None = None,
        stream_ids: Sequence[str] | None = None,
        batch_size: int = 5_000,
    ) -> Iterator[StoredEvent]:
        """Events in position order, streamed in batches (never the whole log in memory); `stream_ids`: only those
        streams' events."""
        where = ["position >= ?"]
        params: list[object] = [start]
        if stop is not None:
            where.append("position < ?")
            params.append(stop)
        if types:
            where.append("type IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(types))
        if stream_id is not None:
            where.append("stream_id = ?")
            params.append(stream_id)
        if stream_ids is not None:
            where.append("stream_id IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(stream_ids))
        cur = self.cursor()
        try:
            cur.execute(
                "SELECT position, event_id, stream_id, stream_seq, type, run_id, recorded_at, payload, hash "
                f"FROM events WHERE {' AND '.join(where)} ORDER BY position",
                params,
            )
            while True:
                rows = cur.fetchmany(batch_size)
                if not rows:
                    break
                for pos, eid, sid, seq, type_, run_id, ts, payload, h in rows:
                    yield StoredEvent(
                        position=pos,
                        event_id=eid if isinstance(eid, uuid.UUID) else uuid.UUID(str(eid)),
                        stream_id=sid,
                        stream_seq=seq,
                        type=type_,
                        run_id=run_id,
                        recorded_at=ts,
                        payload=decode_payload(payload),
                        hash=h,
                    )
        finally:
            cur.close()

    def close(self) -> None:
        try:
            if self._committer is not None:
                self._committer.shutdown()  # commits already queued finish first, so the checkpoint holds them
            if not self.read_only:
                with self._lock:
                    self._con.execute("CHECKPOINT")
        finally:
            if self._executor is not None:
                self._executor.shutdown()
            self._con.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

