"""A minimal harness for tests: plays the engine's part (tool execution, document blocks) against the sandbox."""

from __future__ import annotations

import json
from typing import Any

import httpx

from searchtrace.adapters import domain_of
from searchtrace.adapters.sandbox import ROOT, base_urls, create_app, in_process
from searchtrace.adapters.sandbox._reading import strip_tags
from searchtrace.engine import TOOL_SCHEMAS, document_block

HEADERS = {
    "brave": {"X-Subscription-Token": "test-key"},
    "tavily": {"Authorization": "Bearer tvly-test"},
    "firecrawl": {"Authorization": "Bearer fc-test"},
    "chat": {"Authorization": "Bearer sk-test"},
}


def app_client(**kw: Any) -> httpx.AsyncClient:
    """A client of a fresh sandbox app in-process (`create_app(**kw)`) at ROOT."""
    box = in_process(create_app(**kw))
    return httpx.AsyncClient(transport=box.transport, base_url=box.root)


async def search(client: httpx.AsyncClient, provider: str, query: str, n: int = 10) -> list[dict[str, Any]]:
    """One search through the provider's wire format, normalised like docs/concepts/protocol.md (rank, title, url, snippet)."""
    b = base_urls(ROOT)
    if provider == "brave":
        r = await client.get(f"{b['brave']}/res/v1/web/search", params={"q": query, "count": n}, headers=HEADERS["brave"])
        r.raise_for_status()
        results = r.json().get("web", {}).get("results", [])
        return [{"rank": i, "title": x["title"], "url": x["url"],
                 "snippet": strip_tags(" ".join([x["description"], *x.get("extra_snippets", [])]))}
                for i, x in enumerate(results, start=1)]
    if provider == "tavily":
        r = await client.post(f"{b['tavily']}/search", json={"query": query, "max_results": n}, headers=HEADERS["tavily"])
        r.raise_for_status()
        return [{"rank": i, "title": x["title"], "url": x["url"], "snippet": x["content"]}
                for i, x in enumerate(r.json()["results"], start=1)]
    r = await client.post(f"{b['firecrawl']}/v2/search", json={"query": query, "limit": n}, headers=HEADERS["firecrawl"])
    r.raise_for_status()
    return [{"rank": x["position"], "title": x["title"], "url": x["url"], "snippet": x["description"]}
            for x in r.json()["data"]["web"]]


async def fetch(client: httpx.AsyncClient, url: str) -> str:
    r = await client.get(f"{base_urls(ROOT)['jina']}/{url}")
    r.raise_for_status()
    return r.text.split("Markdown Content:\n", 1)[1]


def block(doc: dict[str, Any], page: str | None = None) -> str:
    return document_block(doc_id=doc["doc_id"], rank=doc["rank"], domain=domain_of(doc["url"]), title=doc["title"],
                          url=doc["url"], snippet=doc["snippet"], page=page)


async def run_agent(client: httpx.AsyncClient, provider: str, question: str, max_iterations: int = 10) -> dict[str, Any]:
    """Drives `sandbox-agent` like the engine does; returns the answer (or None), turns and the docs seen."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a research agent."},
                                      {"role": "user", "content": question}]
    docs: dict[str, dict[str, Any]] = {}
    fetched: list[str] = []
    searches = 0
    for it in range(1, max_iterations + 1):
        r = await client.post(f"{base_urls(ROOT)['openai']}/chat/completions", headers=HEADERS["chat"],
                              json={"model": "sandbox-agent", "messages": messages, "tools": TOOL_SCHEMAS})
        r.raise_for_status()
        msg = r.json()["choices"][0]["message"]
        messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
        calls = msg.get("tool_calls") or []
        if not calls:
            text = msg["content"] or ""
            answer = text.removeprefix("FINAL ANSWER:").strip() if text.startswith("FINAL ANSWER:") else None
            return {"answer": answer, "iterations": it, "docs": docs, "fetched": fetched, "searches": searches,
                    "messages": messages}
        for call in calls:
            args = json.loads(call["function"]["arguments"])
            if call["function"]["name"] == "search_web":
                searches += 1
                hits = await search(client, provider, args["query"])
                blocks = []
                for h in hits:
                    doc = {**h, "doc_id": f"d{len(docs) + 1}"}
                    docs[doc["doc_id"]] = doc
                    blocks.append(block(doc))
                content = "\n\n".join(blocks) or "No results."
            else:
                doc = docs[args["doc_id"]]
                fetched.append(doc["doc_id"])
                content = block(doc, await fetch(client, doc["url"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return {"answer": None, "iterations": max_iterations, "docs": docs, "fetched": fetched, "searches": searches,
            "messages": messages}
