"""The append-only DuckDB event log: one connection per process, batched atomic appends, hash chain."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

from store import blobs as _blobs
from store.errors import ConcurrencyError, NotAStore, StoreLocked
from store.events import NewEvent, StoredEvent, decode_payload, encode_payload, type_of

SCHEMA_VERSION = "1"
GENESIS = "0" * 64
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_DDL = """
CREATE TABLE IF NOT EXISTS events(
  position    BIGINT      NOT NULL,
  event_id    UUID        NOT NULL,
  stream_id   VARCHAR     NOT NULL,
  stream_seq  INTEGER     NOT NULL,
  type        VARCHAR     NOT NULL,
  run_id      VARCHAR     NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL,
  payload     JSON        NOT NULL,
  hash        VARCHAR     NOT NULL
);
CREATE TABLE IF NOT EXISTS blobs(
  sha256  VARCHAR NOT NULL,
  bytes   BLOB    NOT NULL,
  codec   VARCHAR NOT NULL,
  n_bytes BIGINT  NOT NULL
);
CREATE TABLE IF NOT EXISTS searchtrace_meta(key VARCHAR NOT NULL, value VARCHAR NOT NULL);
"""

_ARROW_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("event_id", pa.string()),
        ("stream_id", pa.string()),
        ("stream_seq", pa.int32()),
        ("type", pa.string()),
        ("run_id", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        ("payload", pa.string()),
        ("hash", pa.string()),
    ]
)
_INSERT = (
    "INSERT INTO events SELECT position, CAST(event_id AS UUID), stream_id, stream_seq, type, run_id, "
    "recorded_at, CAST(payload AS JSON), hash FROM __batch"
)


def epoch_us(ts: datetime) -> int:
    return (ts - _EPOCH) // timedelta(microseconds=1)


def row_hash(
    prev: str,
    position: int,
    event_id: str,
    stream_id: str,
    stream_seq: int,
    type_: str,
    run_id: str,
    recorded_at_us: int,
    payload: str,
) -> str:
    """sha256 over the previous row's hash and every other column of this row (SPEC §3)."""
    h = hashlib.sha256()
    sep = b"\x1f"
    for part in (prev, str(position), event_id, stream_id, str(stream_seq), type_, run_id, str(recorded_at_us)):
        h.update(part.encode())
        h.update(sep)
    h.update(payload.encode())
    return h.hexdigest()


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" in msg.lower():
            raise StoreLocked(
                f"{path}: the database is held by another searchtrace process; wait for it to finish or use another --db"
            ) from None
        raise NotAStore(f"{path}: cannot open as a DuckDB database ({msg.splitlines()[0]})") from None
    except duckdb.Error as exc:
        raise NotAStore(f"{path}: not a searchtrace store ({str(exc).splitlines()[0]})") from None


