"""Reads while a run records: the writing process answers read-only queries for other processes on `<db>.sock`.

DuckDB lets one process hold a file for writing and no other process open it at all. So the process that holds
the writer serves reads: a Unix socket beside the file (mode 0600, removed on close; a stale one left by a
killed process is replaced), one session per client connection, each on its own DuckDB cursor in its own
thread, so a query sees every committed event and never holds the writer's lock. A session accepts the same
statements as `searchtrace sql` plus `CREATE [OR REPLACE] TEMP VIEW` (visible to that session only), which
the report's raw-event views need. Frames are a 4-byte big-endian length and a msgpack body.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import msgspec

from searchtrace.store._cursor import Cursor
from searchtrace.store._errors import ReadOnlyViolation, StoreError, StoreLocked
from searchtrace.store._readonly import read_statements
from searchtrace.store._schema import first_line, lock_message

T = TypeVar("T")
_LEN = struct.Struct(">I")
_MAX_FRAME = 1 << 31
_SUN_PATH_MAX = 107  # bytes a sockaddr_un path may hold (without its NUL)
_TEMP_VIEW = re.compile(r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+VIEW\s", re.IGNORECASE)
_SESSIONS = 16  # concurrent client sessions; more wait for a free one


WAIT_S = 2.0  # how long a reader retries while a run hands the file over (its socket closes, then its lock goes)


class ReadsEnded(StoreError):
    """The run serving reads ended during a session (read the file again: it is free, or about to be)."""


class Request(msgspec.Struct, kw_only=True):
    sql: str
    params: list[Any] | dict[str, Any] | None = None


class Reply(msgspec.Struct, kw_only=True):
    error: str | None = None
    columns: list[tuple[str, str]] = []
    rows: list[list[Any]] = []


def socket_path(db: str | Path) -> Path:
    """Where the writer of `db` serves reads: the file's absolute path plus `.sock`."""
    return Path(os.path.abspath(db) + ".sock")


@contextlib.contextmanager
def _addressable(path: Path) -> Iterator[str]:
    """An address for `path` that fits sockaddr_un: the path itself, or its name through an open fd of its folder."""
    if len(os.fsencode(str(path))) <= _SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def _encode(value: Any) -> Any:
    """Values msgpack has no native form for (DuckDB hands out a few) go as text."""
    return str(value)


_encoder = msgspec.msgpack.Encoder(enc_hook=_encode)
_reply_decoder = msgspec.msgpack.Decoder(Reply)
_request_decoder = msgspec.msgpack.Decoder(Request)


def _send(sock: socket.socket, body: bytes) -> None:
    sock.sendall(_LEN.pack(len(body)) + body)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket) -> bytes | None:
    head = _recv_exact(sock, _LEN.size)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n > _MAX_FRAME:
        return None
    return _recv_exact(sock, n)


