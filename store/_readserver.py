"""Reads while a run records: the writing process answers read-only queries for other processes on `<db>.sock`.

DuckDB lets one process hold a file for writing and no other process open it at all. So the process that holds
the writer serves reads: a Unix socket beside the file (mode 0600, removed on close; a stale one left by a
killed process is replaced, anything else there is refused in one line), one session per client connection,
each on its own DuckDB cursor in its own thread, so a query sees every committed event and never holds the
writer's lock. A session runs what store._readonly allows (one rule set with `sql` on a free store; the
instance has external access off while it serves). Bounds: at most SESSIONS sessions (the next is refused in
one line), an idle session is closed after IDLE_S, a statement is interrupted after TIMEOUT_S or when its
client goes away, rows are streamed in batches, and statements run one at a time within SHARE of the wall
clock, so readers cannot take the run's cores. Frames are a 4-byte big-endian length (its top bit says
another frame of the same message follows) of at most 1 MiB, and a message is a msgpack body.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
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
from searchtrace.store._interrupt import close_when_free
from searchtrace.store._readonly import session_statements, store_only
from searchtrace.store._schema import first_line, lock_message

T = TypeVar("T")
_LEN = struct.Struct(">I")
_MORE = 1 << 31  # top bit of a frame's length: the message goes on in the next frame
MAX_FRAME = 1 << 20  # bytes of one frame's body; a request is one frame
_SUN_PATH_MAX = 107  # bytes a sockaddr_un path may hold (without its NUL)
_BATCH_BYTES = 256 << 10  # rows are sent in messages of about this size

SESSIONS = 8  # concurrent client sessions; the next one is refused in one line
IDLE_S = 60.0  # a session with no request for this long is closed
TIMEOUT_S = 30.0  # a statement's limit, fetching included (SEARCHTRACE_READ_TIMEOUT_S sets another)
SHARE = 0.15  # of the wall clock, at most this much goes to reads (one at a time), so a run keeps its pace ...
MAX_PAUSE_S = 5.0  # ... paid back by a pause of at most this after a statement (a long one is bounded by TIMEOUT_S)
WAIT_S = 2.0  # how long a reader retries while a run hands the file over (its socket closes, then its lock goes)


class ReadsEnded(StoreError):
    """The run serving reads ended during a session (read the file again: it is free, or about to be)."""


def read_again(read: Callable[[], T], *, unless: Callable[[], bool] = lambda: False) -> T:
    """`read()`, and once more when the run that served it ended mid-read (the file is then free, or about to be),
    unless `unless()` says the reader itself has gone."""
    try:
        return read()
    except ReadsEnded:
        if unless():
            raise
        return read()


class ReadsBusy(StoreError):
    """The run serving reads has every session slot taken."""


class SocketTaken(StoreError):
    """Something that is not this run's read socket sits at `<db>.sock`."""


class Request(msgspec.Struct, kw_only=True):
    sql: str
    params: list[Any] | dict[str, Any] | None = None


class Reply(msgspec.Struct, kw_only=True):
    """One message of an answer: the first has the columns (or the error), `more` says rows follow."""

    error: str | None = None
    columns: list[tuple[str, str]] = []
    rows: list[list[Any]] = []
    more: bool = False


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
    """One message, cut into frames of at most MAX_FRAME bytes."""
    view = memoryview(body)
    while True:
        part, view = view[:MAX_FRAME], view[MAX_FRAME:]
        sock.sendall(_LEN.pack(len(part) | (_MORE if len(view) else 0)) + bytes(part))
        if not len(view):
            return


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(sock: socket.socket, *, one_frame: bool = False) -> bytes | None:
    """One message; None when the peer closed, or (`one_frame`, a request) sent more than MAX_FRAME bytes."""
    body = bytearray()
    while True:
        head = _recv_exact(sock, _LEN.size)
        if head is None:
            return None
        (n,) = _LEN.unpack(head)
        more, n = bool(n & _MORE), n & ~_MORE
        if n > MAX_FRAME or (more and one_frame):
            return None  # the length alone says it is not ours: nothing of the body is read
        part = _recv_exact(sock, n)
        if part is None:
            return None
        body += part
        if not more:
            return bytes(body)


_GONE = "the client went away"


class _Running(msgspec.Struct):
    """A session's statement in flight, for the watchdog."""

    client: socket.socket
    cur: duckdb.DuckDBPyConnection
    deadline: float
    why: str | None = None  # set when the watchdog interrupted it


