"""Ctrl-C during a long DuckDB query: the query runs on a worker thread, the main thread interrupts it promptly."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def time_limit(con: Any, seconds: float, what: str) -> Iterator[None]:
    """Interrupt the queries `con` runs in the block once it has lasted `seconds`; BadInput naming `what` then."""
    import duckdb

    from searchtrace.store._errors import BadInput

    over = threading.Event()

    def stop() -> None:
        while not done.wait(0.1 if over.is_set() else seconds):  # again until the block ends
            over.set()
            stop_query = getattr(con, "interrupt", None)
            if callable(stop_query):
                stop_query()

    done = threading.Event()
    timer = threading.Thread(target=stop, name="searchtrace-time-limit", daemon=True)
    timer.start()
    try:
        yield
    except duckdb.Error:
        if over.is_set():
            raise BadInput(f"{what}: the statement ran past the {seconds:g} s limit of a read session and was stopped") from None
        raise
    finally:
        done.set()
        timer.join()
