"""What a read may run, in one place: `sql` on a free store, read sessions on `<db>.sock` and `view`'s SQL box.

Three guards, each structural where DuckDB allows it:
- the database instance reads nothing but the store: a free store opens with external access off and the
  configuration locked; the process that serves reads turns external access off on its instance (store_only),
  so no file or network function, ATTACH of a file, COPY, EXPORT, INSTALL or LOAD can run at all;
- statements are classified by DuckDB's parser (extract_statements / StatementType): only reads run;
- inside a read, the parse tree (json_serialize_sql) names every function: table functions come from a list of
  pure ones (checkpoint(), query(), enable_logging() ... change state or run SQL from text) and the scalar
  functions that write (nextval, setval, write_log) are refused.
A read session may also run what only its own connection sees: temp views (whose body passes the same rules),
`SET search_path`, `SET/RESET VARIABLE`; and no-ops (ATTACH IF NOT EXISTS of an attached in-memory catalog,
CREATE ... IF NOT EXISTS of an object that exists), answered without running. Nothing else changes a catalog
another session sees.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import msgspec

from searchtrace.store._errors import ReadOnlyViolation
from searchtrace.store._schema import first_line, open_store

ALLOWED = "SELECT, WITH … SELECT, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE and EXPLAIN of those"
_EXPLAIN = re.compile(r"\s*EXPLAIN\s+(?:ANALYZE\s+)?(.*)\Z", re.IGNORECASE | re.DOTALL)

# Table functions a read may call: generators, JSON walkers and catalogue/metadata listings, none of which
# changes state, reads a file or runs SQL given as text (file functions also fail on a store-only instance).
PURE_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree", "summary",
    "test_all_types", "test_vector_types", "icu_calendar_names", "pg_timezone_names",
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies", "duckdb_functions",
    "duckdb_indexes", "duckdb_keywords", "duckdb_schemas", "duckdb_sequences", "duckdb_settings", "duckdb_tables",
    "duckdb_types", "duckdb_views", "duckdb_memory", "duckdb_temporary_files", "duckdb_variables",
    "pragma_table_info", "pragma_database_size", "pragma_storage_info", "pragma_show", "pragma_version",
    "pragma_platform", "pragma_collations", "pragma_metadata_info", "pragma_user_agent",
})
WRITING_SCALARS = frozenset({"nextval", "setval", "write_log"})  # scalar functions that change state


def open_read_only(path: str | Path, *, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a searchtrace store that cannot reach any other file (no ATTACH, COPY, read_csv);
    with `memory_limit`, DuckDB's buffer pool (the blocks it keeps after reading them) held to that."""
    con = open_store(Path(path), read_only=True, config={"enable_external_access": False})
    try:
        if memory_limit is not None:
            con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET lock_configuration = true")  # the statements that follow cannot re-enable file access
    except BaseException:
        con.close()
        raise
    return con


def store_only(con: duckdb.DuckDBPyConnection) -> None:
    """Turn external access off on `con`'s whole database instance (DuckDB cannot turn it back on while it runs):
    the process serving reads then reaches no file but the store's own (its WAL and temp folder stay allowed)."""
    con.execute("SET enable_external_access = false")


_parser_lock = threading.Lock()
_parser: duckdb.DuckDBPyConnection | None = None


def _tree(text: str) -> Any:
    """DuckDB's parse tree of one SELECT, from an instance of its own that reaches nothing (it only parses)."""
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = duckdb.connect(":memory:", config={"enable_external_access": False})
            _parser.execute("SET lock_configuration = true")
        cur = _parser.cursor()
    try:
        row = cur.execute("SELECT json_serialize_sql(?::VARCHAR)", [text]).fetchone()
    finally:
        cur.close()
    tree = msgspec.json.decode(row[0]) if row else {"error": True}
    return tree


def _functions(node: Any, table: bool = False) -> Iterator[tuple[str, bool]]:
    """Every function the tree calls, with True for a table function (FROM f(...))."""
    if isinstance(node, dict):
        if node.get("class") == "FUNCTION" and isinstance(node.get("function_name"), str):
            yield node["function_name"].lower(), table
        for key, value in node.items():
            yield from _functions(value, table=node.get("type") == "TABLE_FUNCTION" and key == "function")
    elif isinstance(node, list):
        for value in node:
            yield from _functions(value)


def check_select(text: str, i: int = 1) -> None:
    """Refuse a SELECT that calls a function that is not a pure read (ReadOnlyViolation, nothing executed)."""
    tree = _tree(text)
    if tree.get("error"):
        raise ReadOnlyViolation(_refusal(i, f"not a read DuckDB can check ({tree.get('error_message', 'unparsed')})"))
    for name, table in _functions(tree.get("statements", [])):
        if table and name not in PURE_TABLE_FUNCTIONS:
            raise ReadOnlyViolation(_refusal(i, f"a call of {name}(), which reads beyond the store or changes state"))
        if not table and name in WRITING_SCALARS:
            raise ReadOnlyViolation(_refusal(i, f"a call of {name}(), which writes"))


