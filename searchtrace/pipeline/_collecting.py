"""`searchtrace collect` (docs/how-to/otel.md): an OTLP/HTTP trace receiver on 127.0.0.1 that records spans as they arrive.

It opens its run as `record` and `proxy` do (`run.started` with a `collect` config, then the questions of FILE);
`POST /v1/traces` takes an `ExportTraceServiceRequest` as protobuf (`application/x-protobuf`) or OTLP JSON
(`application/json`), optionally gzip-encoded; its spans are mapped by `replay.interchange`'s `Collector` and
committed before the reply (so an exporter's retry of an unanswered batch is a no-op, across restarts too: event
ids come from span ids, and the collector reads its run's ids from the store). docs/reliability.md lists what each
request gets (late spans and refused traces as OTLP partial success; 400, 413, 503). The local-server guard of docs/concepts/security.md (loopback Host, no cross-site request, body and nesting caps) wraps it;
other processes read the file meanwhile through `<db>.sock`, as with `record` and `proxy`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from searchtrace.adapters import SEARCH_PROVIDERS, LocalGuard, MiB, bind_local, serve_local
from searchtrace.engine import dataset_id, open_run, question_file
from searchtrace.pipeline._live import serving_reads
from searchtrace.pipeline._recording import sandbox_rows
from searchtrace.replay.interchange import Collector, ToolNames, decode_spans, otlp_response
from searchtrace.store import BadInput, EventLog, Writer, open_writer

TRACES = "/v1/traces"
PROTOBUF = "application/x-protobuf"
MAX_BODY = 16 * MiB


class TooLarge(BadInput):
    """A body over --max-body once inflated: 413, as for a body over it on the wire."""


def _inflate(body: bytes, cap: int) -> bytes:
    """A gzip body inflated, never past `cap` bytes (a small body that inflates to gigabytes costs the cap); every
    member whole (a body cut short is refused, never read as a shorter request)."""
    out = b""
    rest = body
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += d.decompress(rest, cap + 1 - len(out))
        except zlib.error as exc:
            raise BadInput(f"gzip body does not inflate ({exc})") from None
        if len(out) > cap or d.unconsumed_tail:
            raise TooLarge(f"gzip body inflates beyond --max-body ({cap} bytes)")
        if not d.eof:
            raise BadInput("gzip body is cut short (its stream does not end); nothing was recorded")
        rest = d.unused_data
        if not rest.strip(b"\0"):  # the last member (gzip allows trailing zero padding)
            return out


class Receiver:
    """The receiver's routes over one collector and one writer; a lock keeps each request's mapping whole."""

    def __init__(self, collector: Collector, writer: Writer, max_body: int, log: EventLog) -> None:
        self.collector, self.writer, self.max_body, self.log = collector, writer, max_body, log
        self.lock = anyio.Lock()
        self.requests = 0

    def app(self) -> Any:
        return LocalGuard(Starlette(routes=[Route(TRACES, self.traces, methods=["POST"])]), max_body=self.max_body,
                          media_paths={TRACES: frozenset({PROTOBUF})})

    async def traces(self, request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        protobuf = media == PROTOBUF
        body = await request.body()
        try:
            encoding = request.headers.get("content-encoding", "identity").strip().lower()
            if encoding == "gzip":
                body = _inflate(body, self.max_body)
            elif encoding not in ("", "identity"):
                raise BadInput(f"Content-Encoding {encoding[:40]!r} is not supported (gzip or none)")
            spans = decode_spans(body, "request", protobuf=protobuf)
            async with self.lock:
                events, blobs, rejected, why = self.collector.add(spans)
                if events or blobs:
                    try:
                        await self.writer.append(events, blobs=blobs)
                    except Exception as exc:  # nothing of the request is stored: forget it, so a retry records it
                        await anyio.to_thread.run_sync(self.collector.restore, self.log)
                        return JSONResponse({"error": f"not recorded ({type(exc).__name__}); retry"}, status_code=503)
        except TooLarge as exc:
            return JSONResponse({"error": str(exc)}, status_code=413)
        except BadInput as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        self.requests += 1
        data, kind = otlp_response(rejected, why, protobuf=protobuf)
        return Response(data, media_type=kind)


def config_of(questions: str, provider: str | None, tools: ToolNames) -> dict[str, Any]:
    """The run.started config of a collected run: the `collect` key (the agent loop is the client's own, as with
    `proxy`) with what maps the spans, the question file, and the providers a trace may name."""
    how: dict[str, Any] = {"search_tools": sorted(tools.search), "fetch_tools": sorted(tools.fetch)}
    if provider is not None:
        how["provider"] = provider
    return {"collect": how, "dataset": {"path": questions, "id": dataset_id(questions)},
            "providers": {p: {"kind": p, "params": {}} for p in sorted(SEARCH_PROVIDERS)}}


async def collect(db: Path, questions: str, run_id: str, *, port: int, provider: str | None = None,
                  tools: ToolNames | None = None, max_body: int = MAX_BODY,
                  ready: Callable[[str, int], None] | None = None) -> tuple[int, int, int, int, int]:
    """Serve until SIGINT/SIGTERM; (spans recorded, trajectories abandoned at the stop, requests answered, spans
    acknowledged and not recorded (held for traces that never named their question), spans refused in replies)."""
    listener = bind_local(port)  # before the store is opened: a busy port is one line and leaves the store untouched
    rows = await anyio.to_thread.run_sync(lambda: question_file(questions, rows=sandbox_rows(questions)))
    tools = tools or ToolNames()
    config = await anyio.to_thread.run_sync(lambda: config_of(questions, provider, tools))
    collector = Collector(run_id, rows, provider=provider, tools=tools)
    with listener:
        log = await anyio.to_thread.run_sync(EventLog, db)
        try:
            with serving_reads(log):
                head = await anyio.to_thread.run_sync(lambda: open_run(log, run_id, config, rows, by="collect"))
                await anyio.to_thread.run_sync(collector.restore, log)
                async with open_writer(log, max_delay=0.0) as writer:
                    if head:  # the run opened as `record` and `proxy` open theirs: config, then its questions
                        await writer.append(head)
                    receiver = Receiver(collector, writer, max_body, log)
                    await serve_local(receiver.app(), listener, ready=ready)
                    async with receiver.lock:
                        events, blobs, abandoned = collector.abandon_open()
                        if events:
                            await writer.append(events, blobs=blobs)
                return collector.spans, abandoned, receiver.requests, collector.dropped, collector.rejected
        finally:
            await anyio.to_thread.run_sync(log.close)

