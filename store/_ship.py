"""A segment shipped to the central PostgreSQL log, and the log pulled into a replica (docs/how-to/scale.md).

Shipping: the segment's committed events in position order, a batch per transaction of the central log, each
batch with its `segment.shipped` marker in the same transaction. The last marker of a segment is where a
restarted (or killed) shipper resumes: a batch either committed with its marker or left nothing, so nothing is
lost or shipped twice; an event id the log already holds (the same bytes) is skipped besides.
Pulling: the log's rows after the replica's head, with their positions, sequences, times and hashes, into an
ordinary store (`EventLog.extend` checks they continue its chain), so `verify` there checks the global chain.

psycopg is loaded only when a log is opened (`central`), never by importing this module.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import msgspec
import structlog

from searchtrace.store._blobs import CODEC, digest
from searchtrace.store._errors import BadInput, StoreError
from searchtrace.store._events import NewEvent, SegmentShipped, segment_stream
from searchtrace.store._log import EventLog
from searchtrace.store._rows import LogRow
from searchtrace.store._schema import row_hash
from searchtrace.store._verify import NAMED_DIGEST, require_intact

if TYPE_CHECKING:
    from searchtrace.store._postgres import BlobRow, CentralLog

BATCH = 5_000  # events per central transaction
PULL = 20_000  # rows per replica transaction
EVERY_S = 1.0  # `--ship-to`: a batch every second while the run records
_log = structlog.get_logger("searchtrace.ship")
_DIGEST = re.compile(NAMED_DIGEST.encode())  # any sha256 a payload names: content, raw reply, message and tool blobs


class Shipped(msgspec.Struct, kw_only=True):
    """What one shipping pass did: batches committed, events new to the log, events it already held, the local
    position shipped through and the log's head after it."""

    segment_id: str
    host: str
    batches: int = 0
    events: int = 0
    skipped: int = 0
    through: int = 0
    central_head: int = 0


class Pulled(msgspec.Struct, kw_only=True):
    """What one replica pass did: rows and blobs added, the replica's head after it."""

    events: int = 0
    blobs: int = 0
    head: int = 0


def central(url: str, application: str = "searchtrace") -> CentralLog:
    """Open the central log, naming the extra when psycopg is not installed."""
    try:
        from searchtrace.store._postgres import CentralLog
    except ImportError:
        raise BadInput("a PostgreSQL log needs the postgres extra: pip install 'searchtrace[postgres]'") from None
    return CentralLog(url, application=application)


def _local_rows(log: EventLog, after: int, upto: int) -> list[LogRow]:
    cur = log.cursor()
    try:
        return [
            LogRow(int(p), eid if isinstance(eid, uuid.UUID) else uuid.UUID(str(eid)), sid, int(seq), tag, run,
                   int(ts), payload.encode(), h)
            for p, eid, sid, seq, tag, run, ts, payload, h in cur.execute(
                "SELECT position, event_id, stream_id, stream_seq, type, run_id, epoch_us(recorded_at), "
                "CAST(payload AS VARCHAR), hash FROM events WHERE position > ? AND position <= ? ORDER BY position",
                [after, upto]).fetchall()
        ]
    finally:
        cur.close()


def _local_blobs(log: EventLog, rows: list[LogRow]) -> list[BlobRow]:
    """The stored blobs the rows' payloads name, as stored (compressed), to travel with them."""
    named = {m.decode() for r in rows for m in _DIGEST.findall(r.payload)}
    if not named:
        return []
    cur = log.cursor()
    try:
        found = cur.execute("SELECT sha256, bytes, codec, n_bytes FROM blobs WHERE sha256 IN (SELECT unnest(?::VARCHAR[]))",
                            [sorted(named)]).fetchall()
    finally:
        cur.close()
    return list({str(s): (str(s), bytes(b), str(c), int(n)) for s, b, c, n in found}.values())


