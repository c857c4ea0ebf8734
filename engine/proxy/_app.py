"""The proxy's ASGI app: `/t/<provider>/<qid>/<route>` forwarded live or to the sandbox, and recorded (SPEC §15)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal, NamedTuple

import anyio
import httpx
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

import searchtrace.engine.proxy._routes as routes
from searchtrace.adapters import (
    SEARCH_PROVIDERS,
    Endpoint,
    LocalGuard,
    MiB,
    SearchAdapter,
    SearchHit,
    Secret,
    build_search,
    chat_messages,
    estimate_tokens,
    page_markdown,
    parse_completion,
    parse_response,
    scrub_bytes,
    scrub_text,
    shorten,
    tools_to_chat,
)
from searchtrace.engine._config import MAX_EPOCHS
from searchtrace.engine.proxy._recorder import ProxyRecorder, Traj
from searchtrace.engine.proxy._sse import assemble, assemble_responses
from searchtrace.store import FetchStatus, SearchStatus

EPOCH_HEADER = "x-searchtrace-epoch"
_QUERY_FIELDS = ("query", "q")
MAX_BODY = 16 * MiB  # default of `--max-body`: the largest request an agent may send
# The part of an upstream reply the proxy holds to parse and record it. A longer reply is relayed to the agent as
# it arrives (never held whole, keys scrubbed as it goes) and recorded without its body: a fetch as `too_large`,
# a search or chat turn as `bad_response`, with its size.
MAX_RECORD = 16 * MiB
_BAD_BODY = (ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError, msgspec.DecodeError,
             msgspec.ValidationError)


def error(status: int, message: str) -> Response:
    """A one-line JSON error of the proxy itself (nothing recorded)."""
    return Response(msgspec.json.encode({"error": {"message": message, "type": "searchtrace_proxy"}}), status,
                    media_type="application/json")


class Upstream(msgspec.Struct, kw_only=True):
    """One forwarded request's outcome: the reply (status, headers, body) or a transport fault."""

    status: int | None
    headers: list[tuple[str, str]] = []
    body: bytes = b""
    fault: str | None = None  # "timeout" or "http_error" when no reply came
    message: str = ""
    latency_ms: float = 0.0


class _Rest(NamedTuple):
    """The part of an upstream reply not read yet: its response (to close) and its body's iterator."""

    response: httpx.Response
    chunks: AsyncIterator[bytes]


