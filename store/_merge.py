"""docs/how-to/scale.md merge: append other stores' events (segments) to this one, idempotently by event_id.

Every segment is checked before anything is written: it must be a store whose own chain verifies, and no event_id
it holds may be stored here (or in a segment before it) with other bytes, or as another type or stream. A
trajectory stream with events new here must not exist here yet (one writer per trajectory). Only then is each
segment appended in one transaction of its own: its new events in its position order, each keeping its
`recorded_at`, taking positions, stream sequences and hashes from this log (docs/reference/events.md); its blobs copied by digest.
A conflict therefore appends nothing of the whole merge; a crash between segments leaves whole segments, and
running the merge again appends only what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from searchtrace.store._append import CHUNK_ROWS, head_sql, insert, rollback
from searchtrace.store._cursor import Cursor
from searchtrace.store._errors import BadInput, EventConflict, StoreLocked, shown
from searchtrace.store._events import trajectory_stream
from searchtrace.store._rows import Chain, Columns
from searchtrace.store._schema import first_line, lock_message, open_store, require_database, segment_of
from searchtrace.store._verify import require_intact

MERGED_PREFIX = "merged:"  # searchtrace_meta key merged:<segment_id> -> host, one row per segment merged in


@dataclass(frozen=True)
class Segment:
    """One store given to merge, as its metadata names it."""

    path: Path
    segment_id: str  # "" for a store made before segments, opened read-only (named by its path then)
    host: str

    @property
    def name(self) -> str:
        return f"segment {self.segment_id[:12]} ({self.path})" if self.segment_id else f"segment {self.path}"


@dataclass(frozen=True)
class Merged:
    """What merging one segment did."""

    segment: Segment
    events: int  # events the segment holds
    appended: int  # of them new here
    blobs: int  # blobs copied (new digests)


@dataclass
class Tip:
    """The target log's head, advanced by each segment's transaction."""

    position: int
    hash: str
    streams: dict[str, int]


def open_segments(paths: Sequence[str | Path], target: Path, target_segment: tuple[str, str]) -> list[Segment]:
    """Each path as a segment: a readable store whose chain verifies, not the target, each segment once."""
    out: list[Segment] = []
    for p in paths:
        path = Path(p)
        if path.resolve() == target.resolve():
            raise BadInput(f"{path}: is the store merged into (--into); name other stores")
        require_database(path)
        con = open_store(path, read_only=True)
        try:
            named = segment_of(con, writable=False)
            require_intact(con, path, "repair or leave out this segment")
        except duckdb.IOException as exc:  # a file cut short that opened: its events or blobs cannot be read
            raise BadInput(f"{path}: cannot be read, the file is truncated or damaged ({first_line(str(exc))}); "
                           "repair or leave out this segment") from None
        finally:
            con.close()
        seg = Segment(path, *(named or ("", "")))
        if seg.segment_id and seg.segment_id == target_segment[0]:
            raise BadInput(f"{path}: is the same segment ({seg.segment_id[:12]}) as the store merged into")
        if any(o.segment_id and o.segment_id == seg.segment_id for o in out):
            continue  # the same segment named twice (a copy of the file): merging it once is the same
        out.append(seg)
    return out


def merge(con: duckdb.DuckDBPyConnection, tip: Tip, here: tuple[str, str], segments: Sequence[Segment]) -> list[Merged]:
    """Check every segment, then append each in its own transaction; `tip` is advanced in place."""
    aliases = [f"__seg{i}" for i in range(len(segments))]
    attached: list[str] = []
    try:
        for seg, alias in zip(segments, aliases, strict=True):
            try:
                con.execute(f"ATTACH '{_quoted(seg.path)}' AS {alias} (READ_ONLY)")
            except duckdb.IOException as exc:
                raise StoreLocked(lock_message(seg.path, str(exc))) from None
            attached.append(alias)
        for k in range(len(segments)):
            _check(con, here, segments, aliases, k)
        return [_append_segment(con, tip, seg, alias) for seg, alias in zip(segments, aliases, strict=True)]
    finally:
        for alias in attached:
            con.execute(f"DETACH {alias}")


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


_DIFFERS = """
SELECT s.event_id, s.type, s.stream_id, t.type, t.stream_id, s.run_id, t.run_id
FROM {s}.events s JOIN {t}.events t USING (event_id)
WHERE s.type <> t.type OR s.stream_id <> t.stream_id OR s.run_id <> t.run_id
   OR CAST(s.payload AS VARCHAR) <> CAST(t.payload AS VARCHAR)