def copy_events(log: EventLog, positions: Sequence[int], into: EventLog) -> int:
    """Append the events at `positions` of `log`, and the blobs they name, to the empty store `into`, each keeping its
    event id, stream, type, run, recorded time and payload bytes (merging it back is a no-op); returns how many.

    docs/how-to/scale.md `judge --ray`: the part of a store a judge shard on another machine needs, as a store of its own."""
    if into.head:
        raise StoreError(f"{into.path}: holds {into.head} events; events are copied into an empty store")
    cur = log.cursor()
    try:
        found = cur.execute(
            "SELECT event_id, stream_id, type, run_id, epoch_us(recorded_at), CAST(payload AS VARCHAR) FROM events "
            "WHERE position IN (SELECT unnest(?::BIGINT[])) ORDER BY position", [list(positions)]).fetchall()
    finally:
        cur.close()
    rows: list[LogRow] = []
    position, prev = 0, into.head_hash  # `into` is empty (checked above)
    heads: dict[str, int] = {}
    for eid, sid, tag, run, ts, text in found:
        event_id = eid if isinstance(eid, uuid.UUID) else uuid.UUID(str(eid))
        payload, position, seq = text.encode(), position + 1, heads.get(sid, -1) + 1
        heads[sid] = seq
        prev = row_hash(prev, position, event_id, sid, seq, tag, run, int(ts), payload)
        rows.append(LogRow(position, event_id, sid, seq, tag, run, int(ts), payload, prev))
    named = sorted({m.decode() for r in rows for m in _DIGEST.findall(r.payload)})
    into.extend(rows, [log.get_blob(d) for d in named if log.has_blob(d)])
    return len(rows)


def resume_point(log: EventLog, log_central: CentralLog, segment_id: str) -> int:
    """The local position through which the central log holds this segment (its last marker), checked against the
    file: the event there must be the one shipped."""
    raw = log_central.last_payload(segment_stream(segment_id))
    if raw is None:
        return 0
    marker = msgspec.json.decode(raw, type=SegmentShipped)
    rows = _local_rows(log, marker.last - 1, marker.last)
    if not rows or rows[0].hash != marker.head_hash:
        raise StoreError(f"{log.path}: {log_central.name} holds segment {segment_id} through local position "
                         f"{marker.last} (hash {marker.head_hash[:16]}), which this file does not have; "
                         "it is not the file that was shipped")
    return marker.last


def ship(log: EventLog, log_central: CentralLog, *, batch: int = BATCH) -> Shipped:
    """Ship every committed event of the segment the log does not hold yet, a batch per transaction."""
    seg = log.segment
    if seg is None:
        raise StoreError(f"{log.path}: the store has no segment id; open it for writing once (e.g. `searchtrace "
                         "ship` without another process on it)")
    segment_id, host = seg
    out = Shipped(segment_id=segment_id, host=host)
    done = resume_point(log, log_central, segment_id)
    out.through = done
    head = log.head
    if done < head:  # nothing is sent unless every event to send continues the chain and every blob matches
        cur = log.cursor()
        try:
            require_intact(cur, log.path, "nothing was shipped (repair the segment or ship another)", (done, head))
        finally:
            cur.close()
    while done < head:
        rows = _local_rows(log, done, min(done + batch, head))
        if not rows:
            break
        first, last = rows[0].position, rows[-1].position

        def marker(n: int, first: int = first, last: int = last, h: str = rows[-1].hash) -> NewEvent:
            return NewEvent(stream_id=segment_stream(segment_id), run_id="",
                            payload=SegmentShipped(segment_id=segment_id, host=host, first=first, last=last,
                                                   head_hash=h, events=n))

        positions = log_central.append_rows(rows, _local_blobs(log, rows), marker,
                                            where=f"segment {segment_id} ({host})")
        new = sum(1 for p in positions if p)
        _log.info("shipped batch", log=log_central.name, segment=segment_id, first=first, last=last, new=new)
        out.batches += 1
        out.events += new
        out.skipped += len(rows) - new
        done = out.through = last
    out.central_head = log_central.head
    return out