def _gone(client: socket.socket) -> bool:
    """True when the client closed its end (a session reads nothing while its statement runs)."""
    try:
        readable, _, _ = select.select([client], [], [], 0)  # a socket with a timeout would wait in recv
        return bool(readable) and client.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


def answer(cur: duckdb.DuckDBPyConnection, req: Request, send: Callable[[bytes], None],
           running: _Running | None = None) -> None:
    """Run one request on a session's cursor and send its answer (encoded Replies) in batches of about
    _BATCH_BYTES; every failure is one line."""
    try:
        statements = session_statements(req.sql, cur)
        ran = [s for s in statements if not s.noop]
        for i, st in enumerate(ran):
            params = req.params if i == len(ran) - 1 else None
            cur.execute(st.text, params) if params is not None else cur.execute(st.text)
        desc = cur.description if ran else None
        if not desc:
            send(_encoder.encode(Reply()))
            return
        columns = [(str(d[0]), str(d[1])) for d in desc]
        n = 256
        rows = [list(r) for r in cur.fetchmany(n)]
        first = True
        while True:
            nxt = [list(r) for r in cur.fetchmany(n)] if rows else []
            body = _encoder.encode(Reply(columns=columns if first else [], rows=rows, more=bool(nxt)))
            first = False
            if len(body) < _BATCH_BYTES // 2 and n < 65536:
                n *= 2  # small rows: bigger batches
            elif len(body) > _BATCH_BYTES and n > 1:
                n //= 2
            send(body)
            if not nxt:
                return
            rows = nxt
    except ReadOnlyViolation as exc:
        send(_encoder.encode(Reply(error=str(exc))))
    except OverflowError:  # a HUGEINT (or wider) value: the frames carry 64-bit integers
        send(_encoder.encode(Reply(error="sql: a value does not fit in 64 bits (a HUGEINT?); CAST it to VARCHAR or "
                                         "DOUBLE in the query")))
    except duckdb.Error as exc:
        why = running.why if running is not None else None
        send(_encoder.encode(Reply(error=f"sql: {why}" if why else f"sql: {first_line(str(exc))}")))


