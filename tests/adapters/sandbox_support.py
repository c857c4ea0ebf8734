"""Driving the production adapters against the sandbox app: one call per target, reduced to comparable facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters import (
    SANDBOX_KEY,
    ChatError,
    RetryInfo,
    build_chat,
    build_fetcher,
    build_search,
    sandbox_endpoint,
)

QUESTION = "What is the founding year of Elmwyn Athletic?"
PAGE = "https://almanac-central.example/entries/elmwyn-athletic"
FAULT_HOST = "https://faults.sandbox.test"
TARGETS = ("brave", "tavily", "firecrawl", "jina", "chat")  # each is also its sandbox route's counter name


@dataclass
class Outcome:
    status: str
    http_status: int | None
    retries: list[RetryInfo] = field(default_factory=list)
    error: str | None = None
    latency_ms: float = 0.0
    n_results: int = 0
    n_bytes: int = 0
    content: str | None = None
    auth: bool = False


def limits(**kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"rps": 0.0, "timeout_s": 2.0, "max_retries": 2, "max_wait_s": 0.02}
    out.update(kw)
    return out


async def call(target: str, root: str, transport: httpx.AsyncBaseTransport | None, marker: str = "",
               trace_id: str | None = None, cache_dir: Path | None = None, **lim: Any) -> Outcome:
    """One call of `target` with an optional fault marker in its query / URL / last message."""
    name = "openai" if target == "chat" else target
    ep = sandbox_endpoint(name, root, **limits(**lim))
    if target in ("brave", "tavily", "firecrawl"):
        async with build_search(target, ep, transport=transport, key_fallback=SANDBOX_KEY) as s:
            r = await s.search(f"{QUESTION} {marker}".strip(), trace_id=trace_id)
        return Outcome(r.status, r.http_status, r.retries, r.error, r.latency_ms, n_results=len(r.hits))
    if target == "jina":
        url = f"{FAULT_HOST}/{marker}/page" if marker else PAGE
        async with build_fetcher("jina", ep, transport=transport, key_fallback=SANDBOX_KEY, cache_dir=cache_dir) as f:
            fr = await f.fetch(url, trace_id=trace_id)
        return Outcome(fr.status, fr.http_status, fr.retries, fr.error, fr.latency_ms, n_bytes=fr.n_bytes,
                       content=fr.content)
    async with build_chat("sandbox-agent", ep, transport=transport, key_fallback=SANDBOX_KEY) as c:
        try:
            cr = await c.complete([{"role": "system", "content": "Answer with evidence."},
                                   {"role": "user", "content": f"{QUESTION} {marker}".strip()}],
                                  tools=[{"type": "function", "function": {
                                      "name": "search_web", "parameters": {"type": "object", "properties": {
                                          "query": {"type": "string"}}, "required": ["query"]}}}],
                                  trace_id=trace_id)
        except ChatError as exc:
            return Outcome(exc.status, exc.http_status, exc.retries, exc.message, auth=exc.auth)
    return Outcome("ok", 200, cr.retries, None, cr.latency_ms, n_results=len(cr.tool_calls), content=cr.text)