class EventLog:
    """Holds the one DuckDB connection of this process; every append is one transaction."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise NotAStore(f"{self.path}: no such database; record or import something first")
        self._con = _connect(self.path, read_only)
        self._lock = threading.Lock()
        try:
            self._open_schema()
        except BaseException:
            self._con.close()
            raise
        self._load_heads()

    # -- opening ---------------------------------------------------------
    def _open_schema(self) -> None:
        tables = {r[0] for r in self._con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if "searchtrace_meta" in tables:
            row = self._con.execute("SELECT value FROM searchtrace_meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                raise NotAStore(f"{self.path}: unsupported searchtrace store schema {row[0] if row else None!r}")
            if not self.read_only:
                self._con.execute("SET checkpoint_threshold = '256MB'")
            return
        if tables:
            raise NotAStore(f"{self.path}: a DuckDB database but not a searchtrace store (it has other tables)")
        if self.read_only:
            raise NotAStore(f"{self.path}: empty database, not a searchtrace store")
        self._con.execute("BEGIN")
        self._con.execute(_DDL)
        self._con.execute("INSERT INTO searchtrace_meta VALUES ('schema', ?)", [SCHEMA_VERSION])
        self._con.execute("COMMIT")
        self._con.execute("SET checkpoint_threshold = '256MB'")

    def _load_heads(self) -> None:
        row = self._con.execute("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1").fetchone()
        self._position, self._hash = (int(row[0]), str(row[1])) if row else (0, GENESIS)
        self._heads: dict[str, int] = dict(
            self._con.execute("SELECT stream_id, max(stream_seq) FROM events GROUP BY stream_id").fetchall()
        )

    # -- writing ---------------------------------------------------------
    @property
    def head(self) -> int:
        """Position of the last committed event (0 when empty)."""
        return self._position

    def stream_head(self, stream_id: str) -> int:
        """Last stream_seq of a stream, -1 when it has none."""
        return self._heads.get(stream_id, -1)

    def check_expected(self, expected: Mapping[str, int] | None) -> None:
        for stream_id, seq in (expected or {}).items():
            have = self._heads.get(stream_id, -1)
            if have != seq:
                raise ConcurrencyError(
                    f"stream {stream_id!r}: expected last stream_seq {seq}, found {have}; nothing of this batch was written"
                )

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected: Mapping[str, int] | None = None,
        blobs: Sequence[bytes] = (),
    ) -> list[int]:
        """Append atomically; returns the position of each event (0 for an event_id already stored)."""
        result = self.append_groups([(events, expected)], blobs=blobs)[0]
        if isinstance(result, ConcurrencyError):
            raise result
        return result

    def append_groups(
        self,
        groups: Sequence[tuple[Sequence[NewEvent], Mapping[str, int] | None]],
        *,
        blobs: Sequence[bytes] = (),
    ) -> list[list[int] | ConcurrencyError]:
        """One transaction for several producers' batches (group commit); each group's expectation is checked alone.

        A group whose expectation fails is skipped and its ConcurrencyError returned in its place.
        """
        if self.read_only:
            raise PermissionError(f"{self.path}: opened read-only")
        with self._lock:
            return self._append_locked(groups, blobs)

    def _append_locked(
        self,
        groups: Sequence[tuple[Sequence[NewEvent], Mapping[str, int] | None]],
        blobs: Sequence[bytes],
    ) -> list[list[int] | ConcurrencyError]:
        all_ids = [str(e.event_id) for events, _ in groups for e in events]
        existing = self._existing_ids(all_ids) if all_ids else set()
        heads = dict(self._heads)
        position, prev = self._position, self._hash
        now = datetime.now(UTC)
        now_us = epoch_us(now)
        cols: dict[str, list[object]] = {name: [] for name in _ARROW_SCHEMA.names}
        results: list[list[int] | ConcurrencyError] = []
        seen_now: set[str] = set()
        for events, expected in groups:
            bad = next(
                ((s, q) for s, q in (expected or {}).items() if heads.get(s, -1) != q),
                None,
            )
            if bad is not None:
                results.append(
                    ConcurrencyError(
                        f"stream {bad[0]!r}: expected last stream_seq {bad[1]}, found {heads.get(bad[0], -1)}; "
                        "nothing of this batch was written"
                    )
                )
                continue
            positions: list[int] = []
            for ev in events:
                eid = str(ev.event_id)
                if eid in existing or eid in seen_now:
                    positions.append(0)
                    continue
                seen_now.add(eid)
                position += 1
                seq = heads.get(ev.stream_id, -1) + 1
                heads[ev.stream_id] = seq
                payload = encode_payload(ev.payload).decode()
                type_ = type_of(ev.payload)
                prev = row_hash(prev, position, eid, ev.stream_id, seq, type_, ev.run_id, now_us, payload)
                for name, value in (
                    ("position", position),
                    ("event_id", eid),
                    ("stream_id", ev.stream_id),
                    ("stream_seq", seq),
                    ("type", type_),
                    ("run_id", ev.run_id),
                    ("recorded_at", now),
                    ("payload", payload),
                    ("hash", prev),
                ):
                    cols[name].append(value)
                positions.append(position)
            results.append(positions)
        con = self._con
        con.execute("BEGIN")
        try:
            if blobs:
                _blobs.insert(con, blobs)
            if cols["position"]:
                table = pa.Table.from_pydict(cols, schema=_ARROW_SCHEMA)
                con.register("__batch", table)
                try:
                    con.execute(_INSERT)
                finally:
                    con.unregister("__batch")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self._position, self._hash, self._heads = position, prev, heads
        return results

    def _existing_ids(self, ids: list[str]) -> set[str]:
        if self._position == 0:
            return set()
        table = pa.table({"event_id": pa.array(ids, pa.string())})
        self._con.register("__ids", table)
        try:
            rows = self._con.execute(
                "SELECT CAST(event_id AS VARCHAR) FROM events WHERE event_id IN (SELECT CAST(event_id AS UUID) FROM __ids)"
            ).fetchall()
        finally:
            self._con.unregister("__ids")
        return {r[0] for r in rows}

    def put_blob(self, data: bytes) -> str:
        """Store content once (by sha256), compressed; returns the digest."""
        with self._lock:
            self._con.execute("BEGIN")
            try:
                digests = _blobs.insert(self._con, [data])
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
        return digests[0]

    def checkpoint(self) -> None:
        if not self.read_only:
            with self._lock:
                self._con.execute("CHECKPOINT")

    # -- reading ---------------------------------------------------------
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of its own for a reader thread (the connection refuses two callers at once)."""
        return self._con.cursor()

    def get_blob(self, digest: str) -> bytes:
        return _blobs.get(self.cursor(), digest)

    def has_blob(self, digest: str) -> bool:
        return _blobs.exists(self.cursor(), digest)

    def read(
        self,
        start: int = 1,
        stop: int | None = None,
        *,
        types: Sequence[str] | None = None,
        stream_id: str | None = None,
        batch_size: int = 5_000,
    ) -> Iterator[StoredEvent]:
        """Events in position order, streamed in batches (never the whole log in memory)."""
        cur = self.cursor()
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
        cur.close()

    def close(self) -> None:
        try:
            if not self.read_only:
                with self._lock:
                    self._con.execute("CHECKPOINT")
        finally:
            self._con.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
