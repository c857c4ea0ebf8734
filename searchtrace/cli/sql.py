"""`searchtrace sql "SELECT …"`: any read query over the store, through a read-only connection."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import click
import duckdb
import msgspec

from searchtrace.analytics.views import ensure_views
from searchtrace.store.errors import BadInput
from searchtrace.store.interrupt import close_when_free, interruptible
from searchtrace.store.readonly import read_statements
from searchtrace.store.readserver import ReadsEnded, read_connection
from searchtrace.store.schema import first_line


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    raise NotImplementedError(type(value))


def _json_columns(description: list[tuple[Any, ...]]) -> set[int]:
    return {i for i, d in enumerate(description) if str(d[1]).upper() == "JSON"}


def _print_json(names: list[str], json_cols: set[int], rows: list[tuple[Any, ...]]) -> None:
    out = []
    for row in rows:
        item = {}
        for i, (name, value) in enumerate(zip(names, row, strict=True)):
            if i in json_cols and isinstance(value, str):
                try:
                    value = msgspec.json.decode(value)
                except (msgspec.DecodeError, RecursionError):  # nested deeper than can be followed: kept as text
                    pass
            item[name] = value
        out.append(item)
    sys.stdout.buffer.write(msgspec.json.encode(out, enc_hook=_jsonable) + b"\n")


def _print_csv(names: list[str], rows: list[tuple[Any, ...]]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(rows)


def _print_table(names: list[str], rows: list[tuple[Any, ...]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(*names, show_lines=False, caption=f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
    for row in rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    Console(soft_wrap=False).print(table)


@click.command("sql")
@click.argument("query")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"),
              show_default=True, help="The store to query.")
@click.option("--json", "fmt", flag_value="json", help="Rows as one JSON array of objects (JSON columns parsed).")
@click.option("--csv", "fmt", flag_value="csv", help="Rows as CSV with a header line.")
def sql(query: str, db: Path, fmt: str | None) -> None:
    """Run read-only SQL (SELECT, WITH … SELECT, DESCRIBE, SHOW, EXPLAIN) over the events and blobs tables.

    Works while a run records: the recording process answers through `<db>.sock`."""
    statements = read_statements(query)  # refuses writes before the file is even opened
    try:
        names, json_cols, rows = _run(db, statements)
    except ReadsEnded:  # the run that served us ended mid-read: the file is (about to be) free
        names, json_cols, rows = _run(db, statements)
    if fmt == "json":
        _print_json(names, json_cols, rows)
    elif fmt == "csv":
        _print_csv(names, rows)
    else:
        _print_table(names, rows)


def _run(db: Path, statements: list[str]) -> tuple[list[str], set[int], list[tuple[Any, ...]]]:
    """Column names, JSON columns and rows of the last statement."""
    cur = read_connection(db)  # the file, or a read session on the process that holds it

    def work() -> tuple[list[str], set[int], list[tuple[Any, ...]]]:
        ensure_views(cur, temp=True)  # the documented v_* views, even on a store no report has touched
        try:
            for text in statements:
                cur.execute(text)
            names = [d[0] for d in cur.description or []]
            json_cols = _json_columns(list(cur.description or []))
            rows = cur.fetchall() if cur.description else []  # errors can come while fetching, too
        except duckdb.Error as exc:
            raise BadInput(f"sql: {first_line(str(exc))}") from None
        return names, json_cols, rows

    try:
        return interruptible(cur, work)
    finally:
        close_when_free(cur)
