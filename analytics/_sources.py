"""Where the typed relations are read from: one set of names, three schemas, chosen with DuckDB's search_path.

Every relation of analytics._relations exists under its bare name (`trajectories`, `verdicts`, ...) in:
- `proj` (in the database): the projection tables (analytics._projections), fast typed columns; read whenever the
  database is writable (caught up first) or its projections are already current;
- `ev` of an in-memory catalog attached to the connection's database instance: views over the raw events, always
  current, created without writing the database (read-only stores, reads beside a running append);
- `ev` (in the database): the same views, installed by analytics._views for `searchtrace sql` users.
SQL in analytics names relations bare; `reading()` points the connection's search_path at one schema for a block.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

import searchtrace.analytics._projections as projections
from searchtrace.analytics._relations import RELATIONS
from searchtrace.store import Cursor

EV = "ev"  # schema of the views over the raw events (in the database, and in the in-memory catalog)
MEMORY = "searchtrace_derived"  # the in-memory catalog: derived views that must not write the database
RAW = f"{MEMORY}.{EV}"
LOCK = threading.RLock()  # one creation of the in-memory views per process at a time


def relation_views(con: Cursor, schema: str, *, replace: bool) -> None:
    """Create the raw-event view of every relation in `schema` (`catalog.schema` or a schema of the database)."""
    verb = "CREATE OR REPLACE VIEW" if replace else "CREATE VIEW IF NOT EXISTS"
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for rel in RELATIONS:
        con.execute(f"{verb} {schema}.{rel.name} AS {rel.select_sql()}")


def _memory_ready(con: Cursor) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name = ?", [MEMORY, EV]
    ).fetchone()
    return bool(row and row[0] >= len(RELATIONS))


def memory_catalog(con: Cursor) -> str:
    """The in-memory catalog with the raw relation views (attached and filled once per database instance) and the
    `shown` table (analytics._shown, a projection), caught up to the last event on each call."""
    with LOCK:
        con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {MEMORY} (READ_ONLY false)")
        if not _memory_ready(con):
            relation_views(con, RAW, replace=False)
        projections.catch_up_shown(con, RAW)
    return MEMORY


def refresh(con: Cursor) -> None:
    """For the run serving reads, before it answers a request on `con`: its in-memory `shown` table caught up to
    the last commit (a read session may not write it). Skipped while this process already holds the catch-up lock
    (another catch-up runs; a reader in this same process may hold it while it waits for this very answer)."""
    if not LOCK.acquire(blocking=False):
        return
    try:
        if _memory_ready(con):
            projections.catch_up_shown(con, RAW)
    finally:
        LOCK.release()


def choose(con: Cursor, *, writable: bool) -> str:
    """The schema to read: `proj` (caught up now when `writable`, or already current), else the raw views."""
    if writable:
        projections.catch_up(con)
        return projections.PROJ
    try:
        if projections.is_current(con):
            return projections.PROJ
    except duckdb.Error:
        pass
    return f"{memory_catalog(con)}.{EV}"


@contextmanager
def search_path(con: Cursor, schema: str) -> Iterator[None]:
    """Resolve bare names in `schema` first (then `main`) on `con` for the block; the old path comes back after."""
    row = con.execute("SELECT current_setting('search_path')").fetchone()
    old = str(row[0]) if row and row[0] is not None else ""
    con.execute(f"SET search_path = '{schema},main'")
    try:
        yield
    finally:
        con.execute(f"SET search_path = '{old}'")


@contextmanager
def reading(con: Cursor, *, writable: bool) -> Iterator[str]:
    """Read the typed relations by their bare names on `con` for the block (schema chosen by `choose`)."""
    schema = choose(con, writable=writable)
    with search_path(con, schema):
        yield schema


@contextmanager
def reading_raw(con: Cursor) -> Iterator[str]:
    """Read the views over the raw events (no write to the database, safe while another thread appends)."""
    schema = f"{memory_catalog(con)}.{EV}"
    with search_path(con, schema):
        yield schema
