"""`searchtrace mcp wrap -- CMD…`: a transparent stdio relay to another MCP server that records its search calls
(docs/how-to/mcp.md).

Every byte the client writes goes to CMD's stdin and every byte CMD writes to its stdout goes to ours, unchanged and
in order (newline-delimited JSON-RPC, the stdio transport of every protocol era). The relay reads a copy of each
line: a `tools/call` request is remembered by its id, and the response with that id is recorded into the session's
trajectory — a known search tool's (adapters._mcp_results) as search.called, one search.result per hit and
search.completed; any other tool as tool.called with its raw result. What does not read as JSON-RPC is relayed all
the same and said in one line on stderr; a result that does not parse, or is over the cap, is recorded as a
`bad_response`. When CMD exits while the client is still there, the calls it left unanswered are recorded as
failed and the trajectory finishes with reason `error`.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, Process

import searchtrace.engine.proxy as routes
from searchtrace.adapters import READERS, Endpoint, SearchAdapter, build_search, read_hits, scrub_bytes
from searchtrace.engine.mcp._select import one_trajectory
from searchtrace.engine.proxy import ProxyRecorder, Traj
from searchtrace.store import BadInput, SearchStatus

MAX_FRAME = 16 << 20  # default cap on one line the relay reads a copy of (bytes); a longer one is relayed unread
STOP_S = 5.0  # after the client left, how long CMD gets to exit before it is terminated
_CHUNK = 1 << 16
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')
_json = msgspec.json.Decoder()
_enc = msgspec.json.Encoder(order="sorted")


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    started: float


@dataclass
class Outcome:
    """How a relayed session ended: CMD's exit code, and the fault that ended it (None: the client left)."""

    exit_code: int | None
    fault: str | None = None
    notes: list[str] = field(default_factory=list)