def read_statements(sql: str) -> list[str]:
    """Split into statements and refuse anything that is not a plain read (raises ReadOnlyViolation or BadInput)."""
    statements = _split(sql)
    out: list[str] = []
    for i, st in enumerate(statements, 1):
        _check_read(st, i)
        out.append(st.query)
    return out


def _split(sql: str) -> list[Any]:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ReadOnlyViolation(f"sql: {first_line(str(exc))}") from None
    if not statements:
        raise ReadOnlyViolation("sql: no statement given")
    return statements


def _check_read(st: Any, i: int) -> None:
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
        for s in inner:
            check_select(s.query, i)
    elif kind != duckdb.StatementType.SELECT:
        raise ReadOnlyViolation(_refusal(i, kind.name))
    else:
        check_select(text, i)


# What a read session may run besides reads: each touches only that session's connection, or changes nothing.
_IDENT = r'(?:"[^"]+"|\w+)'
_TEMP_VIEW = re.compile(
    rf"\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?{_IDENT}(?:\.{_IDENT}){{0,2}}"
    rf"\s*(?:\([^)]*\))?\s+AS\s+(.*)\Z", re.IGNORECASE | re.DOTALL)
_SET_PATH = re.compile(r"\s*SET\s+search_path\s*=\s*'[\w.,\s]*'\s*;?\s*\Z", re.IGNORECASE)
_SET_VARIABLE = re.compile(r"\s*SET\s+VARIABLE\s+\w+\s*=\s*(.*?)\s*;?\s*\Z", re.IGNORECASE | re.DOTALL)
_RESET_VARIABLE = re.compile(r"\s*RESET\s+VARIABLE\s+\w+\s*;?\s*\Z", re.IGNORECASE)
_ATTACH_MEMORY = re.compile(
    r"\s*ATTACH\s+IF\s+NOT\s+EXISTS\s+':memory:'\s+AS\s+(\w+)(?:\s*\(READ_ONLY\s+false\))?\s*;?\s*\Z", re.IGNORECASE)
_CREATE_EXISTING = re.compile(
    r"\s*CREATE\s+(SCHEMA|VIEW)\s+IF\s+NOT\s+EXISTS\s+(\w+)\.(\w+)(?:\.(\w+))?[\s;(]", re.IGNORECASE)


class Session(msgspec.Struct, frozen=True):
    """One statement of a read session as it will run: `noop` ones are answered without running."""

    text: str
    noop: bool = False


def session_statements(sql: str, cur: duckdb.DuckDBPyConnection) -> list[Session]:
    """The statements a read session runs: the reads `read_statements` allows, and what only this session sees
    (see the module docstring); `cur` answers whether an object a no-op names exists."""
    out: list[Session] = []
    for i, st in enumerate(_split(sql), 1):
        text = st.query
        if st.type == duckdb.StatementType.CREATE and (m := _TEMP_VIEW.match(text)):
            check_select(m.group(1).rstrip().rstrip(";"), i)
            out.append(Session(text))
        elif st.type == duckdb.StatementType.SET and (_SET_PATH.match(text) or _RESET_VARIABLE.match(text)):
            out.append(Session(text))
        elif st.type == duckdb.StatementType.SET and (m := _SET_VARIABLE.match(text)):
            check_select(f"SELECT ({m.group(1)})", i)
            out.append(Session(text))
        elif st.type in (duckdb.StatementType.CREATE, duckdb.StatementType.ATTACH):
            if not _exists(text, cur):
                raise ReadOnlyViolation(
                    f"sql: statement {i} is {st.type.name}; a read session changes no catalog another session sees, "
                    "only temp views, SET search_path and SET VARIABLE run besides reads (nothing was executed)")
            out.append(Session(text, noop=True))
        else:
            _check_read(st, i)
            out.append(Session(text))
    return out


def _exists(text: str, cur: duckdb.DuckDBPyConnection) -> bool:
    """True for ATTACH IF NOT EXISTS of an attached in-memory catalog, or CREATE ... IF NOT EXISTS of an object
    that exists there: statements that would change nothing."""
    if m := _ATTACH_MEMORY.match(text):
        row = cur.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = ? AND path IS NULL "
                          "AND NOT internal", [m.group(1)]).fetchone()
        return bool(row and row[0])
    m = _CREATE_EXISTING.match(text + " ")
    if m is None:
        return False
    kind, catalog, schema, name = m.group(1).upper(), m.group(2), m.group(3), m.group(4)
    if (kind == "SCHEMA") != (name is None):  # schema: catalog.schema; view: catalog.schema.name
        return False
    if kind == "SCHEMA":
        sql, params = "SELECT count(*) FROM duckdb_schemas() WHERE database_name = ? AND schema_name = ?", [catalog, schema]
    else:
        sql = "SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name = ? AND view_name = ?"
        params = [catalog, schema, name]
    row = cur.execute(sql, params).fetchone()
    return bool(row and row[0])


def _refusal(i: int, what: str) -> str:
    return f"sql: statement {i} is {what}; the store is read-only here, only {ALLOWED} run (nothing was executed)"