class Shipper:
    """Ships a recording store's committed events every second on a thread of its own (`--ship-to`)."""

    def __init__(self, log: EventLog, url: str, *, every_s: float = EVERY_S) -> None:
        self.log = log
        self.central = central(url, "searchtrace ship")
        self.every_s = every_s
        self.error: BaseException | None = None
        self.total = Shipped(segment_id="", host="")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="searchtrace-ship", daemon=True)
        self._thread.start()

    def _pass(self) -> None:
        got = ship(self.log, self.central)
        t = self.total
        t.segment_id, t.host, t.through, t.central_head = got.segment_id, got.host, got.through, got.central_head
        t.batches += got.batches
        t.events += got.events
        t.skipped += got.skipped

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                self._pass()
        except BaseException as exc:  # kept for `stop`, which raises it in the caller's thread
            self.error = exc

    def abandon(self) -> None:
        """Stop without a last pass (the block failed); what the thread committed stays, the next run ships the rest."""
        self._stop.set()
        self._thread.join()
        self.central.close()

    def stop(self) -> Shipped:
        """Ship what is still committed and not shipped, then close; an error of the thread is raised here."""
        self._stop.set()
        self._thread.join()
        try:
            if self.error is not None:
                raise self.error
            self._pass()
        finally:
            self.central.close()
        return self.total


@contextmanager
def shipping(log: EventLog, url: str | None) -> Iterator[Callable[[], Shipped | None]]:
    """Ship the log to `url` every second while the block runs and the rest at its end (nothing when None); yields
    what was shipped (None before the end or without a URL)."""
    if url is None:
        yield lambda: None
        return
    shipper = Shipper(log, url)
    result: list[Shipped] = []
    try:
        yield lambda: result[0] if result else None
    except BaseException:
        shipper.abandon()
        raise
    result.append(shipper.stop())


def require_replica(log_central: CentralLog, log: EventLog) -> None:
    """BadInput unless the store is empty or a replica of this very log: its last event is the log's event at that
    position (same hash, so the same chain up to it). An ordinary store, or another log's replica, stays as it was."""
    if not log.head:
        return
    theirs = log_central.hash_at(log.head)
    if theirs != log.head_hash:
        found = (f"the log holds only {log_central.head} events" if theirs is None
                 else f"the log's event at that position has hash {theirs[:16]}")
        raise BadInput(f"{log.path}: not a replica of {log_central.name}: it holds {log.head} events (last hash "
                       f"{log.head_hash[:16]}) and {found}; pull into a new or empty --db")


def pull(log_central: CentralLog, log: EventLog, *, batch: int = PULL) -> Pulled:
    """Bring the replica up to the log's head: rows after its own head, a transaction per batch."""
    require_replica(log_central, log)
    out = Pulled(head=log.head)
    while True:
        rows, blobs = log_central.rows(log.head, batch)
        if not rows:
            return out
        data = []
        for sha, raw, codec, _ in blobs:
            content = zlib.decompress(raw) if codec == CODEC else raw
            if digest(content) != sha:
                raise StoreError(f"{log_central.name}: blob {sha[:16]}: its bytes do not match its digest")
            data.append(content)
        log.extend(rows, data)
        _log.info("pulled", log=log_central.name, first=rows[0].position, last=rows[-1].position, blobs=len(data))
        out.events += len(rows)
        out.blobs += len(data)
        out.head = log.head


def follow(log_central: CentralLog, log: EventLog, *, every_s: float = EVERY_S,
           on_pull: Callable[[Pulled], None] | None = None, stop: threading.Event | None = None) -> Pulled:
    """Pull until stopped (Ctrl-C, or `stop` set), waiting `every_s` between passes that found nothing."""
    total = Pulled(head=log.head)
    while stop is None or not stop.is_set():
        got = pull(log_central, log)
        total.events += got.events
        total.blobs += got.blobs
        total.head = log.head
        if on_pull is not None and got.events:
            on_pull(got)
        if not got.events:
            if stop is not None:
                stop.wait(every_s)
            else:
                time.sleep(every_s)
    return total
