"""Run searchtrace's MCP server over stdio or streamable HTTP until the client leaves or a signal; open trajectories
then end `abandoned` (docs/how-to/mcp.md)."""

from __future__ import annotations

import signal
import socket
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio import CancelScope
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from searchtrace.adapters import Fetcher, LocalGuard, SearchProvider, bind_local, refusal, serve_local
from searchtrace.engine._fanout import bad_input_alone
from searchtrace.engine._record import dataset_id, question_file
from searchtrace.engine.mcp._select import selection
from searchtrace.engine.mcp._server import McpTools
from searchtrace.engine.mcp._wrap import MAX_FRAME, Outcome, WrapSession, relay
from searchtrace.engine.proxy import MAX_BODY, ProxyRecorder, record_while
from searchtrace.store import BadInput, EventLog

T = TypeVar("T")
GRACE_S = 5.0  # on a stop, how long the calls in flight get to be recorded


def config_of(*, mcp: dict[str, Any], questions: str, dataset_id: str, provider: str,
              params: dict[str, Any]) -> dict[str, Any]:
    """The run.started config of a run recorded by `searchtrace mcp` or `mcp wrap` (its `mcp` key tells replay there
    is no agent loop of ours)."""
    return {
        "mcp": mcp,
        "dataset": {"path": questions, "id": dataset_id},
        "providers": {provider: {"kind": provider, "params": params}},
    }


async def serve(db: Path, questions_path: str, run_id: str, *, provider: str, search: SearchProvider,
                fetch: Fetcher, upstream: str, qid: str | None = None, http: bool = False, port: int = 0,
                rows: Sequence[dict[str, Any]] | None = None,
                reads: Callable[[EventLog], AbstractContextManager[Any]] = nullcontext,
                ready: Callable[[str], None] | None = None, max_body: int = MAX_BODY) -> tuple[int, int]:
    """Serve until the stdio client leaves (or, over HTTP, a signal); returns (trajectories abandoned, events
    appended). `search`/`fetch`: provider P's adapter and the fetch backend (live or the sandbox's), owned by the
    caller; `rows`: the sandbox's question rows for the dataset `sandbox`; `ready(line)` once it serves."""
    listener = bind_local(port) if http else None  # before the store is opened: a busy port leaves it untouched
    try:
        config = {"upstream": upstream, "transport": "http" if http else "stdio"}

        async def body(recorder: ProxyRecorder) -> None:
            tools = McpTools(recorder, provider, search, fetch, qid=qid)
            if listener is None:
                await _stdio(tools, ready)
            else:
                await _http(tools, listener, ready, max_body)

        _, abandoned, appended = await recording(db, questions_path, run_id, provider=provider, qid=qid, rows=rows,
                                                 reads=reads, mcp=config, params=dict(search.params), body=body)
        return abandoned, appended
    finally:
        if listener is not None:
            listener.close()


async def wrap(db: Path, questions_path: str, run_id: str, *, provider: str, cmd: Sequence[str],
               qid: str | None = None, rows: Sequence[dict[str, Any]] | None = None,
               reads: Callable[[EventLog], AbstractContextManager[Any]] = nullcontext,
               max_frame: int = MAX_FRAME) -> tuple[Outcome, int, int]:
    """Relay stdio to the MCP server CMD and record its calls until it exits; (how it ended, trajectories
    abandoned, events appended)."""

    async def body(recorder: ProxyRecorder) -> Outcome:
        session = WrapSession(recorder, provider, qid, max_frame=max_frame)
        try:
            return await relay(cmd, session)
        finally:
            await session.aclose()

    # the command's name only: its arguments may hold a key
    return await recording(db, questions_path, run_id, provider=provider, qid=qid, rows=rows, reads=reads,
                           mcp={"wrap": Path(cmd[0]).name, "transport": "stdio"}, params={}, body=body)


async def recording(db: Path, questions_path: str, run_id: str, *, provider: str, qid: str | None,
                    rows: Sequence[dict[str, Any]] | None, reads: Callable[[EventLog], AbstractContextManager[Any]],
                    mcp: dict[str, Any], params: dict[str, Any],
                    body: Callable[[ProxyRecorder], Awaitable[T]]) -> tuple[T, int, int]:
    """The store open for run `run_id` (opened by `mcp` when new; its trajectories restored) while `body` records
    through the recorder; then every trajectory still open finished `abandoned`. (body's value, trajectories
    abandoned, events appended)."""
    questions = await anyio.to_thread.run_sync(lambda: question_file(questions_path, rows=rows))
    if qid is not None and all(q.qid != qid for q in questions):
        raise BadInput(f"--qid {qid!r}: not in {questions_path}")
    recorder = ProxyRecorder(run_id, questions, [provider],
                             config_of(mcp=mcp, questions=questions_path, dataset_id=dataset_id(questions_path),
                                       provider=provider, params=params), by="mcp")
    log = await anyio.to_thread.run_sync(EventLog, db)
    try:
        with bad_input_alone(), reads(log):
            head = await anyio.to_thread.run_sync(recorder.head, log)
            await anyio.to_thread.run_sync(recorder.restore, log)
            value, abandoned = await record_while(recorder, log, head, lambda: body(recorder), settle_s=GRACE_S)
            return value, abandoned, recorder.appended
    finally:
        await anyio.to_thread.run_sync(log.close)


async def _stdio(tools: McpTools, ready: Callable[[str], None] | None) -> None:
    """One client over this process's stdin/stdout, until it closes stdin or a signal stops us."""
    server = tools.server(by_question=tools.qid is None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_cancel_on_signal, tg.cancel_scope)
        async with stdio_server() as (read, write):
            if ready is not None:
                ready("stdio")
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def _cancel_on_signal(scope: CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _http(tools: McpTools, listener: socket.socket, ready: Callable[[str], None] | None, max_body: int) -> None:
    """Streamable HTTP on 127.0.0.1 (both protocol eras, as the SDK serves them) until SIGINT/SIGTERM."""
    port = int(listener.getsockname()[1])
    loopback = [f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")]
    manager = StreamableHTTPSessionManager(
        app=tools.server(by_question=False), max_request_body_size=max_body,
        security_settings=TransportSecuritySettings(allowed_hosts=loopback,
                                                    allowed_origins=[f"http://{h}" for h in loopback]))
    async with manager.run():
        await serve_local(http_app(tools, manager, max_body), listener,
                          ready=None if ready is None else lambda host, bound: ready(f"http://{host}:{bound}"))


def http_app(tools: McpTools, manager: StreamableHTTPSessionManager, max_body: int) -> ASGIApp:
    """`/t/<provider>/<qid>/mcp` (or `/mcp` with the trajectory header) to the SDK's transport, behind the
    local-server guard; a request naming no trajectory of this run gets one JSON line and records nothing."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        sel = selection(scope)
        why = sel if isinstance(sel, tuple) else (
            None if (unknown := tools.unknown(sel.provider, sel.qid)) is None else (404, unknown))
        if why is not None:
            for message in refusal(*why):
                await send(message)
            return
        await manager.handle_request(scope, receive, send)
        if scope.get("method") == "DELETE":  # the client ended its session: so ends its trajectory
            assert not isinstance(sel, tuple)
            await tools.left(sel)

    return LocalGuard(app, max_body=max_body)
