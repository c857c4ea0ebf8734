"""Table layout, the hash-chain definition, and opening a DuckDB file with one-line errors."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from searchtrace.store._errors import NotAStore, StoreLocked

SCHEMA_VERSION = "1"
HEAD_KEY = "head"  # searchtrace_meta row "<last position>:<last hash>", written by every append's transaction
GENESIS = "0" * 64
SEP = "\x1f"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

DDL = """
CREATE TABLE IF NOT EXISTS events(
  position    BIGINT      NOT NULL,
  event_id    UUID        NOT NULL,
  stream_id   VARCHAR     NOT NULL,
  stream_seq  INTEGER     NOT NULL,
  type        VARCHAR     NOT NULL,
  run_id      VARCHAR     NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL,
  payload     JSON        NOT NULL,
  hash        VARCHAR     NOT NULL
);
CREATE TABLE IF NOT EXISTS blobs(
  sha256  VARCHAR NOT NULL,
  bytes   BLOB    NOT NULL,
  codec   VARCHAR NOT NULL,
  n_bytes BIGINT  NOT NULL
);
CREATE TABLE IF NOT EXISTS searchtrace_meta(key VARCHAR NOT NULL, value VARCHAR NOT NULL);
"""

def sql_hash_input(prev: str, alias: str = "") -> str:
    """SQL for the same bytes `row_hash` hashes, from a stored row (`alias.` prefix) and a previous-hash expression."""
    c = f"{alias}." if alias else ""
    return (
        f"concat_ws(chr(31), {prev}, CAST({c}position AS VARCHAR), replace(CAST({c}event_id AS VARCHAR), '-', ''), "
        f"{c}stream_id, CAST({c}stream_seq AS VARCHAR), {c}type, {c}run_id, CAST(epoch_us({c}recorded_at) AS VARCHAR), "
        f"CAST({c}payload AS VARCHAR))"
    )


def epoch_us(ts: datetime) -> int:
    return (ts - _EPOCH) // timedelta(microseconds=1)


def row_hash(
    prev: str,
    position: int,
    event_id: uuid.UUID,
    stream_id: str,
    stream_seq: int,
    type_: str,
    run_id: str,
    recorded_at_us: int,
    payload: bytes,
) -> str:
    """sha256 over the previous row's hash and every other column of this row (docs/reference/events.md), fields joined by 0x1f.

    The event id is its 32 lowercase hex digits, recorded_at its microseconds since the epoch, the payload the
    stored JSON bytes. `store._rows.Chain` inlines this same formula in its hot loop; `verify` recomputes it in SQL.
    """
    head = f"{prev}{SEP}{position}{SEP}{event_id.int:032x}{SEP}{stream_id}{SEP}{stream_seq}{SEP}{type_}{SEP}{run_id}{SEP}{recorded_at_us}{SEP}"
    return hashlib.sha256(head.encode() + payload).hexdigest()


def lock_message(path: Path, detail: str = "") -> str:
    """The one line for a file another process holds, naming that process as far as DuckDB's error says."""
    pid = re.search(r"PID (\d+)", detail)
    who = holder(int(pid.group(1))) if pid else "another process"
    return f"{path}: the database is held by {who}; wait for it to finish or use another --db"


_COMMAND = re.compile(r"[a-z][a-z-]{0,19}\Z")  # a subcommand's name: safe to show (never an argument's value)


