"""Run the recording proxy on 127.0.0.1 until SIGINT/SIGTERM; open trajectories then end `abandoned`."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractContextManager, nullcontext
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx
import uvicorn

from searchtrace.adapters import SEARCH_PROVIDERS
from searchtrace.engine._record import question_file
from searchtrace.engine.proxy._app import MAX_BODY, Proxy
from searchtrace.engine.proxy._limits import Limits, recorded_usd
from searchtrace.engine.proxy._recorder import FinalMode, ProxyRecorder, config_of
from searchtrace.store import BadInput, EventLog, Payload, open_writer


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the proxy stops on its own signal receiver, then finishes up."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def dataset_id(path: str) -> str:
    import hashlib

    if path == "sandbox":
        return "sandbox"
    return f"{Path(path).name}:{hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]}"


class Upstream(NamedTuple):
    """The world a `sandbox` proxy forwards to: its root URL and the transport that reaches it."""

    root: str
    transport: httpx.AsyncBaseTransport


async def serve(db: Path, questions_path: str, run_id: str, *, port: int, upstream: str, durable: bool = False,
                ready: Callable[[str, int], None] | None = None,
                reads: Callable[[EventLog], AbstractContextManager[Any]] = nullcontext,
                sandbox: Upstream | None = None, rows: Sequence[dict[str, Any]] | None = None,
                max_body: int = MAX_BODY, limits: Limits | None = None, final: FinalMode = "call") -> tuple[int, int]:
    """Serve until a signal; returns (trajectories abandoned, events appended). The application layer passes
    `reads(log)`, which wraps the serving (it serves other processes' reads of the file), and for the sandbox
    its world: `sandbox` for `upstream="sandbox"`, `rows` for the question set `sandbox`; `max_body` caps a
    request's body (bytes); `limits` are every trajectory's guardrails; `final` says how a trajectory gets its
    answer (SPEC §17)."""
    if (upstream == "sandbox") != (sandbox is not None):
        raise ValueError("upstream 'sandbox' goes with the sandbox's Upstream, and only it")
    listener = bind(port)  # before the store is opened: a busy port is one line and leaves the store untouched
    questions = await anyio.to_thread.run_sync(lambda: question_file(questions_path, rows=rows))
    providers = sorted(SEARCH_PROVIDERS)
    recorder = ProxyRecorder(run_id, questions, providers,
                             config_of(upstream=upstream, questions=questions_path, dataset_id=dataset_id(questions_path),
                                       providers=providers, limits=limits.config() if limits else None, final=final),
                             final=final)
    with listener:
        log = await anyio.to_thread.run_sync(EventLog, db)
        try:
            with reads(log):
                return await _serve_log(log, recorder, listener, sandbox=sandbox, durable=durable, ready=ready,
                                        max_body=max_body, limits=limits)
        finally:
            await anyio.to_thread.run_sync(log.close)


def bind(port: int) -> socket.socket:
    """The proxy's listening socket on 127.0.0.1:`port` (0: any free port); a port in use is bad input."""
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto says TCP, and an accepted
    # socket inherits proto 0 from a listener made without it (each reply then waited ~40 ms for a delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise BadInput(f"--port: 127.0.0.1:{port} is in use ({exc.strerror}); pick another port "
                       "(or 0 for any free one)") from None
    sock.set_inheritable(True)
    return sock


async def _serve_log(log: EventLog, recorder: ProxyRecorder, listener: socket.socket, *, sandbox: Upstream | None,
                     durable: bool, ready: Callable[[str, int], None] | None, max_body: int,
                     limits: Limits | None) -> tuple[int, int]:
    head = await anyio.to_thread.run_sync(recorder.head, log)
    usd = limits if limits is not None and limits.max_usd is not None else None

    def spent(provider: str, payloads: list[Payload]) -> Fraction:
        """What an open trajectory spent before this start (it counts towards --max-usd)."""
        assert usd is not None
        return recorded_usd(usd, provider, payloads, log.get_blob)

    await anyio.to_thread.run_sync(recorder.restore, log, spent if usd is not None else None)
    proxy = Proxy(recorder, live=sandbox is None, transport=sandbox.transport if sandbox else None,
                  root=sandbox.root if sandbox else None, durable=durable, max_body=max_body, limits=limits)
    port = int(listener.getsockname()[1])
    server = _Server(uvicorn.Config(proxy.app(), host="127.0.0.1", port=port, log_level="warning",
                                    access_log=False, lifespan="off", timeout_graceful_shutdown=2))
    abandoned = 0
    async with open_writer(log, max_delay=0.0) as writer:  # the recorder batches already
        if head:
            await writer.append(head)
        async with anyio.create_task_group() as recording:
            recording.start_soon(recorder.run, writer)
            try:
                # the readers of streamed replies outlive the server's requests: their calls are recorded first
                async with proxy.serving(), anyio.create_task_group() as tg:
                    tg.start_soon(_stop_on_signal, server)
                    if ready is not None:
                        tg.start_soon(_announce, server, ready, port)
                    await server.serve(sockets=[listener])
                    tg.cancel_scope.cancel()
            finally:
                abandoned = recorder.abandon_open()
                recorder.close()  # the recorder drains what is queued, then its task ends
    await proxy.aclose()
    return abandoned, recorder.appended


async def _stop_on_signal(server: uvicorn.Server) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            server.should_exit = True
            return


async def _announce(server: uvicorn.Server, ready: Callable[[str, int], None], port: int) -> None:
    while not server.started:
        await anyio.sleep(0.01)
    ready("127.0.0.1", port)
