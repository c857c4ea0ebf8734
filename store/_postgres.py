"""The central PostgreSQL log (docs/how-to/scale.md): many segments append to one chain, replicas pull it by position.

Every append is one transaction that first takes the one `head` row FOR UPDATE, so appends run one after another
whatever process makes them: positions are gap-free, commit in position order (a reader sees a prefix) and form
one hash chain, computed by the DuckDB store's formula (`row_hash`) so that a replica's `verify` checks it.
`payload` is `json`, never `jsonb`: json keeps the text it was given, jsonb re-encodes it and breaks the chain.
psycopg is imported by this module only, which the default commands never load (the `postgres` extra).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import psycopg

from searchtrace.store._blobs import CODEC, digest
from searchtrace.store._errors import NotAStore, StoreError
from searchtrace.store._events import NewEvent, StoredEvent, decode_payload, encode_payload, type_of
from searchtrace.store._pgurl import check_url, redacted, scrub
from searchtrace.store._rows import LogRow
from searchtrace.store._schema import GENESIS, SCHEMA_VERSION, epoch_us, first_line, row_hash

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SCHEMA_LOCK = 0x5EA4C47  # advisory lock key: two processes creating the schema at once take turns

DDL = f"""
CREATE TABLE IF NOT EXISTS events(
  position    bigint      PRIMARY KEY,
  event_id    uuid        NOT NULL UNIQUE,
  stream_id   text        NOT NULL,
  stream_seq  integer     NOT NULL,
  type        text        NOT NULL,
  run_id      text        NOT NULL,
  recorded_at timestamptz NOT NULL,
  payload     json        NOT NULL,
  hash        text        NOT NULL,
  UNIQUE (stream_id, stream_seq)
);
CREATE TABLE IF NOT EXISTS blobs(
  sha256   text   PRIMARY KEY,
  bytes    bytea  NOT NULL,
  codec    text   NOT NULL,
  n_bytes  bigint NOT NULL,
  position bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS blobs_by_position ON blobs(position);
CREATE TABLE IF NOT EXISTS head(
  one      boolean PRIMARY KEY DEFAULT true CHECK (one),
  position bigint  NOT NULL,
  hash     text    NOT NULL
);
INSERT INTO head VALUES (true, 0, '{GENESIS}') ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS searchtrace_meta(key text PRIMARY KEY, value text NOT NULL);
INSERT INTO searchtrace_meta VALUES ('schema', '{SCHEMA_VERSION}') ON CONFLICT DO NOTHING;
"""
# blobs.position: the first position of the transaction that added the blob, so a replica pulls a blob together
# with the events after which it appeared.

_COLUMNS = "position, event_id, stream_id, stream_seq, type, run_id, recorded_at, payload, hash"
_ROWS = ("SELECT position, event_id, stream_id, stream_seq, type, run_id, "
         "(extract(epoch FROM recorded_at) * 1000000)::bigint, payload::text, hash FROM events ")

BlobRow = tuple[str, bytes, str, int]  # sha256, stored bytes, codec, n_bytes: as both stores keep them


def _escaped(data: bytes) -> bytes:
    """A value as COPY's text format reads back byte for byte: backslashes (JSON escapes) doubled, line breaks and
    tabs (none in msgspec's JSON, maybe in a stream id) escaped."""
    if b"\\" in data or b"\n" in data or b"\r" in data or b"\t" in data:
        data = data.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
    return data


def _text(value: str) -> str:
    if "\\" in value or "\n" in value or "\r" in value or "\t" in value:
        return _escaped(value.encode()).decode()
    return value


def _copy_parts(r: LogRow) -> tuple[bytes, bytes]:
    """A row's COPY line around its sequence, without position and hash: (event_id .. stream_id, type .. payload)."""
    ts = (_EPOCH + timedelta(microseconds=r.recorded_at_us)).isoformat()
    return (f"\t{r.event_id}\t{_text(r.stream_id)}\t".encode(),
            f"\t{_text(r.type)}\t{_text(r.run_id)}\t{ts}\t".encode() + _escaped(r.payload) + b"\t")


class Conflict(StoreError):
    """An event id the log holds with other bytes; nothing of the batch was written."""


def _connect(url: str, application: str) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(check_url(url), application_name=application, client_encoding="UTF8")
    except psycopg.Error as exc:
        raise StoreError(f"{redacted(url)}: cannot connect ({scrub(first_line(str(exc)), url)})") from None


class CentralLog:
    """Holds one connection to the central log; each append is one transaction holding the head row."""

    def __init__(self, url: str, *, application: str = "searchtrace") -> None:
        self.url = url
        self.name = redacted(url)
        self._con = _connect(url, application)
        try:
            self._guard(self._create)
        except BaseException:
            self._con.close()
            raise

    def _guard(self, work: Callable[[], Any]) -> Any:
        """Run `work` in one transaction; a database error is rolled back and becomes one scrubbed line."""
        try:
            with self._con.transaction():
                return work()
        except psycopg.Error as exc:
            raise StoreError(f"{self.name}: {scrub(first_line(str(exc)), self.url)}") from None

    def _create(self) -> None:
        enc = self._con.execute("SHOW server_encoding").fetchone()
        if enc is None or str(enc[0]).upper() not in {"UTF8", "SQL_ASCII"}:
            raise NotAStore(f"{self.name}: the database's encoding is {enc[0] if enc else None}; the log needs "
                            "UTF8 (payload bytes must survive)")
        self._con.execute("SELECT pg_advisory_xact_lock(%s)", [_SCHEMA_LOCK])
        self._con.execute(DDL)
        kind = self._con.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'events' AND column_name = 'payload'").fetchone()
        if kind is None or kind[0] != "json":
            raise NotAStore(f"{self.name}: events.payload is {kind[0] if kind else 'missing'}, not json; "
                            "not a searchtrace log (jsonb rewrites the bytes the chain hashes)")
        version = self._con.execute("SELECT value FROM searchtrace_meta WHERE key = 'schema'").fetchone()
        if version is None or version[0] != SCHEMA_VERSION:
            raise NotAStore(f"{self.name}: unsupported searchtrace log schema {version[0] if version else None!r}")

    # -- the head ---------------------------------------------------------------------------------------------
    def head_row(self) -> tuple[int, str]:
        """(last position, its hash) as committed now."""
        row = self._guard(lambda: self._con.execute("SELECT position, hash FROM head").fetchone())
        return int(row[0]), str(row[1])

    @property
    def head(self) -> int:
        return self.head_row()[0]

    @property
    def head_hash(self) -> str:
        return self.head_row()[1]

    def stream_head(self, stream_id: str) -> int:
        row = self._guard(lambda: self._con.execute(
            "SELECT max(stream_seq) FROM events WHERE stream_id = %s", [stream_id]).fetchone())
        return -1 if row is None or row[0] is None else int(row[0])

    # -- appending -----------------------------------------------------------------------------------------------
    def append(self, events: Sequence[NewEvent], *, blobs: Sequence[bytes] = ()) -> list[int]:
        """Append new events (recorded now) in one transaction; the position of each (0 for an id it holds)."""
        now = epoch_us(datetime.now(UTC))
        rows = []
        for e in events:
            try:
                payload = encode_payload(e.payload)
                tag = type_of(e.payload)
            except (TypeError, AttributeError) as exc:
                raise TypeError(f"a payload is not a store event ({exc}); nothing of this batch was written") from None
            rows.append(LogRow(0, e.event_id, e.stream_id, 0, tag, e.run_id, now, payload, ""))
        stored = [(digest(b), zlib.compress(b, 6), CODEC, len(b)) for b in blobs]
        return self.append_rows(rows, stored)

    def append_rows(
        self,
        rows: Sequence[LogRow],
        blobs: Sequence[BlobRow] = (),
        marker: Callable[[int], NewEvent | None] | None = None,
        where: str = "the batch",
    ) -> list[int]:
        """Append rows of a segment in one transaction: each gets the log's next position, its stream's next
        sequence and its link of the chain; its id, stream, type, run, time and payload bytes are kept. An id the
        log holds with the same bytes is skipped (position 0), with other bytes the batch stops (Conflict).
        `marker(n)`, given how many rows were new, is one more event for the same transaction (`segment.shipped`)."""
        return self._guard(lambda: self._append_rows(rows, blobs, marker, where))  # type: ignore[no-any-return]

    def _append_rows(
        self, rows: Sequence[LogRow], blobs: Sequence[BlobRow], marker: Callable[[int], NewEvent | None] | None,
        where: str,
    ) -> list[int]:
        con = self._con
        # everything of a row but its position, sequence and hash, made before the head is taken: while this
        # transaction holds it, every other writer waits
        parts = {r.event_id: _copy_parts(r) for r in rows}
        ids = "{" + ",".join(map(str, parts)) + "}"
        head = con.execute("SELECT position, hash FROM head FOR UPDATE").fetchone()
        assert head is not None  # created with the schema
        position, prev = int(head[0]), str(head[1])
        first = position + 1
        held = {
            eid: (int(pos), sid, tag, run, str(payload).encode())
            for pos, eid, sid, tag, run, payload in con.execute(
                "SELECT position, event_id, stream_id, type, run_id, payload::text FROM events "
                "WHERE event_id = ANY(%s::uuid[])", [ids]).fetchall()
        }
        fresh: list[LogRow] = []
        positions: list[int] = []
        seen: set[uuid.UUID] = set()
        for r in rows:
            known = held.get(r.event_id)
            if known is not None:
                if known[1:] != (r.stream_id, r.type, r.run_id, r.payload):
                    raise Conflict(f"event {r.event_id}: the log holds it at position {known[0]} with other bytes "
                                   f"than {where} (position {r.position}); nothing of this batch was written")
                positions.append(0)
            elif r.event_id in seen:
                positions.append(0)
            else:
                seen.add(r.event_id)
                fresh.append(r)
                positions.append(first + len(fresh) - 1)
        extra = marker(len(fresh)) if marker is not None else None
        if extra is not None:
            fresh.append(LogRow(0, extra.event_id, extra.stream_id, 0, type_of(extra.payload), extra.run_id,
                                epoch_us(datetime.now(UTC)), encode_payload(extra.payload), ""))
            parts[extra.event_id] = _copy_parts(fresh[-1])
        if not fresh and not blobs:
            return positions
        streams = sorted({r.stream_id for r in fresh})
        seqs: dict[str, int] = {
            sid: int(seq) for sid, seq in con.execute(
                "SELECT stream_id, max(stream_seq) FROM events WHERE stream_id = ANY(%s) GROUP BY stream_id",
                [streams]).fetchall()
        }
        if blobs:
            have = {r[0] for r in con.execute(
                "SELECT sha256 FROM blobs WHERE sha256 = ANY(%s)", [[b[0] for b in blobs]]).fetchall()}
            new_blobs = {b[0]: b for b in blobs if b[0] not in have}
            if new_blobs:
                with con.cursor() as cur:
                    cur.executemany("INSERT INTO blobs VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                                    [(*b, first) for b in new_blobs.values()])
        if not fresh:
            return positions
        lines: list[bytes] = []
        for r in fresh:
            position += 1
            seq = seqs.get(r.stream_id, -1) + 1
            seqs[r.stream_id] = seq
            prev = row_hash(prev, position, r.event_id, r.stream_id, seq, r.type, r.run_id, r.recorded_at_us,
                            r.payload)
            before, after = parts[r.event_id]
            lines.append(b"%d%s%d%s%s\n" % (position, before, seq, after, prev.encode()))
        with con.cursor() as cur, cur.copy(f"COPY events ({_COLUMNS}) FROM STDIN") as copy:
            copy.write(b"".join(lines))
        con.execute("UPDATE head SET position = %s, hash = %s", [position, prev])
        return positions

    def put_blob(self, data: bytes) -> str:
        """Store content once (by sha256), compressed; returns the digest."""
        self.append([], blobs=[data])
        return digest(data)

    # -- reading -------------------------------------------------------------------------------------------------
    def rows(self, after: int, limit: int) -> tuple[list[LogRow], list[BlobRow]]:
        """Up to `limit` rows after position `after`, and the blobs added with them, from one snapshot."""
        def pull() -> tuple[list[LogRow], list[BlobRow]]:
            self._con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            got = [
                LogRow(int(p), eid, sid, int(seq), tag, run, int(ts), payload.encode(), h)
                for p, eid, sid, seq, tag, run, ts, payload, h in self._con.execute(
                    _ROWS + "WHERE position > %s ORDER BY position LIMIT %s", [after, limit]).fetchall()
            ]
            if not got:
                return got, []
            blobs = [(str(s), bytes(b), str(c), int(n)) for s, b, c, n in self._con.execute(
                "SELECT sha256, bytes, codec, n_bytes FROM blobs WHERE position > %s AND position <= %s",
                [after, got[-1].position]).fetchall()]
            return got, blobs
        return self._guard(pull)  # type: ignore[no-any-return]

    def read(self, start: int = 1, stop: int | None = None, *, batch_size: int = 5_000) -> Iterator[StoredEvent]:
        """Events in position order, decoded, a batch at a time."""
        after = start - 1
        while True:
            rows, _ = self.rows(after, batch_size if stop is None else min(batch_size, stop - 1 - after))
            if not rows:
                return
            for r in rows:
                yield StoredEvent(position=r.position, event_id=r.event_id, stream_id=r.stream_id,
                                  stream_seq=r.stream_seq, type=r.type, run_id=r.run_id,
                                  recorded_at=_EPOCH + timedelta(microseconds=r.recorded_at_us),
                                  payload=decode_payload(r.payload), hash=r.hash)
            after = rows[-1].position
            if stop is not None and after >= stop - 1:
                return

    def hash_at(self, position: int) -> str | None:
        """The hash of the event at `position`; None when the log does not reach it."""
        row = self._guard(lambda: self._con.execute(
            "SELECT hash FROM events WHERE position = %s", [position]).fetchone())
        return None if row is None else str(row[0])

    def last_payload(self, stream_id: str) -> bytes | None:
        """The payload of a stream's last event (a segment's last `segment.shipped` marker)."""
        row = self._guard(lambda: self._con.execute(
            "SELECT payload::text FROM events WHERE stream_id = %s ORDER BY stream_seq DESC LIMIT 1",
            [stream_id]).fetchone())
        return None if row is None else str(row[0]).encode()

    def get_blob(self, sha256: str) -> bytes:
        row = self._guard(lambda: self._con.execute(
            "SELECT bytes, codec FROM blobs WHERE sha256 = %s", [sha256]).fetchone())
        if row is None:
            raise KeyError(f"blob {sha256} is not in the log")
        data = zlib.decompress(bytes(row[0])) if row[1] == CODEC else bytes(row[0])
        if digest(data) != sha256:
            raise StoreError(f"{self.name}: blob {sha256[:16]}: its bytes do not match its digest")
        return data

    def has_blob(self, sha256: str) -> bool:
        return self._guard(lambda: self._con.execute(  # type: ignore[no-any-return]
            "SELECT 1 FROM blobs WHERE sha256 = %s", [sha256]).fetchone() is not None)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> CentralLog:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