class WrapSession:
    """One relayed session: the pending tools/call requests and the trajectory they are recorded into."""

    def __init__(self, recorder: ProxyRecorder, provider: str, qid: str | None, *, max_frame: int = MAX_FRAME,
                 say: Callable[[str], None] | None = None) -> None:
        self.recorder = recorder
        self.provider = provider
        self.qid = qid
        self.max_frame = max_frame
        self.say = say or (lambda line: print(f"searchtrace mcp wrap: {line}", file=sys.stderr, flush=True))
        self.pending: dict[str, _Call] = {}
        self.traj: Traj | None = None
        self.unnamed = False  # said once: calls before the trajectory was named are relayed, not recorded
        # the providers' own adapters parse what their MCP servers return (they send nothing)
        self.parsers: dict[str, SearchAdapter] = {}

    def parser(self, provider: str) -> SearchAdapter:
        if provider not in self.parsers:
            self.parsers[provider] = build_search(provider, Endpoint(base_url="http://unused.invalid"),
                                                  key_fallback="unused")
        return self.parsers[provider]

    async def aclose(self) -> None:
        for p in self.parsers.values():
            await p.aclose()

    # -- the client's lines --------------------------------------------------------------------------------------

    def from_client(self, line: bytes | None, size: int, head: bytes = b"") -> None:
        """A line the client sent (None: over the cap, relayed unread)."""
        if line is None:
            self.say(f"a client frame of {size} bytes is over the cap of {self.max_frame} bytes; relayed unread")
            return
        msg = _decode(line)
        if msg is None:
            if line.strip():
                self.say(f"a client frame is not JSON-RPC ({len(line)} bytes: {_head(line)}); relayed unchanged")
            return
        for m in msg if isinstance(msg, list) else [msg]:
            if isinstance(m, dict) and m.get("method") == "tools/call" and "id" in m:
                params: dict[str, Any] = m["params"] if isinstance(m.get("params"), dict) else {}
                args: dict[str, Any] = params["arguments"] if isinstance(params.get("arguments"), dict) else {}
                self.pending[_key(m["id"])] = _Call(str(params.get("name", "")), dict(args), time.monotonic())

    # -- the server's lines --------------------------------------------------------------------------------------

    def from_server(self, line: bytes | None, size: int, head: bytes = b"") -> None:
        """A line CMD wrote (None: over the cap, relayed unread; `head`: its first bytes, to find its id)."""
        if line is None:
            call_id = _id_in(head)
            call = self.pending.pop(call_id, None) if call_id is not None else None
            why = f"a result of {size} bytes is over the cap of {self.max_frame} bytes (--max-result)"
            self.say(why + ("; relayed unread, recorded as bad_response" if call else "; relayed unread"))
            if call is not None:
                self._record(call, status="bad_response", raw=None, error=why)
            return
        msg = _decode(line)
        if msg is None:
            call_id = _id_in(line)
            call = self.pending.pop(call_id, None) if call_id is not None else None
            if line.strip():
                self.say(f"the server wrote a frame that is not JSON-RPC ({len(line)} bytes: {_head(line)}); "
                         "relayed unchanged" + ("; its call recorded as bad_response" if call else ""))
            if call is not None:
                self._record(call, status="bad_response", raw=line, error="the reply is not JSON")
            return
        for m in msg if isinstance(msg, list) else [msg]:
            if isinstance(m, dict) and "id" in m and ("result" in m or "error" in m):
                call = self.pending.pop(_key(m["id"]), None)
                if call is not None:
                    self._reply(call, m, line)

    def _reply(self, call: _Call, m: dict[str, Any], line: bytes) -> None:
        error = m.get("error")
        result: dict[str, Any] = m["result"] if isinstance(m.get("result"), dict) else {}
        texts = [str(c.get("text", "")) for c in result.get("content") or [] if isinstance(c, dict)
                 and c.get("type") == "text"]
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            self._record(call, status="http_error", raw=line, error=f"JSON-RPC error: {message}"[:500])
        elif result.get("isError"):
            self._record(call, status="http_error", raw=line, error="\n".join(texts)[:500] or "isError", texts=texts)
        else:
            self._record(call, status="ok", raw=line, texts=texts)

    def _record(self, call: _Call, *, status: SearchStatus, raw: bytes | None, error: str | None = None,
                texts: Sequence[str] = ()) -> None:
        t = self._trajectory(call)
        if t is None or not t.open:
            return
        # every configured key, and any the client sent in a key-named argument: scrubbed from the raw reply, and
        # key-named arguments left out of what is stored (the recorder scrubs every stored string too)
        arguments, secrets = routes.tool_arguments(call.arguments)
        raw = scrub_bytes(raw, *secrets) if raw is not None else None
        latency_ms = (time.monotonic() - call.started) * 1000.0
        reader = READERS.get(call.name)
        if reader is None:
            t.b.tool(call_id=f"t{t.b.built}", name=call.name, arguments=_enc.encode(arguments).decode(),
                     status="ok" if status == "ok" else "error", result=raw, latency_ms=latency_ms)
        else:
            hits = []
            if texts and status in ("ok", "http_error"):
                try:
                    hits = read_hits(call.name, texts, self.parser(reader.provider))
                    status, error = "ok", None  # an empty reply flagged isError (Brave's "No web results found")
                except ValueError as exc:
                    if status == "ok":
                        status, error = "bad_response", str(exc)[:500]
            query = arguments.get("query")
            params = {k: v for k, v in arguments.items() if k != "query"}
            t.b.search(query=query if isinstance(query, str) else _enc.encode(query).decode(), provider=reader.provider,
                       params=params, status=status, hits=hits, latency_ms=latency_ms, raw=raw, error=error,
                       provider_ms=latency_ms, queue_ms=0.0)
        self.recorder.emit(t, secrets)

    def _trajectory(self, call: _Call) -> Traj | None:
        if self.traj is None:
            t, why = one_trajectory(self.recorder, self.provider, self.qid, call.arguments)
            if t is None:
                if not self.unnamed:
                    self.unnamed = True
                    self.say(f"tools/call {call.name} relayed, not recorded: {why}")
                return None
            self.traj = t
        return self.traj

    def died(self, exit_code: int | None) -> str:
        """CMD exited while the client was still there: its unanswered calls recorded as failed, the trajectory
        finished with reason `error`; the one line that says so."""
        names = ", ".join(dict.fromkeys(c.name for c in self.pending.values()))
        why = (f"the MCP server exited with code {exit_code}" if exit_code is not None else "the MCP server's output ended") \
            + (f" during tools/call {names}" if names else "")
        t = self.traj
        if t is None and self.pending:
            t = self._trajectory(next(iter(self.pending.values())))
        if t is not None and t.open:
            for call in self.pending.values():
                t.b.failed(what=f"mcp:{call.name}", status="server_exited", call_id=None, error=why)
            t.b.finish("error", error=why)
            self.recorder.emit(t)
        self.pending.clear()
        return why


