"""The proxy's ASGI app: `/t/<provider>/<qid>/<route>` forwarded live or to the sandbox, and recorded (docs/how-to/own-agent.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, Literal, NamedTuple

import anyio
import httpx
import msgspec
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

import searchtrace.engine.proxy._routes as routes
from searchtrace.adapters import (
    SEARCH_PROVIDERS,
    Endpoint,
    HostedTurn,
    LocalGuard,
    MiB,
    SearchAdapter,
    SearchHit,
    Secret,
    assemble,
    build_search,
    default_transport,
    estimate_tokens,
    is_key_name,
    model_of,
    page_markdown,
    parse_reply,
    read_hosted,
    request_evidence,
    resolved,
    scrub_bytes,
    scrub_text,
    shorten,
)
from searchtrace.engine._config import MAX_EPOCHS
from searchtrace.engine.proxy._limits import Limits, Unpriced, chat_usd, exceeded, fetch_usd, search_usd
from searchtrace.engine.proxy._recorder import ProxyRecorder, Traj
from searchtrace.store import FetchStatus, SearchStatus

_QUERY_FIELDS = ("query", "q")
MAX_BODY = 16 * MiB  # default of `--max-body`: the largest request an agent may send
# The part of an upstream reply the proxy holds to parse and record it. A longer reply is relayed to the agent as
# it arrives (never held whole, keys scrubbed as it goes) and recorded without its body: a fetch as `too_large`,
# a search or chat turn as `bad_response`, with its size.
MAX_RECORD = 16 * MiB
UPSTREAM_CONNECTIONS = 64  # keep-alive connections the proxy holds to its upstreams
_PIPE_CHUNKS = 8  # chunks a piped reply holds between its reader and a slow agent (backpressure beyond)
_BAD_BODY = (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError, msgspec.DecodeError,
             msgspec.ValidationError)


def error(status: int, message: str, kind: str = "searchtrace_proxy") -> Response:
    """A one-line JSON error of the proxy itself, in OpenAI's error shape (`type` "limit" for a guardrail)."""
    return Response(msgspec.json.encode({"error": {"message": message, "type": kind}}), status,
                    media_type="application/json")


class Upstream(msgspec.Struct, kw_only=True):
    """One forwarded request's outcome: the reply (status, headers, body) or a transport fault."""

    status: int | None
    headers: list[tuple[str, str]] = []
    body: bytes = b""
    fault: str | None = None  # "timeout" or "http_error" when no reply came; "bad_response": one it cannot decode
    message: str = ""
    latency_ms: float = 0.0


class _Rest(NamedTuple):
    """The part of an upstream reply not read yet: its response (to close) and its body's iterator."""

    response: httpx.Response
    chunks: AsyncIterator[bytes]


class _Piped(StreamingResponse):
    """A reply fed chunk by chunk by its reader task. The reader's stream is closed however the response ends (the
    agent left mid-stream, or before the first byte), so the reader learns it and goes on reading alone."""

    def __init__(self, recv: MemoryObjectReceiveStream[bytes], status: int, headers: dict[str, str]) -> None:
        async def body() -> AsyncIterator[bytes]:
            async with recv:
                async for chunk in recv:
                    yield chunk

        super().__init__(body(), status, headers=headers)
        self._recv = recv

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._recv.close()


class _Out:
    """The reader's end of a piped reply: chunks go to the agent while it reads, and nowhere once it left."""

    def __init__(self, send: MemoryObjectSendStream[bytes]) -> None:
        self.stream = send
        self.left = False  # the agent stopped reading before the end

    async def put(self, chunk: bytes) -> None:
        if self.left:
            return
        try:
            await self.stream.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.left = True


