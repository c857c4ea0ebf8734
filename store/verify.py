"""Walk the whole log inside DuckDB: positions gap-free from 1, stream_seq consecutive, every hash recomputed.

Each check is one streaming query that carries no payload through a sort (the chain check joins every row to
its predecessor's stored hash), so a log of millions of events verifies without loading it into memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from searchtrace.store.schema import GENESIS, sql_hash_input

_DUPLICATE = "SELECT position, count(*) FROM events GROUP BY position HAVING count(*) > 1 ORDER BY position LIMIT 1"
_GAP = """
SELECT rn, position FROM (SELECT position, row_number() OVER (ORDER BY position) AS rn FROM events)
WHERE position <> rn ORDER BY rn LIMIT 1
"""
_SEQ = """
SELECT position, stream_id, stream_seq, rn - 1 FROM (
  SELECT position, stream_id, stream_seq, row_number() OVER (PARTITION BY stream_id ORDER BY position) AS rn
  FROM events)
WHERE stream_seq <> rn - 1 ORDER BY position LIMIT 1
"""
# Each row against its predecessor's stored hash: the first row that fails is where the chain breaks.
_CHAIN = f"""
SELECT e.position FROM events AS e
LEFT JOIN (SELECT position + 1 AS next, hash AS prev_hash FROM events) AS p ON p.next = e.position
WHERE e.hash <> sha256({sql_hash_input(f"coalesce(p.prev_hash, '{GENESIS}')", "e")})
ORDER BY e.position LIMIT 1
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
            return (
                f"ok: {self.events} events in {self.streams} streams, positions 1..{self.events} gap-free, "
                f"hash chain intact (head {self.head_hash[:16]})"
            )
        return f"broken at position {self.broken_at}: {self.problem}"


def verify(con: duckdb.DuckDBPyConnection) -> Report:
    """Check the events table through an open connection; the first (lowest) broken position wins."""
    n, streams, head = con.execute(
        "SELECT count(*), count(DISTINCT stream_id), arg_max(hash, position) FROM events"
    ).fetchone() or (0, 0, None)
    found: list[tuple[int, int, str]] = []  # (position, priority, problem)
    dup = con.execute(_DUPLICATE).fetchone()
    if dup:
        found.append((dup[0], 0, f"position {dup[0]} appears {dup[1]} times"))
    gap = con.execute(_GAP).fetchone()
    if gap:
        rn, position = gap
        if position > rn:
            found.append((rn, 1, f"position {rn} is missing (the row after position {rn - 1} has position {position})"))
        else:
            found.append((position, 1, f"position {position} is out of order"))
    seq = con.execute(_SEQ).fetchone()
    if seq:
        found.append((seq[0], 2, f"stream {seq[1]!r} has stream_seq {seq[2]} where {seq[3]} was due"))
    chain = con.execute(_CHAIN).fetchone()
    if chain:
        found.append((chain[0], 3, "hash mismatch: the row or the one before it was changed after it was written"))
    base = Report(events=int(n), streams=int(streams), head_hash=head or GENESIS)
    if not found:
        return base
    at, _, problem = min(found)
    return Report(base.events, base.streams, base.head_hash, broken_at=int(at), problem=problem)
