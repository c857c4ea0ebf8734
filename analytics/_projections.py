"""Typed projections: the `proj` schema's tables, one per relation, caught up incrementally; caches, never a source.

State lives in `projection_state(name, version, last_position, n)`, append-only: the row with the highest `n`
per name says up to which event position that table is built and by which relation version. A missing table,
another version or `rebuild()` makes the next catch-up build it again from position 0. Reading them is 20x
faster than extracting JSON (see research/perf.md), so metrics read projections whenever the database is
writable (analytics._sources chooses).
"""

from __future__ import annotations

import threading

import searchtrace.analytics._shown as shown
from searchtrace.analytics._relations import RELATIONS, Relation, version
from searchtrace.store import Cursor

PROJ = "proj"  # the schema of the projection tables, named like their relations
STATE_DDL = (
    "CREATE TABLE IF NOT EXISTS main.projection_state("
    "name VARCHAR NOT NULL, version VARCHAR NOT NULL, last_position BIGINT NOT NULL, n BIGINT NOT NULL)"
)
_lock = threading.Lock()  # one catch-up per process at a time (two would both insert the same rows)


def _tables(con: Cursor, schema: str) -> set[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema = ? "
        "AND table_catalog = current_database()",
        [schema],
    ).fetchall()
    return {r[0] for r in rows}


def _state(con: Cursor) -> tuple[dict[str, tuple[str, int]], int]:
    """Latest (version, last_position) per projection, and the highest state row number."""
    if "projection_state" not in _tables(con, "main"):
        return {}, 0
    rows = con.execute(
        "SELECT name, arg_max(version, n), arg_max(last_position, n), max(n) FROM main.projection_state GROUP BY name"
    ).fetchall()
    top = max((int(r[3]) for r in rows), default=0)
    return {r[0]: (str(r[1]), int(r[2])) for r in rows}, top


def _head(con: Cursor) -> int:
    row = con.execute("SELECT coalesce(max(position), 0) FROM main.events").fetchone()
    return int(row[0]) if row else 0


def _stale(con: Cursor, rel: Relation, built_to: int, head: int) -> bool:
    """A projection that cannot be caught up: ahead of the log (events were deleted), or holding another number of
    rows than the log has for it (rows deleted or added by hand). Value edits are `mismatched`'s job (verify)."""
    if built_to > head:
        return True
    have = con.execute(f"SELECT count(*) FROM {PROJ}.{rel.name}").fetchone()
    due = con.execute(f"SELECT count(*) FROM ({rel.select_sql(f'position <= {built_to}')})").fetchone()
    return have != due


SPAN = 100_000  # event positions one comparison reads at a time: memory bounded whatever the log's size


def mismatched(con: Cursor) -> list[str]:
    """Projection tables whose rows differ from what their relation gives over the log (the full check, for verify),
    compared SPAN event positions at a time, every relation over one span before the next (its blocks read once)."""
    state, _ = _state(con)
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


def is_current(con: Cursor) -> bool:
    """True when every projection exists, is of this version and has seen the last event."""
    state, _ = _state(con)
    tables, ver, head = _tables(con, PROJ), version(), _head(con)
    return all(r.name in tables and state.get(r.name) == (ver, head) for r in RELATIONS) and shown.is_current(con, PROJ)


def catch_up(con: Cursor, *, rebuild: bool = False) -> int:
    """Bring every projection up to the last event in one transaction, then the `shown` table (analytics._shown,
    its own transaction); returns the head position."""
    with _lock:
        con.execute("BEGIN")
        try:
            con.execute(STATE_DDL)
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {PROJ}")
            head = _head(con)
            state, n = _state(con)
            tables, ver = _tables(con, PROJ), version()
            for rel in RELATIONS:
                table = f"{PROJ}.{rel.name}"
                have = state.get(rel.name)
                if rebuild or have is None or have[0] != ver or rel.name not in tables or _stale(con, rel, have[1], head):
                    con.execute(f"DROP TABLE IF EXISTS main.proj_{rel.name}")  # where earlier versions kept it
                    con.execute(f"DROP TABLE IF EXISTS {table}")
                    con.execute(f"CREATE TABLE {table} AS {rel.select_sql(f'position <= {head}')}")
                elif have[1] < head:
                    con.execute(f"INSERT INTO {table} {rel.select_sql(f'position > {have[1]} AND position <= {head}')}")
                else:
                    continue
                n += 1
                con.execute("INSERT INTO main.projection_state VALUES (?, ?, ?, ?)", [rel.name, ver, head, n])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        if rebuild:
            con.execute(f"DROP TABLE IF EXISTS {PROJ}.{shown.STATE}")
        shown.catch_up(con, PROJ)
    return head
