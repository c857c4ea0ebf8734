"""`ship` and `replica` (docs/how-to/scale.md): a segment's events into the central PostgreSQL log, the log into a DuckDB
replica on which every read command and `verify` run (analytics never run on PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from searchtrace.pipeline._live import serving_reads
from searchtrace.store import EventLog, Pulled, Shipped, central, follow, pull, require_database, ship


def ship_segment(db: Path, url: str, *, batch: int | None = None) -> Shipped:
    """Ship every committed event of the segment `db` the log does not hold yet (resuming after its last marker)."""
    require_database(db)
    with central(url, "searchtrace ship") as log_central, EventLog(db) as log:
        return ship(log, log_central) if batch is None else ship(log, log_central, batch=batch)


def replicate(
    url: str, db: Path, *, keep_following: bool = False, on_pull: Callable[[Pulled], None] | None = None,
    stop: threading.Event | None = None,
) -> Pulled:
    """Pull the log into the store `db` (made when missing) up to its head; with `keep_following`, go on pulling
    until stopped, serving reads of the replica to other processes meanwhile (as a recording store does)."""
    with central(url, "searchtrace replica") as log_central, EventLog(db) as log:
        if not keep_following:
            return pull(log_central, log)
        with serving_reads(log):
            return follow(log_central, log, on_pull=on_pull, stop=stop)
