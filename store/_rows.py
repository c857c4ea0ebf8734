"""The rows of one chunk: column lists, the running hash chain over them, and their Arrow table."""

from __future__ import annotations

import array
import hashlib
import uuid
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING

import msgspec

from searchtrace.store._arrow import ints, json_strings, strings, uuids
from searchtrace.store._events import PAYLOAD_TYPES, TYPE_NAMES, NewEvent, _encoder

if TYPE_CHECKING:
    import pyarrow as pa

TAGS: dict[type, str] = dict(zip(PAYLOAD_TYPES, TYPE_NAMES, strict=True))  # payload struct -> its `type`


def _table(position: array.array[int], ids: bytes, streams: Sequence[str], seqs: Sequence[int], types: Sequence[str],
           runs: Sequence[str], stamps: array.array[int], payloads: Sequence[bytes], hashes: Sequence[str]) -> pa.Table:
    """The Arrow table of rows in the events layout."""
    import pyarrow as pa

    n = len(position)
    return pa.table({
        "position": ints(position, pa.int64(), "q"),
        "event_id": uuids(ids, n),
        "stream_id": strings(streams),
        "stream_seq": ints(seqs, pa.int32(), "i"),
        "type": strings(types),
        "run_id": strings(runs),
        "recorded_at": ints(stamps, pa.timestamp("us", tz="UTC"), "q"),
        "payload": json_strings(payloads),
        "hash": strings(hashes),
    })


class LogRow(msgspec.Struct, array_like=True, frozen=True):
    """One stored row in the form the chain hashes it (recorded_at in microseconds since the epoch, the payload
    its stored JSON bytes): what moves between a segment, the central log and a replica (docs/how-to/scale.md)."""

    position: int
    event_id: uuid.UUID
    stream_id: str
    stream_seq: int
    type: str
    run_id: str
    recorded_at_us: int
    payload: bytes
    hash: str


def rows_table(rows: Sequence[LogRow]) -> pa.Table:
    """The Arrow table of rows that already have positions, sequences, times and hashes, in the events layout."""
    return _table(
        array.array("q", [r.position for r in rows]), b"".join(r.event_id.bytes for r in rows),
        [r.stream_id for r in rows], [r.stream_seq for r in rows], [r.type for r in rows], [r.run_id for r in rows],
        array.array("q", [r.recorded_at_us for r in rows]), [r.payload for r in rows], [r.hash for r in rows],
    )


class Columns:
    """Column lists of the rows of one chunk."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.ids: list[str] = []  # 32 hex digits (hashed, then packed into one arrow.uuid buffer)
        self.streams: list[str] = []
        self.seqs: list[int] = []
        self.types: list[str] = []
        self.runs: list[str] = []
        self.payloads: list[bytes] = []
        self.hashes: list[str] = []
        self.stamps: list[int] | None = None  # each row's own recorded_at (µs), when rows carry it (a merge)

    def table(self, recorded_at_us: int) -> pa.Table:
        n = len(self.ids)
        return _table(
            array.array("q", range(self.first, self.first + n)), bytes.fromhex("".join(self.ids)), self.streams,
            self.seqs, self.types, self.runs,
            array.array("q", (recorded_at_us,)) * n if self.stamps is None else array.array("q", self.stamps),
            self.payloads, self.hashes,
        )


def fill(
    cols: Columns, part: Sequence[NewEvent], heads: dict[str, int], ahead: dict[str, int], base: dict[str, int]
) -> None:
    """Append a slice of events to the chunk's columns (everything but the hash)."""
    encode, tags = _encoder.encode, TAGS
    bodies = [e.payload for e in part]
    cols.types += [tags[type(b)] for b in bodies]
    cols.payloads += [encode(b) for b in bodies]
    cols.ids += [e.event_id.hex for e in part]
    sids = [e.stream_id for e in part]
    cols.streams += sids
    cols.runs += [e.run_id for e in part]
    seqs = cols.seqs
    for sid in sids:
        seq = heads.get(sid)
        if seq is None:
            seq = ahead.get(sid)
            if seq is None:
                seq = base.get(sid, -1)
        seq += 1
        heads[sid] = seq
        seqs.append(seq)


class Chain:
    """The running hash chain: sha256 over the previous hash and every column of the row (see schema.row_hash)."""

    def __init__(self, prev: str, recorded_at: str) -> None:
        self.prev = prev
        self.ts = recorded_at

    def seal(self, cols: Columns) -> None:
        """Compute the hashes of the rows of `cols` that have none yet (each at its own recorded_at when it has one)."""
        sha256, prev = hashlib.sha256, self.prev
        start = len(cols.hashes)
        add = cols.hashes.append
        position = cols.first + start
        stamps = repeat(self.ts, len(cols.ids) - start) if cols.stamps is None else map(str, cols.stamps[start:])
        for hx, sid, seq, tag, run, payload, ts in zip(
            cols.ids[start:], cols.streams[start:], cols.seqs[start:], cols.types[start:], cols.runs[start:],
            cols.payloads[start:], stamps, strict=True,
        ):
            h = sha256(f"{prev}\x1f{position}\x1f{hx}\x1f{sid}\x1f{seq}\x1f{tag}\x1f{run}\x1f{ts}\x1f".encode())
            h.update(payload)  # cheaper than concatenating ~600 bytes first
            prev = h.hexdigest()
            add(prev)
            position += 1
        self.prev = prev