class Proxy:
    """Forwards each request to its endpoint with the proxy's own key and records it in its trajectory."""

    def __init__(self, recorder: ProxyRecorder, *, live: bool, transport: httpx.AsyncBaseTransport | None = None,
                 root: str | None = None, timeout_s: float = 120.0, durable: bool = False,
                 max_body: int = MAX_BODY, max_record: int = MAX_RECORD) -> None:
        """`live`: forward to the real endpoints; else to `root` (the in-process sandbox's, through `transport`);
        `max_body`: the cap on a request's body, `max_record` on the reply bytes held to record a call."""
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
        self.client = httpx.AsyncClient(transport=transport, timeout=timeout_s, follow_redirects=False)
        # the adapters' own parsers normalise what the client received (SPEC §2); they never send anything
        self.parsers: dict[str, SearchAdapter] = {
            name: build_search(name, Endpoint(base_url="http://unused.invalid"), key_fallback="unused")
            for name in SEARCH_PROVIDERS
        }

    async def aclose(self) -> None:
        await self.client.aclose()
        for p in self.parsers.values():
            await p.aclose()

    def app(self) -> ASGIApp:
        """The routes behind the local-server guard (loopback Host, no cross-site request, JSON bodies, caps)."""
        return LocalGuard(Starlette(routes=[
            Route("/", self.index),
            Route("/t/{provider}/{qid}/final", self.final, methods=["POST"]),
            Route("/t/{provider}/{qid}/{rest:path}", self.forward,
                  methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]),
        ]), max_body=self.max_body)

    async def index(self, request: Request) -> Response:
        return Response(msgspec.json.encode({
            "searchtrace_proxy": self.recorder.run_id, "upstream": "live" if self.live else "sandbox",
            "providers": sorted(self.recorder.providers), "questions": len(self.recorder.questions),
            "trajectories": len(self.recorder.trajs),
        }), media_type="application/json")

    def _trajectory(self, request: Request) -> tuple[Traj | None, Response | None]:
        epoch = routes.epoch_of(request.headers.get(EPOCH_HEADER, "1"), MAX_EPOCHS)
        if isinstance(epoch, str):
            return None, error(400, epoch)
        t, why = self.recorder.lookup(request.path_params["provider"], request.path_params["qid"], epoch)
        if t is None:
            return None, error(404, why or "unknown trajectory")
        if t.finished:
            return None, error(409, f"trajectory {t.trajectory_id!r} is finished; start another epoch")
        return t, None

    async def final(self, request: Request) -> Response:
        """`POST …/final {"answer": "..."}`: answer.final and trajectory.finished, acknowledged once committed."""
        body = _json_or_none(await request.body())
        if not isinstance(body, dict) or not isinstance(body.get("answer"), str):
            return error(400, 'the body of …/final must be a JSON object {"answer": "..."}')
        t, refused = self._trajectory(request)
        if t is None:
            assert refused is not None
            return refused
        secrets = routes.request_secrets(request.headers, request.query_params.multi_items(), body, own=None)
        await self.recorder.final(t, body["answer"], secrets).wait()
        return Response(msgspec.json.encode({"trajectory_id": t.trajectory_id, "finished": True}),
                        media_type="application/json")

    async def forward(self, request: Request) -> Response:
        target = routes.classify(request.path_params["rest"])
        if target is None:
            return error(404, f"no endpoint at /{request.path_params['rest']} (known: the sandbox's routes, SPEC §11)")
        t, refused = self._trajectory(request)
        if t is None:
            assert refused is not None
            return refused
        body = await request.body()
        key = routes.upstream_key(target.endpoint, self.live)
        # every key of this call (ours, the configured ones, the agent's): scrubbed from the reply as it enters,
        # so neither the agent nor an event sees one; a fetch's query string is the page's URL, not a credential
        query = request.query_params.multi_items() if target.kind != "fetch" else []
        secret = routes.request_secrets(request.headers, query, _json_or_none(body), own=key)
        req = self._request(request, target, body, key)
        if target.kind == "chat" and _wants_stream(body):
            return await self._stream(t, target, request, req, body, secret)
        up, rest = await self._send(req)
        if rest is not None:
            return self._relay(t, target, request, body, up, rest, secret)
        up.body = scrub_bytes(up.body, *secret)  # relayed to the agent and kept as the raw blob
        up.headers = [(k, scrub_text(v, *secret)) for k, v in up.headers]
        done: anyio.Event | None = None
        if target.kind == "search":
            done = self._record_search(t, target, request, body, up, secret)
        elif target.kind == "fetch":
            done = self._record_fetch(t, target, request, up, secret)
        elif target.kind == "chat":
            done = self._record_chat(t, target, body, up, up.body, secret)
        if done is not None and self.durable:
            await done.wait()
        return self._reply(up)

    # -- forwarding --------------------------------------------------------------------------------------------------

    def _request(self, request: Request, target: routes.Target, body: bytes, key: str | None) -> httpx.Request:
        """The upstream request: the client's minus its credentials, plus the proxy's key for that endpoint."""
        if self.live:
            url = f"{routes.live_base(target.endpoint)}/{target.path}"
        else:
            url = f"{self.root}/{request.path_params['rest']}"  # the in-process sandbox's root
        params: list[tuple[str, str | int | float | bool | None]] = [
                  (k, v) for k, v in request.query_params.multi_items()
                  if target.kind == "fetch" or not routes.is_key_name(k)]
        headers = {k: v for k, v in request.headers.items() if k.lower() not in routes.DROP_REQUEST}
        if key is not None:
            auth = routes.auth_header(target.endpoint, key)
            if auth is None:
                params.append((routes.QUERY_KEY[target.endpoint], key))
            else:
                headers[auth[0]] = auth[1]
        if body and target.kind != "fetch":
            body = _without_key_fields(body)
        return self.client.build_request(request.method, url, params=params or None, headers=headers,
                                         content=body or None)

    async def _send(self, req: httpx.Request) -> tuple[Upstream, _Rest | None]:
        """The reply with at most `max_record` bytes of its body read; and what is left to relay when it is longer."""
        t0 = time.perf_counter()
        resp: httpx.Response | None = None
        try:
            resp = await self.client.send(req, stream=True)
            chunks = resp.aiter_bytes()
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

    def _relay(self, t: Traj, target: routes.Target, request: Request, body: bytes, up: Upstream,
               rest: _Rest, secret: list[Secret]) -> Response:
        """A reply longer than `max_record`: what was read, then the rest as it comes; recorded without its body
        once it ended (also when the agent left early). When durable the last chunk waits for the commit."""

        async def chunks() -> AsyncIterator[bytes]:
            n_bytes = len(up.body)
            held = up.body
            whole = False
            try:
                async for chunk in rest.chunks:
                    yield held
                    held = chunk
                    n_bytes += len(chunk)
                whole = True
            finally:
                await rest.response.aclose()
                done = self._record_large(t, target, request, body, up, n_bytes, whole)
            if done is not None and self.durable:
                await done.wait()
            yield held

        headers = {k: scrub_text(v, *secret) for k, v in up.headers}
        return StreamingResponse(routes.scrub_stream(chunks(), secret), up.status or 502, headers=headers)

    def _reply(self, up: Upstream) -> Response:
        if up.status is None:
            return error(504 if up.fault == "timeout" else 502, up.message)
        return Response(up.body, up.status, headers=dict(up.headers))

    async def _stream(self, t: Traj, target: routes.Target, request: Request, req: httpx.Request, body: bytes,
                      secret: list[Secret]) -> Response:
        """Pass a streamed reply through chunk by chunk; record it once whole (when the stream ends)."""
        t0 = time.perf_counter()
        try:
            resp = await self.client.send(req, stream=True)
        except httpx.HTTPError as exc:
            up = Upstream(status=None, fault="timeout" if isinstance(exc, httpx.TimeoutException) else "http_error",
                          message=f"upstream failed ({type(exc).__name__})")
            await self._record_chat(t, target, body, up, b"", secret).wait()
            return self._reply(up)

        async def chunks() -> AsyncIterator[bytes]:
            """Each chunk as it comes (decoded, as the headers relayed say); when durable the last is held until
            the whole reply is committed. At most `max_record` bytes are kept to record it."""
            parts: list[bytes] = []
            size = 0
            held: bytes | None = None
            try:
                async for chunk in routes.scrub_stream(resp.aiter_bytes(), secret):
                    if held is not None:
                        yield held
                    size += len(chunk)
                    if size <= self.max_record:
                        parts.append(chunk)
                    held = chunk
            finally:
                await resp.aclose()
            whole = b"".join(parts)
            up = Upstream(status=resp.status_code, body=whole, latency_ms=(time.perf_counter() - t0) * 1000)
            done: anyio.Event | None
            if size > self.max_record:
                done = self._record_large(t, target, request, body, up, size, True)
            else:
                completion = whole
                if resp.is_success:
                    try:
                        completion = assemble(whole) if target.api == "chat" else assemble_responses(whole)
                    except _BAD_BODY:
                        completion = b""
                done = self._record_chat(t, target, body, up, completion, secret, raw=whole)
            if done is not None and self.durable:
                await done.wait()
            if held is not None:
                yield held

        return StreamingResponse(chunks(), resp.status_code,
                                 headers={k: scrub_text(v, *secret) for k, v in _headers(resp)})

    # -- recording ---------------------------------------------------------------------------------------------------

    def _record_large(self, t: Traj, target: routes.Target, request: Request, body: bytes, up: Upstream, n_bytes: int,
                      whole: bool) -> anyio.Event | None:
        """A call whose reply was longer than `max_record`: recorded with its size and status, without its body."""
        cut = "" if whole else f"; the agent left after {n_bytes} bytes"
        error = f"reply of {n_bytes} bytes is over the {self.max_record} bytes recorded{cut}"
        failed = up.status is None or not 200 <= up.status < 300
        if failed:
            error = f"HTTP {up.status}: {error}"
        if target.kind == "search":
            query, params = _query_and_params(request, body)
            if query is None:
                return None
            return self.recorder.search(t, query=query, params=params, status="http_error" if failed else "bad_response",
                                        hits=[], latency_ms=up.latency_ms, raw=None, http_status=up.status, error=error)
        if target.kind == "fetch":
            url = target.path + (f"?{request.url.query}" if request.url.query else "")
            return self.recorder.fetch(t, url=url, status="http_error" if failed else "too_large", content=None,
                                       n_bytes=n_bytes, n_tokens=0, latency_ms=up.latency_ms, http_status=up.status,
                                       error=error)
        if target.kind == "chat":
            model = str((_json_or_none(body) or {}).get("model", "chat"))
            return self.recorder.chat_failed(t, model=model, status="http_error" if failed else "bad_response",
                                             http_status=up.status, error=error)
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
        return self.recorder.fetch(t, url=url, status=status, content=content, n_bytes=len(up.body),
                            n_tokens=estimate_tokens(content) if content is not None else 0, latency_ms=up.latency_ms,
                            http_status=up.status, error=err, secrets=secret)

    def _record_chat(self, t: Traj, target: routes.Target, body: bytes, up: Upstream, completion: bytes,
                     secret: list[Secret], raw: bytes | None = None) -> anyio.Event:
        request = _json_or_none(body) or {}
        model = str(request.get("model", "chat"))
        if up.status is None or not 200 <= up.status < 300:
            text = up.body.decode("utf-8", "replace") if up.body else up.message
            status = up.fault or "http_error"
            return self.recorder.chat_failed(t, model=model, status=status, http_status=up.status, error=shorten(text),
                                             secrets=secret)
        try:
            text_, calls, usage, finish = (parse_completion if target.api == "chat" else parse_response)(completion)
        except _BAD_BODY as exc:
            return self.recorder.chat_failed(t, model=model, status="bad_response", http_status=up.status,
                                             error=f"unusable body: {exc}", secrets=secret)
        messages, tools = _request_messages(target.api, request)
        reply_id = None
        if target.api == "responses":
            reply = _json_or_none(completion) or {}
            reply_id = reply["id"] if isinstance(reply.get("id"), str) else None
        previous = request.get("previous_response_id")
        return self.recorder.chat(t, text=text_, tool_calls=calls, usage=usage, latency_ms=up.latency_ms,
                           finish_reason=finish, raw=scrub_bytes(raw if raw is not None else completion, *secret),
                           messages=messages, tools=tools, secrets=secret, reply_id=reply_id,
                           previous_id=previous if isinstance(previous, str) else None)


