"""Read-only SQL over a store (`searchtrace sql` and the explorer's SQL view): one set of statement rules, one
wording for a refusal or a failing query, the documented `v_*` views on every connection."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from searchtrace.analytics import ensure_views
from searchtrace.store import (
    BadInput,
    Cursor,
    close_when_free,
    first_line,
    interruptible,
    read_again,
    read_connection,
    read_statements,
    time_limit,
)


class SqlResult(msgspec.Struct, kw_only=True):
    """The last statement's columns (names and DuckDB type names) and rows; `truncated` when rows were cut at the
    limit asked for."""

    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


def query(cur: Cursor, sql: str, *, limit: int | None = None, seconds: float | None = None) -> SqlResult:
    """Run read-only SQL on an open cursor: writes refused before anything runs (store._readonly), failures as one
    `sql: …` line (BadInput); at most `limit` rows (None: all), streamed so the rest is never made; interrupted
    after `seconds` (None: no limit), fetching included."""
    statements = read_statements(sql)
    ensure_views(cur, temp=True)  # the documented v_* views, even on a store no report has touched
    limited = nullcontext() if seconds is None else time_limit(cur, seconds, "sql")
    try:
        with limited:
            rows, description = _rows(cur, statements, limit)
    except duckdb.Error as exc:  # errors can come while fetching, too
        raise BadInput(f"sql: {first_line(str(exc))}") from None
    truncated = limit is not None and len(rows) > limit
    return SqlResult(columns=[str(d[0]) for d in description], types=[str(d[1]) for d in description],
                     rows=rows[:limit] if truncated else rows, truncated=truncated)


def _rows(cur: Cursor, statements: list[str], limit: int | None) -> tuple[list[tuple[Any, ...]], list[Any]]:
    for text in statements:
        cur.execute(text)
    description = list(cur.description or [])
    if not description:
        return [], description
    return (cur.fetchall() if limit is None else cur.fetchmany(limit + 1)), description


def run_sql(db: Path, sql: str, *, limit: int | None = None) -> SqlResult:
    """`query` on `db`: statements checked before the file is even opened; the file itself, or a read session on the
    run that holds it; Ctrl-C interrupts the running query (KeyboardInterrupt)."""
    read_statements(sql)
    return read_again(lambda: _run_once(db, sql, limit))


def _run_once(db: Path, sql: str, limit: int | None) -> SqlResult:
    cur = read_connection(db)
    try:
        return interruptible(cur, lambda: query(cur, sql, limit=limit))
    finally:
        close_when_free(cur)
