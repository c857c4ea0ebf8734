"""Walk the whole log inside DuckDB: positions gap-free from 1, stream_seq consecutive, every hash recomputed."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from store.schema import GENESIS, SQL_HASH_INPUT

# Each row is checked against its stored predecessor's hash, so the first row that fails is the first break.
_CHECK = f"""
WITH ordered AS (
  SELECT *,
    row_number() OVER (ORDER BY position, hash) AS rn,
    lag(hash, 1, '{GENESIS}') OVER (ORDER BY position, hash) AS prev_hash,
    row_number() OVER (PARTITION BY stream_id ORDER BY position, hash) - 1 AS want_seq,
    count(*) OVER (PARTITION BY position) AS copies
  FROM events
), checked AS (
  SELECT rn, position, stream_id, stream_seq, want_seq, copies, hash,
    sha256({SQL_HASH_INPUT.format(prev="prev_hash")}) AS want_hash
  FROM ordered
)
SELECT rn, position, stream_id, stream_seq, want_seq, copies, hash = want_hash AS hash_ok
FROM checked
WHERE position <> rn OR copies > 1 OR stream_seq <> want_seq OR hash <> want_hash
ORDER BY rn
LIMIT 1
"""


@dataclass(frozen=True)
class Report:
    """Outcome of one verification; `broken_at` is None when the log is intact."""

    events: int
    streams: int
    head_hash: str
    broken_at: int | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.broken_at is None

    def line(self) -> str:
        if self.ok:
            return f"ok: {self.events} events in {self.streams} streams, positions 1..{self.events} gap-free, hash chain intact (head {self.head_hash[:16]})"
        return f"broken at position {self.broken_at}: {self.problem}"


def verify(con: duckdb.DuckDBPyConnection) -> Report:
    """Check the events table of an open connection (any snapshot; the caller's transaction sees one)."""
    n, streams, head = con.execute(
        "SELECT count(*), count(DISTINCT stream_id), arg_max(hash, position) FROM events"
    ).fetchone() or (0, 0, None)
    row = con.execute(_CHECK).fetchone()
    if row is None:
        return Report(events=int(n), streams=int(streams), head_hash=head or GENESIS)
    rn, position, stream_id, seq, want_seq, copies, hash_ok = row
    if copies > 1:
        at, problem = position, f"position {position} appears {copies} times"
    elif position > rn:
        at, problem = rn, f"position {rn} is missing (the row after position {rn - 1} has position {position})"
    elif position < rn:
        at, problem = position, f"position {position} appears twice or out of order (row {rn} of the log)"
    elif seq != want_seq:
        at, problem = position, f"stream {stream_id!r} has stream_seq {seq} where {want_seq} was due"
    else:
        at, problem = position, "hash mismatch: the row or the one before it was changed after it was written"
    if hash_ok is False and position == rn and seq != want_seq:
        problem += "; its hash does not match either"
    return Report(events=int(n), streams=int(streams), head_hash=head or GENESIS, broken_at=int(at), problem=problem)
