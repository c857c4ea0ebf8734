"""`searchtrace verify`: the log checked end to end (store._verify), then projections that do not match it rebuilt
(they are caches of the log, never its truth)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from searchtrace.analytics import catch_up, mismatched
from searchtrace.pipeline._interchange import WHOLE_STORE_MEMORY
from searchtrace.store import (
    EventLog,
    StoreError,
    close_when_free,
    interruptible,
    open_read_only,
    segment_line,
)
from searchtrace.store import verify as verify_log


class Verification(msgspec.Struct, kw_only=True):
    """What `verify` found: the log's one-line verdict, the projections that did not match it, and whether they
    were rebuilt (`rebuild_error`: why not)."""

    ok: bool  # the log is intact (the chain, positions, sequences, head and blobs)
    log_line: str
    segment: str = ""  # docs/how-to/scale.md: the store's segment id and host, and the segments merged into it
    stale: list[str] = []
    rebuild_error: str | None = None


def verify(db: Path) -> Verification:
    """Walk the log read-only (Ctrl-C interrupts the walk); when it is intact, rebuild the projections that do not
    match it, on a writable connection of its own."""
    con = open_read_only(db, memory_limit=WHOLE_STORE_MEMORY)  # docs/concepts/performance-memory.md
    try:
        report, stale = interruptible(con, lambda: (verify_log(con), mismatched(con)))
        segment = segment_line(con)
    finally:
        close_when_free(con)
    if not report.ok:
        return Verification(ok=False, log_line=report.line(), segment=segment)
    out = Verification(ok=True, log_line=report.line(), segment=segment, stale=stale)
    if stale:
        try:
            with EventLog(db) as log:
                cur = log.cursor()
                try:
                    catch_up(cur, rebuild=True)
                finally:
                    cur.close()
        except StoreError as exc:
            out.rebuild_error = str(exc)
    return out
