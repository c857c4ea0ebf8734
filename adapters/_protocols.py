"""What the engine, the judge and replay need of a search provider, a fetch backend and a chat model."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from searchtrace.adapters._types import ChatResponse, FetchResponse, SearchResponse


@runtime_checkable
class SearchProvider(Protocol):
    name: str
    params: dict[str, Any]

    async def search(self, query: str, *, trace_id: str | None = None) -> SearchResponse: ...


@runtime_checkable
class Fetcher(Protocol):
    async def fetch(self, url: str, *, trace_id: str | None = None) -> FetchResponse: ...


@runtime_checkable
class ChatModel(Protocol):
    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        trace_id: str | None = None,
    ) -> ChatResponse: ...


@runtime_checkable
class ClosableChat(ChatModel, Protocol):
    """A chat model whose caller owns its connections (the production adapter: `aclose()` when done)."""

    async def aclose(self) -> None: ...