async def relay(cmd: Sequence[str], session: WrapSession, *, stdin_fd: int = 0, stdout_fd: int = 1,
                stop_s: float = STOP_S) -> Outcome:
    """Run CMD and relay stdio both ways until CMD exits (after the client left, or on its own) or a signal."""
    try:
        process = await anyio.open_process(list(cmd), stdin=-1, stdout=-1, stderr=None)
    except OSError as exc:
        raise BadInput(f"cannot start the MCP server {cmd[0]!r}: {exc.strerror or exc}") from None
    client_left = anyio.Event()
    async with process:
        assert process.stdin is not None and process.stdout is not None
        to_server = process.stdin
        write_out = _writer(stdout_fd)

        async def client_to_server() -> None:
            try:
                await _pump(_fd_reader(stdin_fd), to_server.send, session.from_client, session.max_frame)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # CMD closed its stdin (it is exiting): what the client sends now has nowhere to go
            finally:
                client_left.set()
                with anyio.CancelScope(shield=True):
                    try:
                        await to_server.aclose()
                    except (anyio.BrokenResourceError, OSError):
                        pass

        async def stop_when_client_left() -> None:
            await client_left.wait()
            with anyio.move_on_after(stop_s):
                await process.wait()
                return
            process.terminate()
            with anyio.move_on_after(stop_s):
                await process.wait()
                return
            process.kill()

        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_signal, tg.cancel_scope, process)
            tg.start_soon(client_to_server)
            tg.start_soon(stop_when_client_left)
            await _pump(_stream_reader(process.stdout), write_out, session.from_server, session.max_frame)
            code = await process.wait()
            tg.cancel_scope.cancel()
        if client_left.is_set() and not session.pending:
            return Outcome(exit_code=code)
        return Outcome(exit_code=code, fault=session.died(code))  # it exited on its own, or with calls unanswered


async def _cancel_on_signal(scope: anyio.CancelScope, process: Process) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if process.returncode is None:
                process.terminate()
            scope.cancel()
            return


Receive = Callable[[], Awaitable[bytes]]


def _fd_reader(fd: int) -> Receive:
    async def receive() -> bytes:
        return await anyio.to_thread.run_sync(os.read, fd, _CHUNK, abandon_on_cancel=True)

    return receive


def _stream_reader(stream: ByteReceiveStream) -> Receive:
    async def receive() -> bytes:
        try:
            return await stream.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""

    return receive


def _writer(fd: int) -> Callable[[bytes], Awaitable[None]]:
    async def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = await anyio.to_thread.run_sync(os.write, fd, view)
            view = view[n:]

    return write


async def _pump(receive: Receive, send: Callable[[bytes], Awaitable[None]],
                on_line: Callable[[bytes | None, int, bytes], None], cap: int) -> None:
    """Relay bytes until EOF, handing each whole line to `on_line` before it is passed on (so a request is known
    before its server can answer it); a line over `cap` is passed on as it arrives and handed over as None with its
    size (and its head)."""
    buf = bytearray()
    over: int | None = None  # bytes of the current line relayed so far, when it went over the cap
    head = b""
    while True:
        chunk = await receive()
        if not chunk:
            break
        start = 0
        while start < len(chunk):
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl + 1
            piece = chunk[start:end]
            start = end
            if over is not None:
                await send(piece)
                over += len(piece)
            elif len(buf) + len(piece) > cap:
                head = bytes(buf[:4096]) if buf else piece[:4096]
                await send(bytes(buf) + piece)
                over = len(buf) + len(piece)
                buf.clear()
            else:
                buf += piece
            if nl < 0:
                continue
            if over is not None:
                on_line(None, over, head)
                over, head = None, b""
            else:
                line = bytes(buf)
                buf.clear()
                on_line(line, len(line), b"")
                await send(line)
    if buf:  # a last line without its newline
        on_line(bytes(buf), len(buf), b"")
        await send(bytes(buf))
    elif over is not None:
        on_line(None, over, head)


def _decode(line: bytes) -> Any:
    try:
        return _json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None


def _key(value: Any) -> str:
    """A JSON-RPC id as a dict key (1 and "1" are different ids)."""
    return _enc.encode(value).decode()


def _id_in(head: bytes) -> str | None:
    """The JSON-RPC id in the head of a line that does not decode (cut off, or broken)."""
    m = _ID.search(head)
    return m.group(1).decode("utf-8", "replace") if m else None


def _head(line: bytes) -> str:
    text = line[:60].decode("utf-8", "replace").strip()
    return repr(text + ("…" if len(line) > 60 else ""))


__all__ = ["MAX_FRAME", "Outcome", "WrapSession", "relay"]
