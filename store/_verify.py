"""Walk the whole log inside DuckDB: positions gap-free from 1, stream_seq consecutive, every hash recomputed,
the recorded head (last position and hash) reached, and every blob's bytes against its digest.

Each check is a query over one span of SPAN positions at a time that carries no payload through a sort (the chain
check joins every row to its predecessor's stored hash), so a log of millions of events verifies in memory bounded
by the span, not by the log.
What it cannot see: a rewrite that recomputes every later hash and the head row too (there is no secret in the
chain); compare the head hash it prints with one kept elsewhere to catch that.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from pathlib import Path

from searchtrace.store._blobs import CODEC
from searchtrace.store._cursor import Cursor
from searchtrace.store._errors import BadInput
from searchtrace.store._schema import GENESIS, HEAD_KEY, sql_hash_input

SPAN = 100_000  # positions one check reads at a time: memory bounded whatever the log's size

# The checks of one span (after, upto] of positions. Spans are checked in order and the first that breaks is
# reported, so each check may assume every position up to `after` is present once and every stream's events before
# it numbered consecutively (counted in the temporary table SEQ_STATE): what the span's own rows then show is
# exactly what one query over the whole log would show first.
_DUPLICATE = """
SELECT position, count(*) FROM events WHERE position > $after AND position <= $upto
GROUP BY position HAVING count(*) > 1 ORDER BY position LIMIT 1
"""
_GAP = """
SELECT rn, position FROM (
  SELECT position, $after + row_number() OVER (ORDER BY position) AS rn FROM events
  WHERE position > $after AND position <= $upto)
WHERE position <> rn ORDER BY rn LIMIT 1
"""
SEQ_STATE = "searchtrace_verify_seq"  # stream_id -> its events before the span
_SEQ = f"""
SELECT e.position, e.stream_id, e.stream_seq, coalesce(s.n, 0) + e.rn - 1 FROM (
  SELECT position, stream_id, stream_seq, row_number() OVER (PARTITION BY stream_id ORDER BY position) AS rn
  FROM events WHERE position > $after AND position <= $upto) AS e
LEFT JOIN {SEQ_STATE} AS s USING (stream_id)
WHERE e.stream_seq <> coalesce(s.n, 0) + e.rn - 1 ORDER BY e.position LIMIT 1
"""
_SEQ_COUNT = f"""
INSERT OR REPLACE INTO {SEQ_STATE}
SELECT c.stream_id, coalesce(s.n, 0) + c.k FROM (
  SELECT stream_id, count(*) AS k FROM events WHERE position > $after AND position <= $upto GROUP BY stream_id) AS c
LEFT JOIN {SEQ_STATE} AS s USING (stream_id)
"""
# Each row of the span (after, upto] against its predecessor's stored hash: the first row that fails is where the
# chain breaks.
_CHAIN = f"""
SELECT e.position FROM events AS e
LEFT JOIN (SELECT position + 1 AS next, hash AS prev_hash FROM events WHERE position >= $after AND position < $upto)
  AS p ON p.next = e.position
WHERE e.position > $after AND e.position <= $upto
  AND e.hash IS DISTINCT FROM sha256({sql_hash_input(f"coalesce(p.prev_hash, '{GENESIS}')", "e")})
ORDER BY e.position LIMIT 1
"""
_SPAN_GAP = "SELECT count(*), min(position), max(position) FROM events WHERE position > $after AND position <= $upto"


# Every blob an event names must be stored (fetched pages, raw replies); request_sha256 names no blob.
_MISSING_BLOB = """
SELECT position, d FROM (
  SELECT position, unnest([json_extract_string(payload, '$.content_digest'), json_extract_string(payload, '$.raw_digest')]) AS d
  FROM events WHERE type IN ('fetch.completed', 'search.completed', 'model.responded', 'judge.verdict')
    AND position > $after AND position <= $upto)
WHERE d IS NOT NULL AND d NOT IN (SELECT sha256 FROM blobs) ORDER BY position LIMIT 1
"""
# Any sha256 the span's payloads name (content, raw reply, message and tool blobs): the blobs that travel with them.
NAMED_DIGEST = r'"([0-9a-f]{64})"'
_BLOBS_ALL = "SELECT sha256, bytes, codec, n_bytes FROM blobs"
_BLOBS_NAMED = f"""
SELECT sha256, bytes, codec, n_bytes FROM blobs WHERE sha256 IN (
  SELECT unnest(regexp_extract_all(CAST(payload AS VARCHAR), '{NAMED_DIGEST}', 1)) FROM events
  WHERE position > $after AND position <= $upto)