def session_statements(sql: str, cur: duckdb.DuckDBPyConnection) -> list[str]:
    """The statements a read session runs: reads as `searchtrace sql` allows them, and what derived views need
    without writing the file: temp views, `SET search_path`, attaching `:memory:`, schemas and views inside an
    in-memory catalog."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise ReadOnlyViolation(f"sql: {first_line(str(exc))}") from None
    out: list[str] = []
    for i, st in enumerate(statements, 1):
        text = st.query
        if st.type in (duckdb.StatementType.CREATE, duckdb.StatementType.ATTACH, duckdb.StatementType.SET):
            if not _derived_only(text, cur):
                raise ReadOnlyViolation(
                    f"sql: statement {i} is {st.type.name}; a read session runs only reads, temp views, "
                    "SET search_path and views in an in-memory catalog (nothing was executed)"
                )
            out.append(text)
        else:
            out.extend(read_statements(text))
    if not out:
        raise ReadOnlyViolation("sql: no statement given")
    return out


_SET_PATH = re.compile(r"\s*SET\s+search_path\s*=\s*'[\w.,\s]*'\s*;?\s*\Z", re.IGNORECASE)
_ATTACH_MEMORY = re.compile(r"\s*ATTACH\s+(?:IF\s+NOT\s+EXISTS\s+)?':memory:'\s+AS\s+\w+(?:\s*\(READ_ONLY\s+false\))?\s*;?\s*\Z",
                            re.IGNORECASE)
_CREATE_IN = re.compile(
    r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(SCHEMA)|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\.(\w+)(\.\w+)?[\s;]", re.IGNORECASE
)


def _derived_only(text: str, cur: duckdb.DuckDBPyConnection) -> bool:
    """True for a statement that can only touch session state or an in-memory catalog, never the file."""
    if _TEMP_VIEW.match(text) or _SET_PATH.match(text) or _ATTACH_MEMORY.match(text):
        return True
    m = _CREATE_IN.match(text + " ")
    if m is None or (m.group(1) is None) != (m.group(4) is not None):  # schema: catalog.schema; view: catalog.schema.name
        return False
    row = cur.execute(
        "SELECT count(*) FROM duckdb_databases() WHERE database_name = ? AND path IS NULL AND NOT internal", [m.group(2)]
    ).fetchone()
    return bool(row and row[0])


def run_request(cur: duckdb.DuckDBPyConnection, req: Request) -> Reply:
    """Run one request on a session's cursor; every failure comes back as one line."""
    try:
        statements = session_statements(req.sql, cur)
        for i, text in enumerate(statements):
            params = req.params if i == len(statements) - 1 else None
            cur.execute(text, params) if params is not None else cur.execute(text)
        desc = cur.description
        if not desc:
            return Reply()
        columns = [(str(d[0]), str(d[1])) for d in desc]
        return Reply(columns=columns, rows=[list(r) for r in cur.fetchall()])
    except ReadOnlyViolation as exc:
        return Reply(error=str(exc))
    except duckdb.Error as exc:
        return Reply(error=f"sql: {first_line(str(exc))}")


