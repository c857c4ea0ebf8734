"""In-memory stand-ins for the adapters, for unit tests of the agent loop's exact behaviour."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from searchtrace.adapters import ChatResponse, FetchResponse, SearchHit, SearchResponse
from searchtrace.store import ToolCall, Usage


class FakeChat:
    """Replies with `policy(messages, turn)`; records every message list it was sent (deep-copied)."""

    def __init__(self, policy: Callable[[list[dict[str, Any]], int], ChatResponse]) -> None:
        self.policy = policy
        self.received: list[list[dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], *, tools: Any = None, response_format: Any = None,
                       trace_id: str | None = None) -> ChatResponse:
        self.received.append([dict(m) for m in messages])
        await anyio.sleep(0)
        return self.policy(messages, len(self.received))


class FakeSearch:
    name = "fake"
    params: dict[str, Any] = {"count": 3}

    def __init__(self, delays: dict[str, float] | None = None) -> None:
        self.delays = delays or {}
        self.queries: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def search(self, query: str, *, trace_id: str | None = None) -> SearchResponse:
        self.queries.append(query)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await anyio.sleep(self.delays.get(query, 0.0))
        finally:
            self.in_flight -= 1
        hits = [
            SearchHit(rank=i, title=f"{query} {i}", url=f"https://ex{i}.org/{query.replace(' ', '-')}?utm_source=x",
                      domain="", snippet=f"snippet {i} of {query}", metadata={"age": "1d"})
            for i in (1, 2, 3)
        ]
        return SearchResponse(status="ok", hits=hits, raw=f"raw:{query}".encode(), latency_ms=1.0)


class FakeFetch:
    def __init__(self) -> None:
        self.urls: list[str] = []

    async def fetch(self, url: str, *, trace_id: str | None = None) -> FetchResponse:
        self.urls.append(url)
        return FetchResponse(status="ok", content=f"# page\n{url}", n_bytes=10, n_tokens=3, latency_ms=1.0)


def reply(text: str | None = None, calls: list[tuple[str, str, str]] | None = None) -> ChatResponse:
    return ChatResponse(
        text=text,
        tool_calls=[ToolCall(call_id=c, name=n, arguments=a) for c, n, a in (calls or [])],
        usage=Usage(input_tokens=100, output_tokens=10),
        latency_ms=2.0,
        finish_reason="tool_calls" if calls else "stop",
        raw=b'{"fake": true}',
    )
