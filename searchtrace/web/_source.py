"""Where the explorer reads from: the file itself when no run holds it, else a read session on the process that does.

A read-only connection to the file is kept while requests come and closed after `IDLE_S` without one, so a
`record` started after the explorer can take the file; while a run holds it every request opens a session on
the run's `<db>.sock` (store._readserver), which sees each commit as it lands.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="searchtrace-view-idle", daemon=True)
        self._reaper.start()

    @contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A cursor for one request: on the kept read-only connection, else a session on the run that holds the
        file (retried while a run hands the file over; StoreLocked when nobody serves it)."""
        local, cur = while_held(self._local, self._remote)
        try:
            yield cur
        finally:
            cur.close()
            if local:
                with self._lock:
                    self._users -= 1
                    self._last = time.monotonic()

    def _local(self) -> tuple[bool, Cursor]:
        with self._lock:
            if self._con is None:
                self._con = open_read_only(self.db)  # StoreLocked while a run holds the file
            self._users += 1
            return True, self._con.cursor()

    def _remote(self) -> tuple[bool, Cursor]:
        return False, open_remote(self.db)

    def _reap(self) -> None:
        while not self._stop.wait(IDLE_S / 4):
            with self._lock:
                if self._con is not None and self._users == 0 and time.monotonic() - self._last > IDLE_S:
                    self._con.close()
                    self._con = None

    def close(self) -> None:
        self._stop.set()
        self._reaper.join(timeout=5)
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None


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