"""


def _head_problem(con: Cursor, upto: int, last: str | None, *, growing: bool = False) -> tuple[int, str] | None:
    """(position, problem) when the events through `upto` (the last one, hash `last`) do not reach the head the
    appends recorded; None when they do (or, `growing`, when the head is beyond: appended since `upto` was read)."""
    row = con.execute("SELECT value FROM searchtrace_meta WHERE key = ?", [HEAD_KEY]).fetchone()
    if row is None:
        return None  # a store from before heads were recorded: its next append records one
    pos_text, _, hash_ = str(row[0]).partition(":")
    try:
        pos = int(pos_text)
    except ValueError:
        return (upto + 1, f"the recorded head {str(row[0])[:40]!r} is not <position>:<hash>")
    if upto < pos:
        return None if growing else (upto + 1, f"the log ends at position {upto} but {pos} events were "
                                               f"appended: the last {pos - upto} were deleted")
    if upto > pos:
        return (pos + 1, f"events after position {pos} were not appended by searchtrace")
    if (last or GENESIS) != hash_:
        return (upto, "the last event is not the one appended last (its hash differs from the recorded head)")
    return None


def _blob_problem(con: Cursor, span: dict[str, int] | None = None) -> tuple[int, str] | None:
    """(position, problem) for the first event whose blob is missing; (0, problem) for a blob whose bytes changed.
    Every blob of the store, or with `span` ({after, upto}) the blobs its events name."""
    missing = con.execute(_MISSING_BLOB, span or {"after": 0, "upto": _MAX}).fetchone()
    cur = con.cursor()
    try:
        cur.execute(_BLOBS_ALL if span is None else _BLOBS_NAMED, span or {})
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


_MAX = 2**62  # `upto` of a span that runs to the end of the log

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
    """Check the events table through an open connection, SPAN positions at a time (memory bounded whatever the
    log's size); the first (lowest) broken position wins."""
    n, streams, head, low, high = con.execute(
        "SELECT count(*), count(DISTINCT stream_id), arg_max(hash, position), min(position), max(position) FROM events"
    ).fetchone() or (0, 0, None, None, None)
    found: list[tuple[int, int, str]] = []  # (position, priority, problem)
    if low is not None and low < 1:  # rows before the first span: the lowest of them is the first out of order
        dup = con.execute(_DUPLICATE, {"after": -_MAX, "upto": 0}).fetchone()
        if dup:
            found.append((dup[0], 0, f"position {dup[0]} appears {dup[1]} times"))
        found.append((low, 1, f"position {low} is out of order"))
    elif high is not None:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {SEQ_STATE}(stream_id VARCHAR PRIMARY KEY, n BIGINT NOT NULL)")
        try:
            for after in range(0, high, SPAN):
                found = _span_problems(con, after, min(after + SPAN, high))
                if found:
                    break
        finally:
            con.execute(f"DROP TABLE IF EXISTS {SEQ_STATE}")
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


def _span_problems(con: Cursor, after: int, upto: int) -> list[tuple[int, int, str]]:
    """What breaks in positions (after, upto], every position before being intact: (position, priority, problem)."""
    span = {"after": after, "upto": upto}
    found: list[tuple[int, int, str]] = []
    dup = con.execute(_DUPLICATE, span).fetchone()
    if dup:
        found.append((dup[0], 0, f"position {dup[0]} appears {dup[1]} times"))
    gap = con.execute(_GAP, span).fetchone()
    if gap is None:  # every row in place: the span may still end short (positions missing up to `upto`)
        row = con.execute(_SPAN_GAP, span).fetchone()
        count = int(row[0]) if row else 0
        if count < upto - after:
            following = con.execute("SELECT min(position) FROM events WHERE position > ?", [upto]).fetchone()
            gap = (after + count + 1, following[0]) if following and following[0] is not None else None
    if gap:
        rn, position = gap
        if position > rn:
            found.append((rn, 1, f"position {rn} is missing (the row after position {rn - 1} has position {position})"))
        else:
            found.append((position, 1, f"position {position} is out of order"))
    seq = con.execute(_SEQ, span).fetchone()
    if seq:
        found.append((seq[0], 2, f"stream {seq[1]!r} has stream_seq {seq[2]} where {seq[3]} was due"))
    chain = con.execute(_CHAIN, span).fetchone()
    if chain:
        found.append((chain[0], 3, "hash mismatch: the row or the one before it was changed after it was written"))
    if not found:
        con.execute(_SEQ_COUNT, span)
    return found


def verify_span(con: Cursor, after: int, upto: int) -> Report:
    """Check the events (after, upto] a segment is about to send, while its writer may append: positions gap-free,
    each hash following the stored one before it (from the event at `after`), the recorded head when they reach
    it, and the blobs they name present with bytes matching their digest."""
    span = {"after": after, "upto": upto}
    n, streams, last = con.execute(
        "SELECT count(*), count(DISTINCT stream_id), arg_max(hash, position) FROM events "
        "WHERE position > $after AND position <= $upto", span).fetchone() or (0, 0, None)
    base = Report(events=int(n), streams=int(streams), head_hash=last or GENESIS)
    problem: tuple[int, str] | None = None
    if n != upto - after:
        problem = (after + 1, f"positions {after + 1}..{upto} hold {n} events where {upto - after} were due")
    chain = None if problem else next(
        (row for a in range(after, upto, SPAN)
         if (row := con.execute(_CHAIN, {"after": a, "upto": min(a + SPAN, upto)}).fetchone())), None)
    if chain:
        problem = (int(chain[0]), "hash mismatch: the row or the one before it was changed after it was written")
    problem = problem or _head_problem(con, upto, last, growing=True) or _blob_problem(con, span)
    if problem is None:
        return base
    return Report(base.events, base.streams, base.head_hash, broken_at=problem[0], problem=problem[1])


def require_intact(con: Cursor, path: Path, consequence: str, span: tuple[int, int] | None = None) -> None:
    """BadInput (one line naming the file and where it breaks) unless the store, or the span (after, upto] of it
    about to be sent, verifies: `merge` and `ship` pass on nothing whose chain or blobs do not hold."""
    report = verify(con) if span is None else verify_span(con, *span)
    if not report.ok:
        raise BadInput(f"{path}: {report.line()}; {consequence}")
