"""The rows of one chunk: column lists, the running hash chain over them, and their Arrow table."""

from __future__ import annotations

import array
import hashlib
import uuid
from collections.abc import Sequence
from itertools import accumulate, repeat

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from searchtrace.store._events import PAYLOAD_TYPES, TYPE_NAMES, NewEvent, _encoder

TAGS: dict[type, str] = dict(zip(PAYLOAD_TYPES, TYPE_NAMES, strict=True))  # payload struct -> its `type`
_TS = pa.timestamp("us", tz="UTC")
_JSON = pa.json_(pa.large_string())
_UUID = pa.uuid()
_ONE = pa.scalar(1, pa.int64())


def _pool() -> pa.MemoryPool:
    """jemalloc keeps freed pages for reuse; mimalloc hands them back between batches and re-faults them."""
    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowException):
        return pa.default_memory_pool()


_POOL = _pool()


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
    n, pool = len(rows), _POOL
    offsets = array.array("q", (0,))
    offsets.extend(accumulate(len(r.payload) for r in rows))
    payload = pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(r.payload for r in rows))]
    )
    return pa.table(
        {
            "position": pa.array([r.position for r in rows], pa.int64(), memory_pool=pool),
            "event_id": pa.ExtensionArray.from_storage(
                _UUID, pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(b"".join(r.event_id.bytes for r in rows))])
            ),
            "stream_id": pa.array([r.stream_id for r in rows], pa.string(), memory_pool=pool),
            "stream_seq": pa.array([r.stream_seq for r in rows], pa.int32(), memory_pool=pool),
            "type": pa.array([r.type for r in rows], pa.string(), memory_pool=pool),
            "run_id": pa.array([r.run_id for r in rows], pa.string(), memory_pool=pool),
            "recorded_at": pa.array([r.recorded_at_us for r in rows], _TS, memory_pool=pool),
            "payload": pa.ExtensionArray.from_storage(_JSON, payload),
            "hash": pa.array([r.hash for r in rows], pa.string(), memory_pool=pool),
        }
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
        n, pool = len(self.ids), _POOL
        # msgspec output is valid UTF-8 JSON by construction: one buffer, stored as-is, not re-validated
        offsets = array.array("q", (0,))
        offsets.extend(accumulate(map(len, self.payloads)))
        payload = pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(self.payloads))]
        )
        return pa.table(
            {
                "position": pc.add(pc.cumulative_sum(pa.repeat(_ONE, n)), self.first - 1),
                "event_id": pa.ExtensionArray.from_storage(
                    _UUID, pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(bytes.fromhex("".join(self.ids)))])
                ),
                "stream_id": pa.array(self.streams, pa.string(), memory_pool=pool),
                "stream_seq": pa.array(self.seqs, pa.int32(), memory_pool=pool),
                "type": pa.array(self.types, pa.string(), memory_pool=pool),
                "run_id": pa.array(self.runs, pa.string(), memory_pool=pool),
                "recorded_at": pa.repeat(pa.scalar(recorded_at_us, _TS), n) if self.stamps is None
                else pa.array(self.stamps, _TS),
                "payload": pa.ExtensionArray.from_storage(_JSON, payload),
                "hash": pa.array(self.hashes, pa.string(), memory_pool=pool),
            }
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
