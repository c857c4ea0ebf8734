"""Import and export the interchange formats of SPEC §9 (traces, judgments, audits; events.parquet)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from searchtrace.analytics import projections, views
from searchtrace.replay.interchange.export import export_all
from searchtrace.replay.interchange.importer import ImportResult
from searchtrace.replay.interchange.importer import import_files as import_into
from searchtrace.store.log import EventLog
from searchtrace.store.tuning import bulk_appends


def import_files(
    db: Path, traces: Sequence[Path] = (), judgments: Sequence[Path] = (), audits: Sequence[Path] = (), *,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> ImportResult:
    """Strict import (a bad line stops it, nothing of that file written), then the typed projections caught up.

    A failed import into a store that did not exist before leaves no store behind.
    """
    new = not db.exists()
    try:
        with EventLog(db) as log:
            with bulk_appends(log):  # short GIL turns, one-thread chunks for the appends; restored after
                res = import_into(log, list(traces), list(judgments), list(audits), on_stage=on_stage)
            on_stage("building the typed projections")
            cur = log.cursor()
            try:
                views.ensure_views(cur)
                projections.catch_up(cur)
            finally:
                cur.close()
    except BaseException:
        if new:
            for leftover in (db, db.with_name(db.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    return res


def export(db: Path, out: Path) -> dict[str, int]:
    """Writes traces.jsonl, judgments.jsonl, audit.tsv and events.parquet into `out`; file name -> rows written."""
    with EventLog(db, read_only=True) as log:
        return export_all(log, out)
