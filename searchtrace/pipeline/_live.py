"""A run that writes (record, judge, demo) installs the documented views and serves reads to other processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from searchtrace.analytics import ensure_views, sources
from searchtrace.store import EventLog, ReadServer, Shipped, shipping


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
    with ReadServer(log.path, log.cursor, refresh=sources.refresh):  # docs/concepts/shown.md: `shown` caught up
        yield log



@contextmanager
def live(log: EventLog, ship_to: str | None = None,
         on_shipped: Callable[[Shipped], None] | None = None) -> Iterator[EventLog]:
    """Reads served (as `serving_reads`) and, with `ship_to`, committed events shipped to that PostgreSQL log every
    second and the rest at the end (docs/how-to/scale.md); `on_shipped` is told what the whole block shipped."""
    with serving_reads(log), shipping(log, ship_to) as shipped:
        yield log
    done = shipped()
    if done is not None and on_shipped is not None:
        on_shipped(done)
