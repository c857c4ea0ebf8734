"""Where the explorer reads from: the file itself when no run holds it, else a read session on the process that does.

A read-only connection to the file is kept while a reader browses and closed after `IDLE_S` without a request that
holds it, so a `record` or `merge` started after the explorer can take the file. A page's background poll (the list
watching for new trajectories) does not hold it: it reads and, when nobody browsed within `IDLE_S`, lets the file go
at once. While a run holds the file every request opens a session on the run's `<db>.sock` (store._readserver),
which sees each commit as it lands. Every cursor in use can be interrupted (a client that went away, shutdown).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from searchtrace.analytics import ensure_views, projections
from searchtrace.store import (
    Cursor,
    EventLog,
    NotAStore,
    StoreLocked,
    open_read_only,
    open_remote,
    while_held,
)

IDLE_S = 2.0


class Source:
    """Hands out one DuckDB cursor (or remote session) per request."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None  # the file's own read-only connection
        self._users = 0
        self._last = time.monotonic()
        self._active: set[Any] = set()  # cursors of requests in flight, interrupted on close
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="searchtrace-view-idle", daemon=True)
        self._reaper.start()

    @contextmanager
    def cursor(self, *, hold: bool = True) -> Iterator[Cursor]:
        """A cursor for one request: on the kept read-only connection, else a session on the run that holds the
        file (retried while a run hands the file over; StoreLocked when nobody serves it). `hold=False` (a poll):
        the request does not keep the file held, and the file goes as soon as it ends when nobody browsed lately."""
        if self._stop.is_set():
            raise StoreLocked(f"{self.db}: the explorer is stopping")
        local, cur = while_held(self._local, self._remote)
        with self._lock:
            self._active.add(cur)
        try:
            yield cur
        finally:
            with self._lock:
                self._active.discard(cur)
            cur.close()
            if local:
                with self._lock:
                    self._users -= 1
                    now = time.monotonic()
                    if hold:
                        self._last = now
                    elif self._users == 0 and now - self._last > IDLE_S:
                        self._release()

    def interrupt(self, cur: Cursor) -> None:
        """Stop the statement `cur` runs (from another thread), if it is still in use."""
        with self._lock:
            if cur not in self._active:
                return
        stop = getattr(cur, "interrupt", None)
        if callable(stop):
            with contextlib.suppress(duckdb.Error, OSError):
                stop()

    def _local(self) -> tuple[bool, Cursor]:
        with self._lock:
            if self._con is None:
                self._con = open_read_only(self.db)  # StoreLocked while a run holds the file
            self._users += 1
            return True, self._con.cursor()

    def _remote(self) -> tuple[bool, Cursor]:
        return False, open_remote(self.db)

    def _release(self) -> None:
        """Close the file's connection (under the lock, with no request using it)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def _reap(self) -> None:
        while not self._stop.wait(IDLE_S / 4):
            with self._lock:
                if self._users == 0 and time.monotonic() - self._last > IDLE_S:
                    self._release()

    def close(self) -> None:
        """Stop: interrupt every statement in flight (a shutdown must not wait for a long query), then let the file go."""
        self._stop.set()
        self._reaper.join(timeout=5)
        deadline = time.monotonic() + 1.5
        while True:
            with self._lock:
                busy = list(self._active)
                if self._users == 0 or time.monotonic() > deadline:
                    if self._users == 0:
                        self._release()
                    return
            for cur in busy:  # again each round: an interrupt before the statement starts is lost
                self.interrupt(cur)
            time.sleep(0.05)


def prepare(db: Path) -> bool:
    """Make reads fast before serving: when the file is free, catch the report's projections up and install the
    documented views (as `report` does); True when a run holds it (then reads go through the run)."""
    try:
        log = EventLog(db)
    except StoreLocked:
        open_remote(db).close()  # a run holds it: it must serve reads (else the usual lock message)
        return True
    except NotAStore:
        open_read_only(db).close()  # e.g. a read-only file: served as it is (or the one-line reason it is not a store)
        return False
    try:
        cur = log.cursor()
        try:
            projections.catch_up(cur)
            ensure_views(cur)
        finally:
            cur.close()
    finally:
        log.close()
    return False
