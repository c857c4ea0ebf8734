"""Typed projections: the `proj` schema's tables, one per relation plus `shown`, caught up incrementally; caches,
never a source.

State lives in `projection_state(name, version, last_position, n)`, append-only: the row with the highest `n`
per name says up to which event position that table is built and by which version. A missing table, another
version, a table that holds another number of rows than the log has for it, or `rebuild()` makes the next catch-up
build it again from position 0. Reading them is 20x faster than extracting JSON (see research/perf.md), so metrics
read projections whenever the database is writable (analytics._sources chooses).

Every projection is one `Projection`: the relations of analytics._relations (one row per event, a SELECT) and
`shown` (analytics._shown, one row per search.result, a Python replay of whole streams). `shown` is also kept in
the in-memory catalog for read-only reads; its state row lives there, beside it (DuckDB writes one database per
transaction).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import duckdb

import searchtrace.analytics._shown as shown
from searchtrace.analytics._relations import RELATIONS, Relation, version
from searchtrace.store import Cursor

PROJ = "proj"  # the schema of the projection tables, named like their relations
STATE = "projection_state"
STATE_COLUMNS = "name VARCHAR NOT NULL, version VARCHAR NOT NULL, last_position BIGINT NOT NULL, n BIGINT NOT NULL"
STATE_DDL = f"CREATE TABLE IF NOT EXISTS main.{STATE}({STATE_COLUMNS})"
_lock = threading.Lock()  # one catch-up per process at a time (two would both insert the same rows)


@dataclass(frozen=True)
class Projection:
    """One cached table: its name and version, the step that brings it from a position (None: build it anew) to the
    head, and the SELECT of the rows it must hold up to a position (a count that differs means: build it anew)."""

    name: str
    version: Callable[[], str]
    advance: Callable[[Cursor, str, int | None, int], None]  # (con, table, last or None, head)
    due: Callable[[int], str]


def _relation(rel: Relation) -> Projection:
    def advance(con: Cursor, table: str, last: int | None, head: int) -> None:
        if last is None:
            con.execute(f"DROP TABLE IF EXISTS {table}")
            con.execute(f"CREATE TABLE {table} AS {rel.select_sql(f'position <= {head}')}")
        else:
            con.execute(f"INSERT INTO {table} {rel.select_sql(f'position > {last} AND position <= {head}')}")

    return Projection(rel.name, version, advance, lambda to: rel.select_sql(f"position <= {to}"))


SHOWN = Projection(shown.TABLE, lambda: shown.VERSION, shown.advance, shown.due)
PROJECTIONS: tuple[Projection, ...] = (*(_relation(r) for r in RELATIONS), SHOWN)
_LEFTOVERS = ("shown_state",)  # in `proj`: where earlier versions kept shown's state


def _split(schema: str) -> tuple[str | None, str]:
    """(catalog, schema) of `schema` (catalog None: the connection's database)."""
    catalog, _, name = schema.rpartition(".")
    return catalog or None, name


def _tables(con: Cursor, schema: str) -> set[str]:
    catalog, name = _split(schema)
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = ? AND database_name = coalesce(?, current_database())",
        [name, catalog],
    ).fetchall()
    return {r[0] for r in rows}


def _state_table(schema: str) -> str:
    """The state table of the projections in `schema`: the database's `main.projection_state` for `proj`, else a
    table beside them (the in-memory catalog's)."""
    return f"main.{STATE}" if schema == PROJ else f"{schema}.{STATE}"


def _state(con: Cursor, schema: str) -> tuple[dict[str, tuple[str, int]], int]:
    """Latest (version, last_position) per projection of `schema`, and the highest state row number."""
    table = _state_table(schema)
    if STATE not in _tables(con, table.rpartition(".")[0]):
        return {}, 0
    rows = con.execute(
        f"SELECT name, arg_max(version, n), arg_max(last_position, n), max(n) FROM {table} GROUP BY name"
    ).fetchall()
    top = max((int(r[3]) for r in rows), default=0)
    return {r[0]: (str(r[1]), int(r[2])) for r in rows}, top


def _head(con: Cursor) -> int:
    row = con.execute("SELECT coalesce(max(position), 0) FROM main.events").fetchone()
    return int(row[0]) if row else 0


def _stale(con: Cursor, p: Projection, table: str, built_to: int, head: int) -> bool:
    """A projection that cannot be caught up: ahead of the log (events were deleted), or holding another number of
    rows than the log has for it (rows deleted or added by hand). Value edits are `mismatched`'s job (verify)."""
    if built_to > head:
        return True
    have = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    due = con.execute(f"SELECT count(*) FROM ({p.due(built_to)})").fetchone()
    return have != due


