"""Bulk-append tuning, on only where an entry point asks for it, restored exactly when it ends.

Two settings make bulk appends faster but reach beyond the caller, so the store never sets them by itself:
- shorter GIL turns (`sys.setswitchinterval`, for the whole interpreter): while a batch is prepared in Python, the
  insert/commit thread coming back from DuckDB waits for the GIL up to the switch interval (5 ms by default), a
  convoy that cost 11-18% of append throughput in `bench ingest`;
- DuckDB on one thread during a multi-chunk transaction (`SET threads`, for the whole database, readers included),
  since the next chunk is being prepared on the other core.
`bench ingest` and `import` turn both on with `bulk_appends(log)`; recording, judging and everything else leave the
process and the database as they found them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from searchtrace.store._log import EventLog

GIL_TURN_S = 0.0005


@contextmanager
def bulk_appends(log: EventLog) -> Iterator[None]:
    """Short GIL turns and one-thread multi-chunk transactions on `log` for the block; both restored on exit.

    Blocks nest; each gives back exactly what it found (switch interval, and whether `log` narrowed before).
    """
    interval = sys.getswitchinterval()
    narrowing = log.bulk_threads(True)
    sys.setswitchinterval(min(interval, GIL_TURN_S))
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        log.bulk_threads(narrowing)
