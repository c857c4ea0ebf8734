"""Walk the whole log inside DuckDB: positions gap-free from 1, stream_seq consecutive, every hash recomputed,
the recorded head (last position and hash) reached, and every blob's bytes against its digest.

Each check is one streaming query that carries no payload through a sort (the chain check joins every row to
its predecessor's stored hash), so a log of millions of events verifies without loading it into memory.
What it cannot see: a rewrite that recomputes every later hash and the head row too (there is no secret in the
chain); compare the head hash it prints with one kept elsewhere to catch that.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass

from searchtrace.store._blobs import CODEC
from searchtrace.store._cursor import Cursor
from searchtrace.store._schema import GENESIS, HEAD_KEY, sql_hash_input

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


# Every blob an event names must be stored (fetched pages, raw replies); request_sha256 names no blob.
_MISSING_BLOB = """
SELECT position, d FROM (
  SELECT position, unnest([json_extract_string(payload, '$.content_digest'), json_extract_string(payload, '$.raw_digest')]) AS d
  FROM events WHERE type IN ('fetch.completed', 'search.completed', 'model.responded', 'judge.verdict'))
WHERE d IS NOT NULL AND d NOT IN (SELECT sha256 FROM blobs) ORDER BY position LIMIT 1
"""


def _head_problem(con: Cursor, n: int, last: str | None) -> tuple[int, str] | None:
    """(position, problem) when the events do not reach the head the appends recorded; None when they do."""
    row = con.execute("SELECT value FROM searchtrace_meta WHERE key = ?", [HEAD_KEY]).fetchone()
    if row is None:
        return None  # a store from before heads were recorded: its next append records one
    pos_text, _, hash_ = str(row[0]).partition(":")
    try:
        pos = int(pos_text)
    except ValueError:
        return (n + 1, f"the recorded head {str(row[0])[:40]!r} is not <position>:<hash>")
    if n < pos:
        return (n + 1, f"the log ends at position {n} but {pos} events were appended: the last "
                       f"{pos - n} were deleted")
    if n > pos:
        return (pos + 1, f"events after position {pos} were not appended by searchtrace")
    if (last or GENESIS) != hash_:
        return (n, "the last event is not the one appended last (its hash differs from the recorded head)")
    return None


def _blob_problem(con: Cursor) -> tuple[int, str] | None:
    """(position, problem) for the first event whose blob is missing; (0, problem) for a blob whose bytes changed."""
    missing = con.execute(_MISSING_BLOB).fetchone()
    cur = con.cursor()
    try:
        cur.execute("SELECT sha256, bytes, codec, n_bytes FROM blobs")
        while rows := cur.fetchmany(1000):
            for sha, raw, codec, n_bytes in rows:
                try:
                    data = zlib.decompress(bytes(raw)) if codec == CODEC else bytes(raw)
                except zlib.error:
                    data = None
                if data is None or hashlib.sha256(data).hexdigest() != sha or len(data) != n_bytes:
                    return (0, f"blob {sha[:16]}: its bytes do not match its digest (changed after it was written)")
    finally:
        cur.close()
    if missing:
        return (int(missing[0]), f"blob {str(missing[1])[:16]} named by this event is not in the store")
    return None


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
        if self.broken_at == 0:
            return f"broken: {self.problem}"
        return f"broken at position {self.broken_at}: {self.problem}"


def verify(con: Cursor) -> Report:
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
    if not found:
        head_problem = _head_problem(con, int(n), head)
        if head_problem:
            found.append((head_problem[0], 4, head_problem[1]))
    blob_problem = _blob_problem(con)
    if blob_problem:
        found.append((blob_problem[0], 5, blob_problem[1]))
    base = Report(events=int(n), streams=int(streams), head_hash=head or GENESIS)
    if not found:
        return base
    at, _, problem = min(found)
    return Report(base.events, base.streams, base.head_hash, broken_at=int(at), problem=problem)
