"""Ctrl-C during a long DuckDB query: the query runs on a worker thread, the main thread interrupts it promptly."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from searchtrace.store._cursor import Cursor

T = TypeVar("T")


def interruptible(con: Cursor, work: Callable[[], T]) -> T:
    """`work()` (queries on `con`) on a worker thread; Ctrl-C interrupts the running query and raises KeyboardInterrupt.

    A query running in DuckDB holds the main thread in C code, where Python cannot deliver SIGINT, so `sql` and
    `verify` would otherwise finish a long query before the interrupt is seen (DuckDB's own shell stops at once).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=run, name="searchtrace-query", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        stop = getattr(con, "interrupt", None)  # a DuckDB connection has one; a read session (a daemon worker) has none
        for _ in range(200):  # again until it ends: an interrupt before the next query starts is lost
            if callable(stop):
                stop()
            worker.join(0.05)
            if not worker.is_alive():
                break
        raise
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def close_when_free(con: Cursor) -> None:
    """Close `con`; just after an interrupt DuckDB may still call it busy for a moment, so retry for up to 2 s."""
    import time

    import duckdb

    for _ in range(40):
        try:
            con.close()
            return
        except duckdb.Error as exc:
            if "busy" not in str(exc):
                raise
            time.sleep(0.05)
    con.close()
