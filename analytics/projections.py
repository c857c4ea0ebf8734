"""Typed projections: `proj_<relation>` tables derived from events, caught up incrementally; caches, never a source.

State lives in `projection_state(name, version, last_position, n)`, append-only: the row with the highest `n`
per name says up to which event position that table is built and by which relation version. A missing table,
another version or `rebuild()` makes the next catch-up build it again from position 0. Reading them is 20x
faster than extracting JSON (see research/perf.md), so metrics read projections whenever the database is
writable, and fall back to temporary views over the raw events (`tmp_<relation>`) when it is not.
"""

from __future__ import annotations

import threading

import duckdb

from searchtrace.analytics.relations import RELATIONS, version

PROJ = "proj_"
TMP = "tmp_"
STATE_DDL = (
    "CREATE TABLE IF NOT EXISTS projection_state("
    "name VARCHAR NOT NULL, version VARCHAR NOT NULL, last_position BIGINT NOT NULL, n BIGINT NOT NULL)"
)
_lock = threading.Lock()  # one catch-up per process at a time (two would both insert the same rows)


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema = 'main'"
    ).fetchall()
    return {r[0] for r in rows}


def _state(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, tuple[str, int]], int]:
    """Latest (version, last_position) per projection, and the highest state row number."""
    if "projection_state" not in _tables(con):
        return {}, 0
    rows = con.execute(
        "SELECT name, arg_max(version, n), arg_max(last_position, n), max(n) FROM projection_state GROUP BY name"
    ).fetchall()
    top = max((int(r[3]) for r in rows), default=0)
    return {r[0]: (str(r[1]), int(r[2])) for r in rows}, top


def _head(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
    return int(row[0]) if row else 0


def is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """True when every projection exists, is of this version and has seen the last event."""
    state, _ = _state(con)
    tables, ver, head = _tables(con), version(), _head(con)
    return all(
        f"{PROJ}{r.name}" in tables and state.get(r.name) == (ver, head) for r in RELATIONS
    )


def catch_up(con: duckdb.DuckDBPyConnection, *, rebuild: bool = False) -> int:
    """Bring every projection up to the last event in one transaction; returns the head position."""
    with _lock:
        con.execute("BEGIN")
        try:
            con.execute(STATE_DDL)
            head = _head(con)
            state, n = _state(con)
            tables, ver = _tables(con), version()
            for rel in RELATIONS:
                table = f"{PROJ}{rel.name}"
                have = state.get(rel.name)
                if rebuild or have is None or have[0] != ver or table not in tables:
                    con.execute(f"DROP TABLE IF EXISTS {table}")
                    con.execute(f"CREATE TABLE {table} AS {rel.select_sql(f'position <= {head}')}")
                elif have[1] < head:
                    con.execute(f"INSERT INTO {table} {rel.select_sql(f'position > {have[1]} AND position <= {head}')}")
                else:
                    continue
                n += 1
                con.execute("INSERT INTO projection_state VALUES (?, ?, ?, ?)", [rel.name, ver, head, n])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return head


def temp_sources(con: duckdb.DuckDBPyConnection) -> str:
    """Temporary views over the raw events with the projections' columns (works on a read-only database)."""
    for rel in RELATIONS:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {TMP}{rel.name} AS {rel.select_sql()}")
    return TMP


def sources(con: duckdb.DuckDBPyConnection, *, writable: bool) -> str:
    """Prefix of the relations to read: `proj_` (caught up now, or already current) or `tmp_` (raw views)."""
    if writable:
        catch_up(con)
        return PROJ
    try:
        if is_current(con):
            return PROJ
    except duckdb.Error:
        pass
    return temp_sources(con)