SPAN = 100_000  # event positions one comparison reads at a time: memory bounded whatever the log's size


def mismatched(con: Cursor) -> list[str]:
    """Projection tables whose rows differ from what their relation gives over the log (the full check, for verify),
    compared SPAN event positions at a time, every relation over one span before the next (its blocks read once)."""
    state, _ = _state(con, PROJ)
    tables, head = _tables(con, PROJ), _head(con)
    checked: dict[str, tuple[Relation, int]] = {}  # table -> (relation, built up to)
    out: list[str] = []
    for rel in RELATIONS:
        have = state.get(rel.name)
        if have is None or rel.name not in tables or have[0] != version():
            continue  # absent or of another version: the next catch-up builds it anyway
        table = f"{PROJ}.{rel.name}"
        outside = con.execute(f"SELECT count(*) FROM {table} WHERE NOT (position > 0 AND position <= ?)",
                              [have[1]]).fetchone()
        if have[1] > head or (outside and outside[0]):
            out.append(table)
        else:
            checked[table] = (rel, have[1])
    for a in range(0, max((b for _, b in checked.values()), default=0), SPAN):
        for table, (rel, built_to) in list(checked.items()):
            if a < built_to and _differs(con, rel, table, f"position > {a} AND position <= {min(a + SPAN, built_to)}"):
                out.append(table)
                del checked[table]
    return [f"{PROJ}.{r.name}" for r in RELATIONS if f"{PROJ}.{r.name}" in out]


def _differs(con: Cursor, rel: Relation, table: str, span: str) -> bool:
    """Whether the projection's rows of a span of positions differ from the relation's over the log (as multisets)."""
    rows = con.execute(
        f"WITH r AS MATERIALIZED ({rel.select_sql(span)}), p AS MATERIALIZED (SELECT * FROM {table} WHERE {span}) "
        "SELECT count(*) FROM ((FROM p EXCEPT ALL FROM r) UNION ALL (FROM r EXCEPT ALL FROM p))"
    ).fetchone()
    return bool(rows and rows[0])


def _current(con: Cursor, schema: str, projections: Iterable[Projection]) -> bool:
    state, _ = _state(con, schema)
    tables, head = _tables(con, schema), _head(con)
    return all(p.name in tables and state.get(p.name) == (p.version(), head) for p in projections)


def is_current(con: Cursor) -> bool:
    """True when every projection exists, is of its version and has seen the last event."""
    return _current(con, PROJ, PROJECTIONS)


def _catch_up(con: Cursor, schema: str, projections: Iterable[Projection], rebuild: bool) -> int:
    """Bring `projections` in `schema` up to the last event in one transaction; returns the head position."""
    con.execute("BEGIN")
    try:
        con.execute(f"CREATE TABLE IF NOT EXISTS {_state_table(schema)}({STATE_COLUMNS})")
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        head = _head(con)
        state, n = _state(con, schema)
        tables = _tables(con, schema)
        for p in projections:
            table, have, ver = f"{schema}.{p.name}", state.get(p.name), p.version()
            if rebuild or have is None or have[0] != ver or p.name not in tables or _stale(con, p, table, have[1], head):
                if schema == PROJ:
                    con.execute(f"DROP TABLE IF EXISTS main.proj_{p.name}")  # where earlier versions kept it
                p.advance(con, table, None, head)
            elif have[1] < head:
                p.advance(con, table, have[1], head)
            else:
                continue
            n += 1
            con.execute(f"INSERT INTO {_state_table(schema)} VALUES (?, ?, ?, ?)", [p.name, ver, head, n])
        if schema == PROJ:
            for old in _LEFTOVERS:
                con.execute(f"DROP TABLE IF EXISTS {PROJ}.{old}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return head


def catch_up(con: Cursor, *, rebuild: bool = False) -> int:
    """Bring every projection in `proj` up to the last event in one transaction; returns the head position."""
    with _lock:
        return _catch_up(con, PROJ, PROJECTIONS, rebuild)


def catch_up_shown(con: Cursor, schema: str) -> None:
    """Bring only the `shown` table of `schema` (`proj`, or the in-memory catalog's for read-only reads) up to the
    last event. A read session on another process (not a DuckDB connection) cannot write: it reads the table as
    that process left it."""
    if not isinstance(con, duckdb.DuckDBPyConnection):
        return
    with _lock:
        if not _current(con, schema, (SHOWN,)):
            _catch_up(con, schema, (SHOWN,), False)
