"""A run that writes (record, judge, demo) installs the documented views and serves reads to other processes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from searchtrace.analytics import ensure_views
from searchtrace.store import EventLog, ReadServer


def install_views(log: EventLog) -> None:
    """The `v_*` views of analytics/VIEWS.md in the file itself, so any later reader finds them, and the derived
    views in the in-memory catalog, made here once so that no read session needs to (or may) change them."""
    cur = log.cursor()
    try:
        ensure_views(cur)
        ensure_views(cur, temp=True)
    finally:
        cur.close()


@contextmanager
def serving_reads(log: EventLog) -> Iterator[EventLog]:
    """While the block runs, other processes' `sql`, `report`, `export` and `view` read through `<db>.sock`."""
    install_views(log)
    with ReadServer(log.path, log.cursor):
        yield log