ORDER BY s.position LIMIT 1"""


def _check(con: duckdb.DuckDBPyConnection, here: tuple[str, str], segments: Sequence[Segment], aliases: Sequence[str],
           k: int) -> None:
    """EventConflict (one line naming both sides) for segment k against the target and the segments before it."""
    seg, alias = segments[k], aliases[k]
    others = [("main", f"the store merged into (segment {here[0][:12]})")]
    others += [(aliases[j], segments[j].name) for j in range(k)]
    for other, other_name in others:
        row = con.execute(_DIFFERS.format(s=alias, t=other)).fetchone()
        if row is not None:
            eid, typ, sid, their_type, their_stream, run, their_run = row
            what = (f"{their_type} in stream {their_stream!r}" if (typ, sid) != (their_type, their_stream)
                    else f"run {their_run!r}" if run != their_run else "other payload bytes")
            raise EventConflict(f"event {eid} ({typ} in stream {shown(sid)}) of {seg.name} is in {other_name} with "
                                f"{what}; nothing was merged")
    before = " UNION ALL ".join(f"SELECT event_id, stream_id FROM {a}.events" for a in ["main", *aliases[:k]])
    row = con.execute(
        f"WITH before AS ({before}) SELECT s.stream_id FROM {alias}.events s "
        "WHERE starts_with(s.stream_id, ?) AND s.event_id NOT IN (SELECT event_id FROM before) "
        "AND s.stream_id IN (SELECT stream_id FROM before) ORDER BY s.position LIMIT 1",
        [trajectory_stream("")],
    ).fetchone()
    if row is not None:
        raise EventConflict(f"trajectory stream {shown(row[0])} of {seg.name} already exists in the store merged into "
                            "(or an earlier segment) with other events; a trajectory has one writer; nothing was merged")


_NEW_ROWS = """
SELECT replace(CAST(s.event_id AS VARCHAR), '-', '') AS id, s.stream_id, s.type, s.run_id,
       epoch_us(s.recorded_at) AS at, CAST(s.payload AS VARCHAR) AS payload
FROM {s}.events s ANTI JOIN main.events m ON m.event_id = s.event_id ORDER BY s.position"""


def _append_segment(con: duckdb.DuckDBPyConnection, tip: Tip, seg: Segment, alias: str) -> Merged:
    """One transaction: the segment's blobs by digest, its new events chained after the tip, the head, its name."""
    total = int(con.execute(f"SELECT count(*) FROM {alias}.events").fetchone()[0])  # type: ignore[index]
    position, streams = tip.position, dict(tip.streams)
    chain = Chain(tip.hash, "")
    reader = con.cursor()  # streams the new rows while `con` inserts them (the attached file is read-only)
    con.execute("BEGIN")
    try:
        blobs = con.execute(
            f"INSERT INTO main.blobs SELECT * FROM {alias}.blobs b WHERE b.sha256 NOT IN (SELECT sha256 FROM main.blobs) "
            "QUALIFY row_number() OVER (PARTITION BY b.sha256) = 1").fetchone()
        batches = reader.sql(_NEW_ROWS.format(s=alias)).to_arrow_reader(CHUNK_ROWS)
        for batch in batches:
            cols = Columns(position + 1)
            d = batch.to_pydict()
            cols.ids, cols.streams, cols.types, cols.runs = d["id"], d["stream_id"], d["type"], d["run_id"]
            cols.stamps = d["at"]
            cols.payloads = [p.encode() for p in d["payload"]]
            for sid in cols.streams:
                seq = streams.get(sid, -1) + 1
                streams[sid] = seq
                cols.seqs.append(seq)
            chain.seal(cols)
            insert(con, cols.table(0))
            position += len(cols.ids)
        if position != tip.position:
            con.execute(head_sql(position, chain.prev))
        if seg.segment_id:  # named once: merging it again changes nothing
            con.execute("INSERT INTO searchtrace_meta SELECT ?, ? WHERE NOT EXISTS "
                        "(SELECT 1 FROM searchtrace_meta WHERE key = ?)", [MERGED_PREFIX + seg.segment_id, seg.host,
                                                                           MERGED_PREFIX + seg.segment_id])
        con.execute("COMMIT")
    except BaseException:
        rollback(con)
        raise
    finally:
        reader.close()
    appended = position - tip.position
    tip.position, tip.hash, tip.streams = position, chain.prev, streams
    return Merged(seg, total, appended, int(blobs[0]) if blobs else 0)


def merged_segments(con: Cursor) -> list[tuple[str, str]]:
    """(segment_id, host) of every segment merged into this store, by segment id."""
    rows = con.execute("SELECT key, value FROM searchtrace_meta WHERE starts_with(key, ?) ORDER BY key",
                       [MERGED_PREFIX]).fetchall()
    return [(str(k)[len(MERGED_PREFIX):], str(v)) for k, v in rows]


def segment_line(con: Cursor) -> str:
    """The store's name as a segment and the segments merged into it, for `verify` (one line)."""
    meta = dict(con.execute("SELECT key, value FROM searchtrace_meta WHERE key IN ('segment_id', 'host')").fetchall())
    own = (f"segment {str(meta['segment_id'])[:12]} on {meta.get('host') or 'an unnamed host'}" if "segment_id" in meta
           else "a store from before segments (named on its next write)")
    merged = merged_segments(con)
    if not merged:
        return own
    names = ", ".join(f"{sid[:12]} on {host or 'an unnamed host'}" for sid, host in merged)
    return f"{own}; merged from {len(merged)} segment{'s' if len(merged) != 1 else ''}: {names}"