def _request_messages(api: str, request: dict[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """What a model request sent, as chat messages and chat tools (a Responses request is converted, SPEC §17,
    so both APIs record the same request the same way); None where the body does not say."""
    raw_tools = request.get("tools")
    if api == "chat":
        messages = request["messages"] if isinstance(request.get("messages"), list) else None
        return messages, raw_tools if isinstance(raw_tools, list) else None
    try:
        messages = chat_messages(request.get("instructions"), request.get("input"))
    except ValueError:
        messages = None
    if not isinstance(raw_tools, list):
        return messages, None
    try:
        return messages, tools_to_chat(raw_tools)
    except ValueError:  # a hosted tool (web_search, file_search …): kept as sent
        return messages, raw_tools


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
    if doc is None or not any(routes.is_key_name(k) for k in doc):
        return body
    return msgspec.json.encode({k: v for k, v in doc.items() if not routes.is_key_name(k)})


def _query_and_params(request: Request, body: bytes) -> tuple[str | None, dict[str, Any]]:
    """The search query and the other request parameters (never a key field) from the JSON body or the query string."""
    doc = _json_or_none(body)
    source: dict[str, Any] = doc if doc is not None else dict(request.query_params)
    query = next((source[f] for f in _QUERY_FIELDS if isinstance(source.get(f), str)), None)
    params = routes.without_keys({k: v for k, v in source.items() if k not in _QUERY_FIELDS})
    return query, params


def _failure(up: Upstream, secret: list[Secret]) -> tuple[Literal["timeout", "http_error"], str | None] | None:
    """How a forwarded call failed (no reply, or a non-2xx one), as a status and one line; None when it answered."""
    if up.status is None:
        return ("timeout" if up.fault == "timeout" else "http_error"), up.message
    if not 200 <= up.status < 300:
        return "http_error", f"HTTP {up.status}: {shorten(scrub_text(up.body.decode('utf-8', 'replace'), *secret))}"
    return None
