"""Read-only access for inspection commands: no writes, no other files, only read statements."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from searchtrace.store._errors import ReadOnlyViolation
from searchtrace.store._schema import first_line, open_store

ALLOWED = "SELECT, WITH … SELECT, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN of those"
_EXPLAIN = re.compile(r"\s*EXPLAIN\s+(?:ANALYZE\s+)?(.*)\Z", re.IGNORECASE | re.DOTALL)


def open_read_only(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a searchtrace store that cannot reach any other file (no ATTACH, COPY, read_csv)."""
    con = open_store(Path(path), read_only=True, config={"enable_external_access": False})
    try:
        con.execute("SET lock_configuration = true")  # the statements that follow cannot re-enable file access
    except BaseException:
        con.close()
        raise
    return con


def read_statements(sql: str) -> list[str]:
    """Split into statements and refuse anything that is not a plain read (raises ReadOnlyViolation or BadInput)."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ReadOnlyViolation(f"sql: {first_line(str(exc))}") from None
    if not statements:
        raise ReadOnlyViolation("sql: no statement given")
    out: list[str] = []
    for i, st in enumerate(statements, 1):
        kind = st.type
        text = st.query
        if kind == duckdb.StatementType.EXPLAIN:
            m = _EXPLAIN.match(text)
            try:
                inner = duckdb.extract_statements(m.group(1)) if m else []
            except duckdb.Error:
                inner = []
            if not inner or any(s.type != duckdb.StatementType.SELECT for s in inner):
                raise ReadOnlyViolation(_refusal(i, "EXPLAIN of a statement that is not a read"))
        elif kind != duckdb.StatementType.SELECT:
            raise ReadOnlyViolation(_refusal(i, kind.name))
        out.append(text)
    return out


def _refusal(i: int, what: str) -> str:
    return f"sql: statement {i} is {what}; the store is read-only here, only {ALLOWED} run (nothing was executed)"