class ReadServer:
    """Serves read sessions for other processes on the socket beside the store, until `close`."""

    def __init__(self, db: str | Path, cursor: Callable[[], duckdb.DuckDBPyConnection], *,
                 sessions: int = SESSIONS, idle_s: float = IDLE_S, timeout_s: float | None = None,
                 share: float = SHARE, refresh: Callable[[duckdb.DuckDBPyConnection], object] | None = None) -> None:
        self.path = socket_path(db)
        self._cursor = cursor  # a new DuckDB cursor on the writer's database
        # run on a session's cursor before each request: what readers derive but may not write themselves (the
        # in-memory tables of the higher layers) brought up to the last commit, so a read sees what a finished store shows
        self._refresh = refresh
        self.sessions, self.idle_s = sessions, idle_s
        self.timeout_s = float(os.environ.get("SEARCHTRACE_READ_TIMEOUT_S", TIMEOUT_S)) if timeout_s is None else timeout_s
        self.share = share
        self._turn = threading.Lock()  # one read statement at a time ...
        self._free_at = 0.0  # ... and none before this moment: reads take at most `share` of the wall clock
        self._closing = threading.Event()
        self._clients: set[socket.socket] = set()
        self._cursors: set[duckdb.DuckDBPyConnection] = set()  # session cursors, interrupted on close
        self._running: dict[int, _Running] = {}  # by thread id: statements in flight
        self._sessions: set[threading.Thread] = set()
        self._lock = threading.Lock()
        first = cursor()
        try:
            store_only(first)  # from now on this instance reads no file but the store's own
        finally:
            first.close()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._bind()
        except BaseException:
            self._sock.close()
            raise
        self._thread = threading.Thread(target=self._accept_loop, name="searchtrace-reads", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="searchtrace-reads-watch", daemon=True)
        self._watchdog.start()

    def _bind(self) -> None:
        """Bind and listen under a private name, then rename it into place: a reader that finds the socket's path
        can connect at once (a path bound but not yet listening refused readers that came too early)."""
        with _addressable(self.path) as addr:
            _clear(self.path, addr)
        private = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        with _addressable(private) as addr:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(addr)  # a killed run of this same pid number left it
            self._sock.bind(addr)
            try:
                os.chmod(addr, 0o600)  # before listen: nobody can connect while it is still open to others
                self._sock.listen(64)
                self._ino = os.lstat(private).st_ino
                os.rename(private, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(addr)
                raise

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closing.is_set():
                    client.close()
                    return
                full = len(self._sessions) >= self.sessions
                if not full:
                    session = threading.Thread(target=self._session, args=(client,), name="searchtrace-read-session",
                                               daemon=True)
                    self._clients.add(client)
                    self._sessions.add(session)
            if full:
                self._refuse(client)
            else:
                session.start()

    def _refuse(self, client: socket.socket) -> None:
        """The session past the limit: one line and the connection closed (no thread, no cursor)."""
        with contextlib.suppress(OSError):
            client.settimeout(1.0)
            _send(client, _encoder.encode(Reply(error=f"busy: the run serving reads has its {self.sessions} sessions "
                                                      "open; try again when one ends")))
        client.close()

    def _session(self, client: socket.socket) -> None:
        """One client: its own cursor (its temp views stay its own), requests answered in order."""
        cur = None
        me = threading.get_ident()
        try:
            client.settimeout(self.idle_s)  # waiting for a request, and for a slow reader to take rows
            with self._lock:
                if self._closing.is_set():
                    return
                cur = self._cursor()
                self._cursors.add(cur)

            def send(body: bytes) -> None:
                _send(client, body)

            while True:
                try:
                    body = _recv(client, one_frame=True)
                except TimeoutError:
                    return  # idle: the slot goes to someone else
                if body is None:
                    return  # closed, or a frame that is not ours
                try:
                    req = _request_decoder.decode(body)
                except msgspec.DecodeError:
                    return
                running = _Running(client, cur, time.monotonic() + self.timeout_s)
                with self._turn:
                    if self._closing.wait(max(0.0, self._free_at - time.monotonic())):
                        return
                    with self._lock:
                        self._running[me] = running
                    t0 = time.monotonic()
                    try:
                        if self._refresh is not None:
                            with contextlib.suppress(duckdb.Error):  # the read itself says what is wrong
                                self._refresh(cur)
                        answer(cur, req, send, running)
                    finally:
                        with self._lock:
                            self._running.pop(me, None)
                        spent = time.monotonic() - t0
                        self._free_at = time.monotonic() + min(MAX_PAUSE_S, spent * (1 / self.share - 1))
                if running.why == _GONE:
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._running.pop(me, None)
                if cur is not None:
                    self._cursors.discard(cur)
            if cur is not None:
                with contextlib.suppress(duckdb.Error):
                    close_when_free(cur)
            with self._lock:
                self._clients.discard(client)
                self._sessions.discard(threading.current_thread())
            client.close()

    def _watch(self) -> None:
        """Interrupt statements past their deadline or whose client went away (they would hold a core on)."""
        while not self._closing.wait(0.1):
            now = time.monotonic()
            with self._lock:  # under the lock: a statement that ended (and left the table) is never interrupted
                for r in self._running.values():
                    if r.why is None and now > r.deadline:
                        r.why = f"the statement ran past the {self.timeout_s:g} s limit of a read session and was stopped"
                    elif r.why is None and _gone(r.client):
                        r.why = _GONE
                    if r.why is not None:  # each tick until it ends: an interrupt before the query starts is lost
                        with contextlib.suppress(duckdb.Error):
                            r.cur.interrupt()

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
            sessions = list(self._sessions)
        self._thread.join(timeout=5)
        self._watchdog.join(timeout=5)
        deadline = time.monotonic() + 10
        while sessions and time.monotonic() < deadline:  # the store closes right after us: no session may hold a cursor
            with self._lock:  # a query in flight would keep the store's connection busy at its close
                for cur in self._cursors:
                    with contextlib.suppress(duckdb.Error):
                        cur.interrupt()  # again each round: an interrupt that comes before the query starts is lost
            sessions[0].join(timeout=0.05)
            sessions = [s for s in sessions if s.is_alive()]
        with contextlib.suppress(FileNotFoundError):
            if os.lstat(self.path).st_ino == self._ino:
                with _addressable(self.path) as addr:
                    os.unlink(addr)

    def __enter__(self) -> ReadServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clear(path: Path, addr: str) -> None:
    """Make room for our socket: a stale socket (nobody listens) goes; anything else there is refused in one line."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        what = "a symbolic link" + ("" if os.path.exists(path) else " to nothing")
    elif not stat.S_ISSOCK(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "a regular file" if stat.S_ISREG(st.st_mode) else "not a socket"
    else:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(1.0)
            probe.connect(addr)
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise SocketTaken(f"{path}: cannot check the socket there ({exc.strerror}); remove it") from None
            os.unlink(addr)  # we hold the file's write lock and nobody listens: a killed run left it
            return
        finally:
            probe.close()
        what = "a socket another process listens on"
    raise SocketTaken(f"{path}: {what} is where this run serves reads; remove it (or stop that process) and run again")


class RemoteCursor:
    """One read session on another process's store: a `Cursor` (store._cursor), as a DuckDB connection is one.

    Rows come in batches as they are fetched, so a reader that stops early (fetchmany, close) costs the run
    nothing more: closing the session interrupts the statement."""

    def __init__(self, db: str | Path) -> None:
        self.db = Path(db)
        self._sock = _connect(self.db)
        self._rows: list[tuple[Any, ...]] = []
        self._next = 0
        self._more = False
        self.description: list[tuple[str, str, None, None, None, None, None]] | None = None

    def _reply(self) -> Reply:
        try:
            body = _recv(self._sock)
        except OSError:
            body = None
        if body is None:
            raise ReadsEnded(f"{self.db}: the run holding it ended during the read; run the command again")
        reply = _reply_decoder.decode(body)
        if reply.error is not None:
            self._more = False
            if reply.error.startswith("sql: statement"):
                raise ReadOnlyViolation(reply.error)
            if reply.error.startswith("busy: "):
                raise ReadsBusy(f"{self.db}: {reply.error.removeprefix('busy: ')}")
            raise duckdb.Error(reply.error.removeprefix("sql: "))
        self._more = reply.more
        return reply

    def execute(self, sql: str, parameters: object = None, /) -> RemoteCursor:
        if isinstance(parameters, dict):
            params: list[Any] | dict[str, Any] | None = dict(parameters)
        elif isinstance(parameters, Sequence) and not isinstance(parameters, str | bytes):
            params = list(parameters)
        elif parameters is None:
            params = None
        else:
            raise TypeError(f"parameters must be a sequence or a mapping, not {type(parameters).__name__}")
        while self._more:  # the rest of the previous answer, still on its way
            self._reply()
        body = _encoder.encode(Request(sql=sql, params=params))
        if len(body) > MAX_FRAME:
            raise duckdb.Error(f"the statement is {len(body)} bytes; a read session takes at most {MAX_FRAME}")
        try:
            _send(self._sock, body)
        except OSError:
            pass  # the answer (or its absence) says why
        reply = self._reply()
        self.description = [(n, t, None, None, None, None, None) for n, t in reply.columns] or None
        self._rows = [tuple(r) for r in reply.rows]
        self._next = 0
        return self

    def _fill(self, want: int | None) -> None:
        """Take batches until `want` rows are buffered past the cursor (None: all of them)."""
        while self._more and (want is None or len(self._rows) - self._next < want):
            if self._next:
                del self._rows[: self._next]
                self._next = 0
            self._rows.extend(tuple(r) for r in self._reply().rows)

    def fetchone(self) -> tuple[Any, ...] | None:
        self._fill(1)
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        self._fill(size)
        out = self._rows[self._next : self._next + size]
        self._next += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        self._fill(None)
        out = self._rows[self._next :]
        self._rows, self._next = [], 0
        return out

    def cursor(self) -> RemoteCursor:
        """A new session (as a DuckDB cursor is a new connection: temp views are not shared)."""
        return RemoteCursor(self.db)

    def interrupt(self) -> None:
        """Stop the statement in flight from another thread, as DuckDB's `interrupt` does: the session's socket is
        shut, so the serving run interrupts it (its client went away) and a read waiting here ends (ReadsEnded)."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RemoteCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


NO_READS = " (it serves no reads: it predates live reads or is not a searchtrace run)"


def _connect(db: Path) -> socket.socket:
    path = socket_path(db)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with _addressable(path) as addr:
            sock.connect(addr)
    except OSError:
        sock.close()
        raise StoreLocked(lock_message(db) + NO_READS) from None
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
        except StoreLocked as held:
            try:
                return open_session()
            except StoreLocked:
                if time.monotonic() > deadline:  # the file's own line names the holder (its PID), the session's cannot
                    raise StoreLocked(str(held) + NO_READS) from None
        time.sleep(0.05)


def read_connection(db: str | Path) -> Cursor:
    """A read-only connection to `db`: the file itself when free, else a session on the process that holds it."""
    from searchtrace.store._readonly import open_read_only

    def the_file() -> Cursor:
        return open_read_only(db)

    return while_held(the_file, lambda: open_remote(db))
