"""`searchtrace sql "SELECT …"`: any read query over the store, through a read-only connection."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import msgspec

from searchtrace import pipeline
from searchtrace.store import BadInput


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    raise NotImplementedError(type(value))


def _json_columns(types: list[str]) -> set[int]:
    return {i for i, t in enumerate(types) if t.upper() == "JSON"}


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


MAX_QUERY = 1 << 20  # bytes of a query read from --file or stdin (a read session takes no more)


def _read_query(source: str, read: Callable[[int], bytes]) -> str:
    """A query from a file or stdin: at most MAX_QUERY bytes of UTF-8, else one line saying why."""
    data = read(MAX_QUERY + 1)
    if len(data) > MAX_QUERY:
        raise BadInput(f"{source}: a query is at most {MAX_QUERY} bytes; this one is longer")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{source}: not UTF-8 text (byte {exc.start})") from None


def _query_file(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return _read_query(str(path), fh.read)
    except IsADirectoryError:
        raise BadInput(f"--file {path}: a folder, not a file of SQL") from None
    except OSError as exc:
        raise BadInput(f"--file {path}: cannot read ({exc.strerror})") from None


@click.command("sql")
@click.argument("query", required=False)
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"),
              show_default=True, help="The store to query.")
@click.option("--file", "query_file", type=click.Path(path_type=Path), default=None,
              help="Read the query from this file (e.g. one that starts with a -- comment); QUERY `-` reads stdin.")
@click.option("--json", "fmt", flag_value="json", help="Rows as one JSON array of objects (JSON columns parsed).")
@click.option("--csv", "fmt", flag_value="csv", help="Rows as CSV with a header line.")
def sql(query: str | None, db: Path, query_file: Path | None, fmt: str | None) -> None:
    """Run read-only SQL (SELECT, WITH … SELECT, DESCRIBE, SHOW, EXPLAIN) over the events and blobs tables.

    QUERY is the SQL itself, `-` to read it from stdin, or absent with --file. Works while a run records: the
    recording process answers through `<db>.sock`."""
    if (query is None) == (query_file is None):
        raise click.UsageError("give the query as QUERY, as `-` (read from stdin) or with --file FILE, one of them")
    if query_file is not None:
        query = _query_file(query_file)
    elif query == "-":
        query = _read_query("stdin", sys.stdin.buffer.read)
    assert query is not None
    result = pipeline.run_sql(db, query)
    if fmt == "json":
        _print_json(result.columns, _json_columns(result.types), result.rows)
    elif fmt == "csv":
        _print_csv(result.columns, result.rows)
    else:
        _print_table(result.columns, result.rows)