class ReadServer:
    """Serves read sessions for other processes on the socket beside the store, until `close`."""

    def __init__(self, db: str | Path, cursor: Callable[[], duckdb.DuckDBPyConnection]) -> None:
        self.path = socket_path(db)
        self._cursor = cursor  # a new DuckDB cursor on the writer's database
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._slots = threading.BoundedSemaphore(_SESSIONS)
        self._closing = threading.Event()
        self._clients: set[socket.socket] = set()
        self._running: set[duckdb.DuckDBPyConnection] = set()  # session cursors, interrupted on close
        self._sessions: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._bind()
        self._thread = threading.Thread(target=self._accept_loop, name="searchtrace-reads", daemon=True)
        self._thread.start()

    def _bind(self) -> None:
        with _addressable(self.path) as addr:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                    os.unlink(addr)  # we hold the file's write lock, so whoever served here is gone
            self._sock.bind(addr)
            os.chmod(addr, 0o600)  # before listen: nobody can connect while it is still open to others
        self._ino = os.lstat(self.path).st_ino
        self._sock.listen(64)

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            session = threading.Thread(target=self._session, args=(client,), name="searchtrace-read-session", daemon=True)
            with self._lock:
                if self._closing.is_set():
                    client.close()
                    return
                self._clients.add(client)
                self._sessions.add(session)
            session.start()

    def _session(self, client: socket.socket) -> None:
        """One client: its own cursor (its temp views stay its own), requests answered in order."""
        cur = None
        try:
            with self._slots:
                with self._lock:
                    if self._closing.is_set():
                        return
                    cur = self._cursor()
                    self._running.add(cur)
                while True:
                    body = _recv(client)
                    if body is None:
                        return
                    try:
                        req = _request_decoder.decode(body)
                    except msgspec.DecodeError:
                        return
                    reply = run_request(cur, req)
                    _send(client, _encoder.encode(reply))
        except OSError:
            return
        finally:
            with self._lock:
                if cur is not None:
                    self._running.discard(cur)
                    cur.close()
                self._clients.discard(client)
                self._sessions.discard(threading.current_thread())
            client.close()

    def close(self) -> None:
        """Stop serving and remove the socket (only if it is still ours)."""
        if self._closing.is_set():
            return
        self._closing.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with self._lock:
            for c in self._clients:
                with contextlib.suppress(OSError):
                    c.shutdown(socket.SHUT_RDWR)
            for cur in self._running:  # a query in flight would keep the store's connection busy at its close
                with contextlib.suppress(duckdb.Error):
                    cur.interrupt()
            sessions = list(self._sessions)
        self._thread.join(timeout=5)
        for session in sessions:  # the store closes right after us: no session may still hold a cursor
            session.join(timeout=10)
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(self.path).st_ino == self._ino:
                with _addressable(self.path) as addr:
                    os.unlink(addr)

    def __enter__(self) -> ReadServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteCursor:
    """One read session on another process's store: a `Cursor` (store._cursor), as a DuckDB connection is one."""

    def __init__(self, db: str | Path) -> None:
        self.db = Path(db)
        self._sock = _connect(self.db)
        self._rows: list[tuple[Any, ...]] = []
        self._next = 0
        self.description: list[tuple[str, str, None, None, None, None, None]] | None = None

    def execute(self, sql: str, parameters: object = None, /) -> RemoteCursor:
        if isinstance(parameters, dict):
            params: list[Any] | dict[str, Any] | None = dict(parameters)
        elif isinstance(parameters, Sequence) and not isinstance(parameters, str | bytes):
            params = list(parameters)
        elif parameters is None:
            params = None
        else:
            raise TypeError(f"parameters must be a sequence or a mapping, not {type(parameters).__name__}")
        try:
            _send(self._sock, _encoder.encode(Request(sql=sql, params=params)))
            body = _recv(self._sock)
        except OSError:
            body = None
        if body is None:
            raise ReadsEnded(f"{self.db}: the run holding it ended during the read; run the command again")
        reply = _reply_decoder.decode(body)
        if reply.error is not None:
            if reply.error.startswith("sql: statement"):
                raise ReadOnlyViolation(reply.error)
            raise duckdb.Error(reply.error.removeprefix("sql: "))
        self.description = [(n, t, None, None, None, None, None) for n, t in reply.columns] or None
        self._rows = [tuple(r) for r in reply.rows]
        self._next = 0
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        out = self._rows[self._next : self._next + size]
        self._next += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        out = self._rows[self._next :]
        self._next = len(self._rows)
        return out

    def cursor(self) -> RemoteCursor:
        """A new session (as a DuckDB cursor is a new connection: temp views are not shared)."""
        return RemoteCursor(self.db)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RemoteCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(db: Path) -> socket.socket:
    path = socket_path(db)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _addressable(path) as addr:
            sock.connect(addr)
    except OSError:
        sock.close()
        raise StoreLocked(lock_message(db) + " (it serves no reads: it predates live reads or is not a searchtrace run)") from None
    return sock


def open_remote(db: str | Path) -> RemoteCursor:
    """A read session on the process that holds `db`; StoreLocked (the usual message) when none serves it."""
    return RemoteCursor(db)


class RemoteStore:
    """Stands in for a read-only EventLog where readers only want cursors (`report`, `export`, `view`)."""

    def __init__(self, db: str | Path) -> None:
        self.path = Path(db)
        self._first: RemoteCursor | None = RemoteCursor(db)  # fail now (StoreLocked) rather than at the first query

    def cursor(self) -> RemoteCursor:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return open_remote(self.path)

    def close(self) -> None:
        if self._first is not None:
            self._first.close()
            self._first = None

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def while_held(open_file: Callable[[], T], open_session: Callable[[], T], wait_s: float = WAIT_S) -> T:
    """The file when free, else a session on the run that holds it; retried for `wait_s` while a run ends (its
    socket goes before its lock), then the usual lock message."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return open_file()
        except StoreLocked:
            try:
                return open_session()
            except StoreLocked:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.05)


def read_connection(db: str | Path) -> Cursor:
    """A read-only connection to `db`: the file itself when free, else a session on the process that holds it."""
    from searchtrace.store._readonly import open_read_only

    def the_file() -> Cursor:
        return open_read_only(db)

    return while_held(the_file, lambda: open_remote(db))
