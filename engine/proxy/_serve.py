"""Run the recording proxy on 127.0.0.1 until SIGINT/SIGTERM; open trajectories then end `abandoned`."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx

from searchtrace.adapters import HOSTED_LAYERS, SEARCH_PROVIDERS, bind_local, serve_local
from searchtrace.engine._record import dataset_id, question_file
from searchtrace.engine.proxy._app import MAX_BODY, Proxy
from searchtrace.engine.proxy._limits import Limits, recorded_usd
from searchtrace.engine.proxy._recorder import FinalMode, ProxyRecorder, config_of, record_while
from searchtrace.store import EventLog, Payload

GATHER_S = 0.02  # without --durable: how long a recorded call waits for others to share its commit

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
    answer (docs/concepts/shown.md)."""
    if (upstream == "sandbox") != (sandbox is not None):
        raise ValueError("upstream 'sandbox' goes with the sandbox's Upstream, and only it")
    listener = bind_local(port)  # before the store is opened: a busy port is one line and leaves the store untouched
    questions = await anyio.to_thread.run_sync(lambda: question_file(questions_path, rows=rows))
    providers = sorted({*SEARCH_PROVIDERS, *HOSTED_LAYERS})  # docs/how-to/hosted.md: a hosted layer is an arm too
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

    async def work() -> None:
        # the readers of streamed replies outlive the server's requests: their calls are recorded first
        async with proxy.serving():
            await serve_local(proxy.app(), listener, ready=ready)

    # a reply that does not wait for its commit lets the calls of the next GATHER_S share it (a crash loses what
    # was not committed either way: --durable is the mode that loses no replied call)
    _, abandoned = await record_while(recorder, log, head, work, gather_s=0.0 if durable else GATHER_S)
    await proxy.aclose()
    return abandoned, recorder.appended
