"""Replay transport: answers the agent's HTTP requests from recorded events, and never makes a live call.

It knows the wire routes only (chat completions and Responses, the search routes, Jina's `GET /<url>`), not the agent: each
request is matched, by its `X-Searchtrace-Trace` header (the trajectory id), to that trajectory's recorded
answers — the n-th chat request gets the n-th `model.responded`, a search gets the next recorded answer to the
same query, a fetch the next recorded answer for the same URL. A request with no recorded answer raises
`ReplayMiss` (not an httpx error, so no adapter retries it or turns it into a status) and is kept in `misses`.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx
import msgspec

from searchtrace.adapters import TRACE_HEADER, normalize_url
from searchtrace.engine import Fetch, Search, assistant_message, fold
from searchtrace.store import FetchCompleted, ModelResponded, Payload, SearchCompleted, TrajectoryFinished

_SEARCH_SUFFIXES = ("/res/v1/web/search", "/search")
_JSON = {"content-type": "application/json"}


class ReplayMiss(Exception):
    """A request that the recorded events cannot answer (replay never falls back to a live call)."""


@dataclass
class Tape:
    """The recorded answers of one trajectory, consumed in order."""

    trajectory_id: str
    chat: deque[ModelResponded] = field(default_factory=deque)
    searches: dict[str, deque[SearchCompleted]] = field(default_factory=lambda: defaultdict(deque))
    fetches: dict[str, deque[FetchCompleted]] = field(default_factory=lambda: defaultdict(deque))
    finished: TrajectoryFinished | None = None
    served: int = 0

    @classmethod
    def from_payloads(cls, trajectory_id: str, payloads: Iterable[Payload]) -> Tape:
        f = fold(payloads)
        tape = cls(f.started.trajectory_id if f.started is not None else trajectory_id, finished=f.finished)
        tape.chat.extend(f.turns)
        for step in f.steps:  # the steps, not `f.searches` by call_id: a model may reuse a tool-call id
            if isinstance(step, Search) and step.completed is not None:
                tape.searches[step.called.query].append(step.completed)
            elif isinstance(step, Fetch) and step.completed is not None:
                tape.fetches[normalize_url(step.called.url)].append(step.completed)
        return tape


def responses_body(m: ModelResponded, model: str) -> bytes:
    """A Responses API `response` body carrying a recorded reply (used when its raw body was not stored)."""
    output: list[dict[str, Any]] = []
    if m.text is not None:
        output.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m.text}]})
    output += [{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
               for c in m.tool_calls]
    u = m.usage
    status = "incomplete" if m.finish_reason in ("length", "content_filter") else "completed"
    reason = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(m.finish_reason or "")
    return msgspec.json.encode({
        "id": f"replay-{m.iteration}", "object": "response", "model": model, "status": status, "output": output,
        "incomplete_details": {"reason": reason} if reason else None,
        "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                  "input_tokens_details": {"cached_tokens": u.cached_tokens},
                  "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens}},
    })


def _response(status: int, body: bytes, request: httpx.Request, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or _JSON, content=body, request=request)


def chat_body(m: ModelResponded, model: str) -> bytes:
    """An OpenAI chat.completion body carrying a recorded reply (used when its raw body was not stored)."""
    message = assistant_message(m.text, m.tool_calls)
    u = m.usage
    return msgspec.json.encode(
        {
            "id": f"replay-{m.iteration}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": m.finish_reason or "stop"}],
            "usage": {
                "prompt_tokens": u.input_tokens,
                "completion_tokens": u.output_tokens,
                "total_tokens": u.input_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            },
        }
    )


def jina_body(url: str, content: str, n_tokens: int) -> bytes:
    """A Jina Reader JSON answer carrying recorded page markdown."""
    return msgspec.json.encode(
        {"code": 200, "status": 20000, "data": {"title": "", "url": url, "content": content, "usage": {"tokens": n_tokens}}}
    )


class ReplayTransport(httpx.AsyncBaseTransport):
    """An httpx transport over recorded tapes; `misses` lists every request it could not answer."""

    def __init__(self, tapes: dict[str, Tape], get_blob: Callable[[str], bytes]) -> None:
        self.tapes = tapes
        self.get_blob = get_blob
        self.misses: list[str] = []
        self.requests = 0

    def _miss(self, request: httpx.Request, why: str) -> ReplayMiss:
        trace = request.headers.get(TRACE_HEADER, "-")
        msg = f"replay miss: {request.method} {request.url.path} (trace {trace}): {why}"
        self.misses.append(msg)
        return ReplayMiss(msg)

    def _tape(self, request: httpx.Request) -> Tape:
        trace = request.headers.get(TRACE_HEADER)
        if trace is None:
            if len(self.tapes) == 1:
                return next(iter(self.tapes.values()))
            raise self._miss(request, "no trace header, cannot tell which trajectory asks")
        tape = self.tapes.get(trace)
        if tape is None:
            raise self._miss(request, "no recorded trajectory with this id")
        return tape

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        body = await request.aread()
        tape = self._tape(request)
        path = request.url.path
        if request.method == "POST" and path.endswith(("/chat/completions", "/responses")):
            return self._chat(request, tape, body)
        if path.endswith(_SEARCH_SUFFIXES):
            return self._search(request, tape, body)
        target = _fetch_target(request)
        if request.method == "GET" and target is not None:
            return self._fetch(request, tape, target)
        raise self._miss(request, "not a chat, search or fetch route")

    def _chat(self, request: httpx.Request, tape: Tape, body: bytes) -> httpx.Response:
        if not tape.chat:
            if tape.finished is not None and tape.finished.reason == "error":
                err = {"error": {"message": tape.finished.error or "recorded chat failure", "type": "replay"}}
                return _response(400, msgspec.json.encode(err), request)
            raise self._miss(request, f"the recording has no model reply #{tape.served + 1}")
        m = tape.chat.popleft()
        tape.served += 1
        if m.raw_digest:
            return _response(200, self.get_blob(m.raw_digest), request)
        model = str(msgspec.json.decode(body).get("model", "")) if body else ""
        make = responses_body if request.url.path.endswith("/responses") else chat_body
        return _response(200, make(m, model), request)

    def _search(self, request: httpx.Request, tape: Tape, body: bytes) -> httpx.Response:
        query = request.url.params.get("q")
        if query is None and body:
            try:
                query = msgspec.json.decode(body).get("query")
            except (msgspec.DecodeError, AttributeError):
                query = None
        if not isinstance(query, str):
            raise self._miss(request, "search request without a query")
        answers = tape.searches.get(query)
        if not answers:
            raise self._miss(request, f"no recorded search for query {query!r}")
        done = answers.popleft()
        raw = self.get_blob(done.raw_digest) if done.raw_digest else None
        if done.status == "timeout":
            raise httpx.ReadTimeout("recorded timeout", request=request)
        if done.status == "http_error":
            if done.http_status is None:
                raise httpx.ConnectError(done.error or "recorded transport error", request=request)
            return _response(done.http_status, raw or b"{}", request)
        if raw is None:
            raise self._miss(request, f"search {done.call_id} was recorded without its raw response")
        return _response(done.http_status or 200, raw, request)

    def _fetch(self, request: httpx.Request, tape: Tape, target: str) -> httpx.Response:
        answers = tape.fetches.get(normalize_url(target))
        if not answers:
            raise self._miss(request, f"no recorded fetch of {target}")
        done = answers.popleft()
        if done.status == "timeout":
            raise httpx.ReadTimeout("recorded timeout", request=request)
        if done.status == "http_error":
            if done.http_status is None:
                raise httpx.ConnectError(done.error or "recorded transport error", request=request)
            return _response(done.http_status, b'{"code": %d, "message": "recorded"}' % done.http_status, request)
        if done.status == "too_large":
            return _response(200, b"x" * (max(done.n_bytes, 2_000_000) + 1), request, {"content-type": "text/plain"})
        if done.status == "bad_response":
            return _response(200, b'{"code": 200, "data": ', request)
        if done.content_digest is None:
            raise self._miss(request, f"fetch {done.call_id} was recorded without its content")
        content = self.get_blob(done.content_digest).decode("utf-8")
        return _response(200, jina_body(target, content, done.n_tokens), request)


def _fetch_target(request: httpx.Request) -> str | None:
    """The page URL of a Jina Reader request (`GET {base}/{url}`), or None."""
    raw = request.url.raw_path.decode("ascii", "replace")
    for scheme in ("/http://", "/https://", "/http%3A", "/https%3A"):
        i = raw.find(scheme)
        if i >= 0:
            return unquote(raw[i + 1 :]) if "%3A" in scheme else raw[i + 1 :]
    return None


__all__ = ["ReplayMiss", "ReplayTransport", "Tape", "chat_body", "jina_body"]