def holder(pid: int) -> str:
    """Who holds a file, from /proc/PID/cmdline: a searchtrace command by its name, any other program by its file
    name only (arguments may hold secrets); "another process" when the table cannot be read."""
    try:
        argv = [os.fsdecode(a) for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return f"another process (PID {pid})"
    names = [os.path.basename(a) for a in argv[:3]]
    if "searchtrace" in names:  # `searchtrace CMD`, `python …/bin/searchtrace CMD` or `python -m searchtrace CMD`
        after = argv[names.index("searchtrace") + 1:]
        command = next((a for a in after if not a.startswith("-")), "")
        what = f"searchtrace {command}" if _COMMAND.match(command) else "searchtrace"
        return f"another searchtrace process ({what}, PID {pid})"
    program = names[0] if names else ""
    return f"another process ({program[:40]}, PID {pid})" if program else f"another process (PID {pid})"


# Every connection the project opens: DuckDB never downloads or loads an extension on its own (a SQLite file
# given as --db would otherwise fetch the sqlite extension from the network and create folders in $HOME).
OFFLINE: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def connect(path: Path, *, read_only: bool, config: dict[str, str | bool | int | float | list[str]] | None = None) -> duckdb.DuckDBPyConnection:
    """Open the file offline (see OFFLINE), turning DuckDB's lock and format errors into one-line store errors."""
    try:
        return duckdb.connect(str(path), read_only=read_only, config={**(config or {}), **OFFLINE})
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" in msg.lower():
            raise StoreLocked(lock_message(path, msg)) from None
        if "extension" in msg.lower():  # DuckDB recognised another database format (SQLite, ...)
            raise NotAStore(f"{path}: not a DuckDB database (another database format); not a searchtrace store") from None
        raise NotAStore(f"{path}: cannot open as a DuckDB database ({first_line(msg)})") from None
    except duckdb.Error as exc:
        if "different configuration" in str(exc):
            raise StoreLocked(
                f"{path}: this process already has the database open in another mode; close it first"
            ) from None
        raise NotAStore(f"{path}: not a searchtrace store ({first_line(str(exc))})") from None


def first_line(msg: str) -> str:
    return msg.strip().splitlines()[0] if msg.strip() else "unknown error"


def require_database(path: Path) -> None:
    """A command that reads a store never creates one: a missing file is one line, the same for every command."""
    if not path.exists():
        raise NotAStore(f"{path}: no such database; record, demo or import something first")


def open_store(
    path: Path, *, read_only: bool, config: dict[str, str | bool | int | float | list[str]] | None = None
) -> duckdb.DuckDBPyConnection:
    """Open a searchtrace store: a writer creates the schema in a new or empty file, a reader needs a store."""
    if read_only:
        require_database(path)
    con = connect(path, read_only=read_only, config=config)
    try:
        if not check_schema(con, path):
            if read_only:
                raise NotAStore(f"{path}: empty database, not a searchtrace store")
            create_schema(con)
    except BaseException:
        con.close()
        raise
    return con


def check_schema(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """True when the file already is a searchtrace store; False when it is empty; NotAStore otherwise."""
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        row = (con.execute("SELECT value FROM searchtrace_meta WHERE key = 'schema'").fetchone()
               if "searchtrace_meta" in tables else None)
    except duckdb.IOException as exc:  # a file cut short (a copy that stopped, a full disk) fails on its first read
        raise NotAStore(f"{path}: cannot be read, the file is truncated or damaged ({first_line(str(exc))})") from None
    if "searchtrace_meta" in tables:
        if row is None or row[0] != SCHEMA_VERSION or not {"events", "blobs"} <= tables:
            raise NotAStore(f"{path}: unsupported searchtrace store schema {row[0] if row else None!r}")
        return True
    if tables:
        raise NotAStore(f"{path}: a DuckDB database but not a searchtrace store (it has other tables)")
    return False


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("BEGIN")
    con.execute(DDL)
    con.execute("INSERT INTO searchtrace_meta VALUES ('schema', ?)", [SCHEMA_VERSION])
    _name_segment(con)
    con.execute("COMMIT")


def _name_segment(con: duckdb.DuckDBPyConnection) -> None:
    """docs/how-to/scale.md: every store is a segment, named once by a random id and the host that created it."""
    con.execute("INSERT INTO searchtrace_meta VALUES ('segment_id', ?), ('host', ?)",
                [uuid.uuid4().hex, socket.gethostname()])


def segment_of(con: duckdb.DuckDBPyConnection, *, writable: bool) -> tuple[str, str] | None:
    """(segment_id, host) of a store; a store made before segments existed is named on its first writable open
    (None while it is only read)."""
    rows = dict(con.execute(
        "SELECT key, value FROM searchtrace_meta WHERE key IN ('segment_id', 'host')").fetchall())
    if "segment_id" not in rows:
        if not writable:
            return None
        _name_segment(con)
        return segment_of(con, writable=False)
    return str(rows["segment_id"]), str(rows.get("host", ""))