class Proxy:
    """Forwards each request to its endpoint with the proxy's own key and records it in its trajectory."""

    def __init__(self, recorder: ProxyRecorder, *, live: bool, transport: httpx.AsyncBaseTransport | None = None,
                 root: str | None = None, timeout_s: float = 120.0, durable: bool = False,
                 max_body: int = MAX_BODY, max_record: int = MAX_RECORD, limits: Limits | None = None) -> None:
        """`live`: forward to the real endpoints; else to `root` (the in-process sandbox's, through `transport`);
        `max_body`: the cap on a request's body, `max_record` on the reply bytes held to record a call; `limits`:
        the guardrails of every trajectory."""
        if not live and root is None:
            raise ValueError("a proxy that is not live needs the root of the world it forwards to")
        self.recorder = recorder
        self.live = live
        self.root = root
        # durable: each reply waits for its events' commit (a SIGKILL then loses only calls whose reply was not
        # sent, at the price of one commit per call); else replies go out at once and the recorder commits behind
        # them (a SIGKILL may lose the calls of the last commit window). `final` always waits for its commit.
        self.durable = durable
        self.max_body = max_body
        self.max_record = max_record
        self.limits = limits or Limits()
        if transport is None:  # live: aiohttp underneath, as the adapters use for real hosts (its parser is C)
            transport = default_transport(Endpoint(base_url="http://unused.invalid", concurrency=UPSTREAM_CONNECTIONS))
        # requests go to the transport itself (no client's auth flow, redirect loop or cookie jar per call, as
        # adapters.EndpointClient does); the client builds them and resolves Gemini's redirects (`_hosted`)
        self.transport = transport
        self.client = httpx.AsyncClient(transport=transport, timeout=timeout_s, follow_redirects=False)
        self._default_headers = dict(self.client.headers.items())  # lower-case names, as the agent's arrive
        self._timeout = self.client.timeout.as_dict()
        # the adapters' own parsers normalise what the client received (docs/concepts/protocol.md); they never send anything
        self.parsers: dict[str, SearchAdapter] = {
            name: build_search(name, Endpoint(base_url="http://unused.invalid"), key_fallback="unused")
            for name in SEARCH_PROVIDERS
        }
        self._readers: TaskGroup | None = None

    async def aclose(self) -> None:
        await self.client.aclose()
        for p in self.parsers.values():
            await p.aclose()

    @contextlib.asynccontextmanager
    async def serving(self, grace_s: float = 5.0) -> AsyncIterator[None]:
        """The task group of the streamed replies' readers, which outlive their requests (a reply goes on being read
        and is recorded after its agent left). On exit the calls in flight get `grace_s` to end; the rest are
        recorded as cut off by the stop."""
        async with anyio.create_task_group() as tg:
            self._readers = tg
            try:
                yield
            finally:
                with anyio.move_on_after(grace_s):
                    await self.recorder.settle_all()
                tg.cancel_scope.cancel()
                self._readers = None

    def app(self) -> ASGIApp:
        """The routes behind the local-server guard (loopback Host, no cross-site request, JSON bodies, caps)."""
        return LocalGuard(Starlette(routes=[
            Route("/", self.index),
            Route("/{route:path}", self.route, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
        ]), max_body=self.max_body)

    async def index(self, request: Request) -> Response:
        return Response(msgspec.json.encode({
            "searchtrace_proxy": self.recorder.run_id, "upstream": "live" if self.live else "sandbox",
            "providers": sorted(self.recorder.providers), "questions": len(self.recorder.questions),
            "trajectories": len(self.recorder.trajs),
        }), media_type="application/json")

    async def route(self, request: Request) -> Response:
        """The trajectory a request names (`/t/<provider>/<qid>/…` or the trajectory header), then final or forward.
        The path is split before it is decoded, so a percent-encoded qid may hold any character."""
        raw = request.scope.get("raw_path") or request.scope["path"].encode()
        header = request.headers.get(routes.TRAJECTORY_HEADER)
        provider_only = header is not None and "/" not in header.strip()  # the qid is found by the question's text
        try:
            sel = routes.select(raw.decode("latin-1"), None if provider_only else header)
            if sel is None:
                found = await self._by_text(request, routes.route_of(raw.decode("latin-1")),
                                            header.strip() if header is not None and provider_only else None)
                if isinstance(found, str):
                    return error(404, found)
                sel = found
        except ValueError as exc:
            return error(400, str(exc))
        if sel.rest == "final" and request.method == "POST":
            return await self.final(request, sel)
        return await self.forward(request, sel)

    async def _by_text(self, request: Request, rest: str, provider: str | None) -> routes.Selected | str:
        """The trajectory of a request that names none (docs/how-to/claude-gemini.md): a model call's by its first user
        message, matched word for word against the questions (as `collect` does), of the one provider the header
        or the run names; a search or fetch by the query or URL the last turn of one open trajectory asked for.
        The line that says why none is found, otherwise."""
        unnamed = ("no trajectory named: use /t/<provider>/<qid>/<route>, header X-Searchtrace-Trajectory: "
                   "<provider>/<qid> with /<route>, or send the question's exact text as the first user message")
        target = routes.classify(rest)
        if target is None or target.kind == "other":
            return unnamed
        body = await request.body()
        if target.kind == "chat":
            _, messages, _ = request_evidence(target.api, _model_request(target, body))
            text = next((_content_text(m.get("content")) for m in messages or [] if m.get("role") == "user"), "")
            qid = self.recorder.qid_of_text(text) if text else None
            if qid is None:
                return unnamed + f" (the first user message is no question of run {self.recorder.run_id!r} word for word)"
            providers = [provider] if provider else sorted(self.recorder.providers)
            if len(providers) != 1:
                return (f"question {qid!r} matched by its text, but run {self.recorder.run_id!r} has providers "
                        f"{', '.join(providers)}: name one with header X-Searchtrace-Trajectory: <provider>")
            return routes.Selected(providers[0], qid, rest)
        if target.kind == "search":
            value, _ = _query_and_params(request, body)
            provider = target.endpoint
        else:
            value = target.path + (f"?{request.url.query}" if request.url.query else "")
        found = self.recorder.asking(provider, value or "") if value else []
        if len(found) != 1:
            return unnamed + (f" ({len(found)} open trajectories asked for {shorten(value or '')!r})" if found else "")
        return routes.Selected(found[0].provider, found[0].qid, rest)

    def _trajectory(self, request: Request, sel: routes.Selected) -> tuple[Traj | None, Response | None]:
        epoch = routes.epoch_of(request.headers.get(routes.EPOCH_HEADER, "1"), MAX_EPOCHS)
        if isinstance(epoch, str):
            return None, error(400, epoch)
        t, why = self.recorder.lookup(sel.provider, sel.qid, epoch)
        if t is None:
            return None, error(404, why or "unknown trajectory")
        if t.limited is not None:  # a 400 again, which clients do not retry
            return None, error(400, f"trajectory {t.trajectory_id!r} finished at a limit ({t.limited})", kind="limit")
        if not t.open:
            return None, error(409, f"trajectory {t.trajectory_id!r} is finished; start another epoch")
        return t, None

    async def final(self, request: Request, sel: routes.Selected) -> Response:
        """`POST …/final {"answer": "..."}`: answer.final and trajectory.finished, once the trajectory's calls in
        flight are recorded, acknowledged once committed. With `--final last-reply` the answer may be left out:
        the last model reply without tool calls is taken."""
        body = _json_or_none(await request.body())
        last = self.recorder.final_mode == "last-reply"
        if not isinstance(body, dict) or not (isinstance(body.get("answer"), str) or last and "answer" not in body):
            return error(400, 'the body of …/final must be a JSON object {"answer": "..."}'
                         + (" (or {} to take the last model reply)" if last else ""))
        t, refused = self._trajectory(request, sel)
        if t is None:
            assert refused is not None
            return refused
        secrets = routes.request_secrets(request.headers, request.query_params.multi_items(), body, own=None)
        t.closing = True  # from now on a new call of this trajectory gets 409
        await self.recorder.settle(t)
        iteration = None
        answer = body.get("answer")
        if not isinstance(answer, str):
            if t.b.last_reply is None:
                t.closing = False
                return error(400, f"trajectory {t.trajectory_id!r} has no model reply without tool calls to take "
                                  "as its answer; send {\"answer\": \"...\"}")
            iteration, answer = t.b.last_reply
        await self.recorder.final(t, answer, secrets, iteration=iteration).wait()
        return Response(msgspec.json.encode({"trajectory_id": t.trajectory_id, "finished": True}),
                        media_type="application/json")

    async def forward(self, request: Request, sel: routes.Selected) -> Response:
        target = routes.classify(sel.rest)
        if target is None:
            return error(404, f"no endpoint at /{sel.rest} (known: the sandbox's routes, docs/concepts/sandbox.md)")
        if target.endpoint in SEARCH_PROVIDERS and target.endpoint != sel.provider:
            # another provider's results would be recorded as this trajectory's: refused before it starts
            return error(404, f"route /{sel.rest} is provider {target.endpoint!r}; trajectory "
                              f"{sel.provider}/{sel.qid} searches with {sel.provider!r}")
        body = await request.body()  # before the trajectory is looked up: no wait between its check and `begin`
        t, refused = self._trajectory(request, sel)
        if t is None:
            assert refused is not None
            return refused
        if self.limits.any and target.kind != "other":
            try:
                why = exceeded(self.limits, kind=target.kind, endpoint=target.endpoint, request=_model_request(target, body),
                               turns=t.b.turns + t.chats, usage=t.b.usage, spent=t.spent)
            except Unpriced as exc:
                return error(400, str(exc))
            if why is not None:
                return await self._stop_at_limit(t, why)
        chat = target.kind == "chat"
        self.recorder.begin(t, chat=chat)
        piped = False
        try:
            key = routes.upstream_key(target.endpoint, self.live)
            # every key of this call (ours, the configured ones, the agent's): scrubbed from the reply as it enters,
            # so neither the agent nor an event sees one; a fetch's query string is the page's URL, not a credential
            query = request.query_params.multi_items() if target.kind != "fetch" else []
            secret = routes.request_secrets(request.headers, query, _json_or_none(body), own=key)
            req = self._request(request, sel, target, body, key)
            if chat and (target.stream or _wants_stream(body)):
                response, piped = await self._stream(t, target, request, req, body, secret)
                return response
            up, rest = await self._send(req)
            if rest is not None:
                piped = True
                return self._pipe(t, target, request, body, rest, up.body, up.status or 502, up.headers, secret,
                                  time.perf_counter() - up.latency_ms / 1000, chat)
            up.body = scrub_bytes(up.body, *secret)  # relayed to the agent and kept as the raw blob
            up.headers = [(k, scrub_text(v, *secret)) for k, v in up.headers]
            done: anyio.Event | None = None
            if target.kind == "search":
                done = self._record_search(t, target, request, body, up, secret)
            elif target.kind == "fetch":
                done = self._record_fetch(t, target, request, up, secret)
            elif chat:
                hosted = await self._hosted(target.api, up.status, up.body)
                done = self._record_chat(t, target, body, up, up.body, secret, hosted=hosted)
            if done is not None and self.durable:
                await done.wait()
            return self._reply(up)
        finally:
            if not piped:  # else its reader ends it, once the reply is recorded
                self.recorder.end(t, chat=chat)

    async def _stop_at_limit(self, t: Traj, why: str) -> Response:
        """The call that would exceed a limit: not forwarded; the trajectory finishes `limit` (after its calls in
        flight) and the agent gets a 400 of type `limit`, which clients do not retry."""
        t.closing = True
        t.limited = why  # a call meanwhile gets this 400 too (a 409 would be retried)
        await self.recorder.settle(t)
        await self.recorder.limit(t, why).wait()
        return error(400, why, kind="limit")

    # -- forwarding --------------------------------------------------------------------------------------------------

    def _request(self, request: Request, sel: routes.Selected, target: routes.Target, body: bytes,
                 key: str | None) -> httpx.Request:
        """The upstream request: the client's minus its credentials, plus the proxy's key for that endpoint; it asks
        for an unencoded body (what is relayed and recorded is the body itself)."""
        if self.live:
            url = f"{routes.live_base(target.endpoint)}/{target.path}"
        else:
            url = f"{self.root}/{sel.rest}"  # the in-process sandbox's root
        params: list[tuple[str, str | int | float | bool | None]] = [
                  (k, v) for k, v in request.query_params.multi_items()
                  if target.kind == "fetch" or not is_key_name(k)]
        headers = {**self._default_headers,
                   **{k: v for k, v in request.headers.items() if k.lower() not in routes.DROP_REQUEST}}
        headers["accept-encoding"] = "identity"
        if key is not None:
            auth = routes.auth_header(target.endpoint, key)
            if auth is None:
                params.append((routes.QUERY_KEY[target.endpoint], key))
            else:
                headers[auth[0]] = auth[1]
        if body and target.kind != "fetch":
            body = _without_key_fields(body)
        if params:
            url = f"{url}?{httpx.QueryParams(params)}"  # encoded as the client would merge them
        # built here rather than by the client: one URL parse, no merge of the client's defaults per call
        return httpx.Request(request.method, url, headers=headers, content=body or None,
                             extensions={"timeout": self._timeout})

    async def _send(self, req: httpx.Request) -> tuple[Upstream, _Rest | None]:
        """The reply with at most `max_record` bytes of its body read; and what is left to relay when it is longer.
        A body in an encoding the proxy cannot decode (it asked for none) is a bad response, never relayed."""
        t0 = time.perf_counter()
        resp: httpx.Response | None = None
        try:
            resp = await self.transport.handle_async_request(req)
            if (bad := routes.undecodable(resp.headers.get_list("content-encoding", split_commas=True))) is not None:
                await resp.aclose()
                return Upstream(status=None, fault="bad_response", message=bad,
                                latency_ms=(time.perf_counter() - t0) * 1000), None
            chunks = resp.aiter_bytes()  # decoded, as the headers relayed say (Content-Encoding dropped)
            parts: list[bytes] = []
            size = 0
            async for chunk in chunks:
                parts.append(chunk)
                size += len(chunk)
                if size > self.max_record:  # the rest stays upstream until the agent's reply pulls it
                    up = Upstream(status=resp.status_code, headers=_headers(resp), body=b"".join(parts),
                                  latency_ms=(time.perf_counter() - t0) * 1000)
                    return up, _Rest(resp, chunks)
        except httpx.HTTPError as exc:
            if resp is not None:
                await resp.aclose()
            fault = "timeout" if isinstance(exc, httpx.TimeoutException) else "http_error"
            what = "timed out" if fault == "timeout" else "unreachable"
            return Upstream(status=None, fault=fault, message=f"upstream {what} ({type(exc).__name__})",
                            latency_ms=(time.perf_counter() - t0) * 1000), None
        await resp.aclose()
        return Upstream(status=resp.status_code, headers=_headers(resp), body=b"".join(parts),
                        latency_ms=(time.perf_counter() - t0) * 1000), None

    def _reply(self, up: Upstream) -> Response:
        if up.status is None:
            return error(504 if up.fault == "timeout" else 502, up.message)
        return Response(up.body, up.status, headers=dict(up.headers))

    async def _stream(self, t: Traj, target: routes.Target, request: Request, req: httpx.Request, body: bytes,
                      secret: list[Secret]) -> tuple[Response, bool]:
        """A streamed chat reply passed through as it comes and recorded once whole; (the response, whether a reader
        task now owns the call)."""
        t0 = time.perf_counter()
        try:
            resp = await self.transport.handle_async_request(req)
        except httpx.HTTPError as exc:
            up = Upstream(status=None, fault="timeout" if isinstance(exc, httpx.TimeoutException) else "http_error",
                          message=f"upstream failed ({type(exc).__name__})")
            await self._record_chat(t, target, body, up, b"", secret).wait()
            return self._reply(up), False
        if (bad := routes.undecodable(resp.headers.get_list("content-encoding", split_commas=True))) is not None:
            await resp.aclose()
            up = Upstream(status=None, fault="bad_response", message=bad)
            await self._record_chat(t, target, body, up, b"", secret).wait()
            return self._reply(up), False
        return self._pipe(t, target, request, body, _Rest(resp, resp.aiter_bytes()), b"", resp.status_code,
                          _headers(resp), secret, t0, True), True

    def _pipe(self, t: Traj, target: routes.Target, request: Request, body: bytes, rest: _Rest, first: bytes,
              status: int, headers: list[tuple[str, str]], secret: list[Secret], t0: float, chat: bool) -> Response:
        """A reply relayed as it arrives by a reader task that reads it to its end whether or not the agent still
        reads (an agent that leaves mid-stream does not stop the upstream read: the call is recorded whole, with
        `client_disconnected`). When durable the last chunk waits for the commit."""
        assert self._readers is not None, "the proxy relays streamed replies only while serving"
        send, recv = anyio.create_memory_object_stream[bytes](_PIPE_CHUNKS)
        self._readers.start_soon(self._read, t, target, request, body, rest, first, _Out(send), secret, t0, chat)
        return _Piped(recv, status, {k: scrub_text(v, *secret) for k, v in headers})

    async def _read(self, t: Traj, target: routes.Target, request: Request, body: bytes, rest: _Rest, first: bytes,
                    out: _Out, secret: list[Secret], t0: float, chat: bool) -> None:
        """The reader of a piped reply: relays, keeps at most `max_record` bytes, records the call once."""
        parts: list[bytes] = []
        size = 0
        held: bytes | None = None
        broke: str | None = None  # why the upstream read ended early
        recorded = False

        async def chunks() -> AsyncIterator[bytes]:
            if first:
                yield first
            async for chunk in rest.chunks:
                yield chunk

        try:
            async with out.stream:
                try:
                    async for chunk in routes.scrub_stream(chunks(), secret):
                        if held is not None:
                            await out.put(held)
                        size += len(chunk)
                        if size <= self.max_record:
                            parts.append(chunk)
                        held = chunk
                except httpx.HTTPError as exc:
                    broke = f"upstream broke off after {size} bytes ({type(exc).__name__})"
                finally:
                    with anyio.CancelScope(shield=True):
                        await rest.response.aclose()
                recorded = True
                done = await self._record_read(t, target, request, body, rest.response, b"".join(parts), size, broke,
                                               out.left, secret, t0, chat)
                if done is not None and self.durable:
                    await done.wait()
                if held is not None:
                    await out.put(held)
        finally:
            if not recorded:  # the proxy is stopping with this reply unread: recorded as cut off, not lost
                up = Upstream(status=rest.response.status_code, latency_ms=(time.perf_counter() - t0) * 1000)
                self._record_large(t, target, request, body, up, size, False, out.left,
                                   cut="the proxy stopped before the reply ended")
            self.recorder.end(t, chat=chat)

    async def _record_read(self, t: Traj, target: routes.Target, request: Request, body: bytes, resp: httpx.Response,
                           whole: bytes, size: int, broke: str | None, left: bool, secret: list[Secret], t0: float,
                           chat: bool) -> anyio.Event | None:
        """Record a piped reply once read: by its size when longer than recorded (or broken off), else as a chat
        turn (only a streamed chat reply fits), its hosted search's redirects resolved as a plain reply's are."""
        up = Upstream(status=resp.status_code, body=whole, latency_ms=(time.perf_counter() - t0) * 1000)
        if size > self.max_record or broke is not None or not chat:
            return self._record_large(t, target, request, body, up, size, broke is None, left, cut=broke)
        completion = whole
        if resp.is_success:
            try:
                completion = assemble(target.api, whole)
            except _BAD_BODY:
                completion = b""
        hosted = await self._hosted(target.api, up.status, completion)
        return self._record_chat(t, target, body, up, completion, secret, raw=whole, client_disconnected=left,
                                 hosted=hosted)

    # -- recording ---------------------------------------------------------------------------------------------------

    def _record_large(self, t: Traj, target: routes.Target, request: Request, body: bytes, up: Upstream, n_bytes: int,
                      whole: bool, left: bool = False, cut: str | None = None) -> anyio.Event | None:
        """A call recorded with its size and status, without its body: its reply was longer than `max_record`, or
        its read ended before the reply did (`whole` false, `cut` says why); `left`: the agent left mid-reply."""
        said = [f"reply of {n_bytes} bytes is over the {self.max_record} bytes recorded"] if n_bytes > self.max_record else []
        error = "; ".join(said + ([cut] if cut else [])) or f"reply of {n_bytes} bytes"
        failed = up.status is None or not 200 <= up.status < 300
        if failed:
            error = f"HTTP {up.status}: {error}"
        bad = failed or not whole
        if target.kind == "search":
            query, params = _query_and_params(request, body)
            if query is None:
                return None
            return self.recorder.search(t, query=query, params=params, status="http_error" if bad else "bad_response",
                                        hits=[], latency_ms=up.latency_ms, raw=None, http_status=up.status, error=error,
                                        client_disconnected=left)
        if target.kind == "fetch":
            url = target.path + (f"?{request.url.query}" if request.url.query else "")
            return self.recorder.fetch(t, url=url, status="http_error" if bad else "too_large", content=None,
                                       n_bytes=n_bytes, n_tokens=0, latency_ms=up.latency_ms, http_status=up.status,
                                       error=error, client_disconnected=left)
        if target.kind == "chat":
            model = str(_model_request(target, body).get("model", "chat"))
            return self.recorder.chat_failed(t, model=model, status="http_error" if bad else "bad_response",
                                             http_status=up.status, error=error, client_disconnected=left)
        return None

    def _record_search(self, t: Traj, target: routes.Target, request: Request, body: bytes, up: Upstream,
                       secret: list[Secret]) -> anyio.Event | None:
        query, params = _query_and_params(request, body)
        if query is None:
            return None  # not a search call (another route of the provider): forwarded, not recorded
        status: SearchStatus
        hits: list[SearchHit] = []
        err: str | None = None
        if (failed := _failure(up, secret)) is not None:
            status, err = failed
        else:
            try:
                hits = self.parsers[target.endpoint].parse_hits(up.body)
                status = "ok"
            except _BAD_BODY as exc:
                status, err = "bad_response", f"unusable body: {exc}"
        raw = up.body or None  # scrubbed as it entered
        if status == "ok":  # providers bill successful requests
            t.spent += search_usd(self.limits, target.endpoint)
        return self.recorder.search(t, query=query, params=params, status=status, hits=hits, latency_ms=up.latency_ms,
                             raw=raw, http_status=up.status, error=err, secrets=secret)

    def _record_fetch(self, t: Traj, target: routes.Target, request: Request, up: Upstream,
                      secret: list[Secret]) -> anyio.Event:
        url = target.path + (f"?{request.url.query}" if request.url.query else "")
        status: FetchStatus
        content: str | None = None
        err: str | None = None
        if (failed := _failure(up, secret)) is not None:
            status, err = failed
        else:
            try:
                content = page_markdown(up.body, dict(up.headers).get("content-type", ""))
                status = "ok"
            except _BAD_BODY as exc:
                status, err = "bad_response", f"unusable body: {exc}"
        n_tokens = estimate_tokens(content) if content is not None else 0
        t.spent += fetch_usd(self.limits, target.endpoint, n_tokens)
        return self.recorder.fetch(t, url=url, status=status, content=content, n_bytes=len(up.body),
                            n_tokens=n_tokens, latency_ms=up.latency_ms,
                            http_status=up.status, error=err, secrets=secret)

    async def _hosted(self, api: str, status: int | None, reply: bytes) -> HostedTurn | None:
        """The hosted search a successful reply carries (docs/how-to/hosted.md; a streamed one assembled), Gemini's
        redirects resolved."""
        if status is None or not 200 <= status < 300:
            return None
        turn = read_hosted(api, reply)
        return None if turn is None or turn.empty else await resolved(turn, self.client)

    def _record_chat(self, t: Traj, target: routes.Target, body: bytes, up: Upstream, completion: bytes,
                     secret: list[Secret], raw: bytes | None = None, client_disconnected: bool = False,
                     hosted: HostedTurn | None = None) -> anyio.Event:
        request = _model_request(target, body)
        model = str(request.get("model", "chat"))
        if up.status is None or not 200 <= up.status < 300:
            text = up.body.decode("utf-8", "replace") if up.body else up.message
            status = up.fault or "http_error"
            return self.recorder.chat_failed(t, model=model, status=status, http_status=up.status, error=shorten(text),
                                             secrets=secret, client_disconnected=client_disconnected)
        try:
            text_, calls, usage, finish = parse_reply(target.api, completion)
        except _BAD_BODY as exc:
            return self.recorder.chat_failed(t, model=model, status="bad_response", http_status=up.status,
                                             error=f"unusable body: {exc}", secrets=secret,
                                             client_disconnected=client_disconnected)
        head, messages, tools = request_evidence(target.api, request)
        reply_id = None
        if target.api == "responses":
            reply = _json_or_none(completion) or {}
            reply_id = reply["id"] if isinstance(reply.get("id"), str) else None
        previous = request.get("previous_response_id")
        answered = model_of(target.api, completion) or model  # the reply's model name, else the request's
        t.spent += chat_usd(self.limits, answered, usage)
        return self.recorder.chat(t, text=text_, tool_calls=calls, usage=usage, latency_ms=up.latency_ms,
                           finish_reason=finish, raw=scrub_bytes(raw if raw is not None else completion, *secret),
                           messages=messages, head=head, tools=tools, secrets=secret,
                           client_disconnected=client_disconnected,
                           reply_id=reply_id, previous_id=previous if isinstance(previous, str) else None,
                           model=answered, api=target.api, hosted=hosted)


def _content_text(content: Any) -> str:
    """A chat message's text (a string, or its text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _model_request(target: routes.Target, body: bytes) -> dict[str, Any]:
    """A model call's JSON body, with the model its path names (Gemini's) as `model`."""
    doc = _json_or_none(body) or {}
    if target.model is not None and "model" not in doc:
        doc = {**doc, "model": target.model}
    return doc


def _headers(resp: httpx.Response) -> list[tuple[str, str]]:
    return [(k, v) for k, v in resp.headers.items() if k.lower() not in routes.DROP_RESPONSE]


def _json_or_none(body: bytes) -> dict[str, Any] | None:
    try:
        doc = msgspec.json.decode(body) if body else None
    except (msgspec.DecodeError, RecursionError):  # not JSON, or nested deeper than any parser follows
        return None
    return doc if isinstance(doc, dict) else None


def _wants_stream(body: bytes) -> bool:
    doc = _json_or_none(body)
    return bool(doc and doc.get("stream") is True)


def _without_key_fields(body: bytes) -> bytes:
    """A JSON body without the top-level key fields some clients send in it (Tavily's `api_key`, `token`, `auth`)."""
    doc = _json_or_none(body)
    if doc is None or not any(is_key_name(k) for k in doc):
        return body
    return msgspec.json.encode({k: v for k, v in doc.items() if not is_key_name(k)})


def _query_and_params(request: Request, body: bytes) -> tuple[str | None, dict[str, Any]]:
    """The search query and the other request parameters (never a key field) from the JSON body or the query string."""
    doc = _json_or_none(body)
    source: dict[str, Any] = doc if doc is not None else dict(request.query_params)
    query = next((source[f] for f in _QUERY_FIELDS if isinstance(source.get(f), str)), None)
    params = routes.without_keys({k: v for k, v in source.items() if k not in _QUERY_FIELDS})
    return query, params


def _failure(up: Upstream, secret: list[Secret]) -> tuple[Literal["timeout", "http_error", "bad_response"],
                                                           str | None] | None:
    """How a forwarded call failed (no usable reply, or a non-2xx one), as a status and one line; None when it
    answered."""
    if up.status is None:
        fault: Literal["timeout", "http_error", "bad_response"] = (
            "timeout" if up.fault == "timeout" else "bad_response" if up.fault == "bad_response" else "http_error")
        return fault, up.message
    if not 200 <= up.status < 300:
        return "http_error", f"HTTP {up.status}: {shorten(scrub_text(up.body.decode('utf-8', 'replace'), *secret))}"
    return None
