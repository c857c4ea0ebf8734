"""Hosted search layers (docs/how-to/hosted.md): what a model API's own search tool gave its caller, read from a reply.

A hosted layer is a search tool the model API runs itself. Its reply holds the searches (query, sources in the order
received), the pages the model opened (text when the caller receives it, else None: hidden), and the answer's
citations. Each source is a SearchHit with `surface` (which of url, title, snippet, cited_text, page the caller
received) and `model_saw_more` (the model read text the caller cannot). Opaque fields (Claude's encrypted_content)
ride in the hit's metadata under OPAQUE until the recorder keeps them as a blob. Gemini's grounding URIs are
redirects: `resolve_redirects` replaces each with the URL it points to, keeping the redirect in metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import msgspec

import searchtrace.adapters._anthropic_messages as anthropic
from searchtrace.adapters._openai_chat import parse_reply
from searchtrace.adapters._types import SearchHit
from searchtrace.adapters._urls import domain_of
from searchtrace.store import Citation, Usage

LAYERS = ("openai_web_search", "anthropic_web_search", "anthropic_web_fetch", "gemini_grounding", "perplexity_agent")
"""The hosted search layers a run config or a demo may name like a search provider."""
OPAQUE = "encrypted_content"  # a hit's metadata key for an opaque field, until recorded as a blob
REDIRECT = "redirect"  # a hit's metadata key for the redirect URI it was resolved from


API = {"openai_web_search": "responses", "anthropic_web_search": "anthropic", "anthropic_web_fetch": "anthropic",
       "gemini_grounding": "gemini", "perplexity_agent": "perplexity"}
"""The model API each layer is asked over (its endpoint is the sandbox's route of the same name, `responses` OpenAI's)."""
ENDPOINT = {"responses": "openai", "anthropic": "anthropic", "gemini": "gemini", "perplexity": "perplexity"}
SOURCES = "web_search_call.action.sources"  # always included: without it a Responses web_search names no source


def hosted_request(layer: str, model: str, question: str) -> tuple[str, dict[str, Any]]:
    """(path below the API's base URL, JSON body) of one question asked with the layer's hosted tool."""
    user = [{"role": "user", "content": question}]
    if layer == "openai_web_search":
        return "/responses", {"model": model, "input": question, "tools": [{"type": "web_search"}], "include": [SOURCES]}
    if layer in ("anthropic_web_search", "anthropic_web_fetch"):
        tools: list[dict[str, Any]] = [{"type": "web_search_20250305", "name": "web_search"}]
        if layer == "anthropic_web_fetch":
            tools.append({"type": "web_fetch_20250910", "name": "web_fetch"})
        return "/v1/messages", {"model": model, "max_tokens": 1024, "messages": user, "tools": tools}
    if layer == "gemini_grounding":
        return (f"/v1beta/models/{model}:generateContent",
                {"contents": [{"role": "user", "parts": [{"text": question}]}], "tools": [{"google_search": {}}]})
    if layer == "perplexity_agent":
        return "/v1/responses", {"model": model, "input": question,
                                 "tools": [{"type": "web_search"}, {"type": "fetch_url"}]}
    raise ValueError(f"unknown hosted layer {layer!r} (known: {', '.join(LAYERS)})")


def agent_reply(api: str, body: bytes) -> tuple[str | None, Usage, str | None]:
    """(text, usage, finish reason) of a hosted layer's reply: the API's own reader, Perplexity's Agent API here."""
    if api != "perplexity":
        text, _, usage, finish = parse_reply(api, body)
        return text, usage, finish
    doc = _obj(msgspec.json.decode(body))
    text = "".join(str(p.get("text", "")) for item in _dicts(doc.get("output")) if item.get("type") == "message"
                   for p in _dicts(item.get("content")))
    u = _obj(doc.get("usage"))
    return text or None, Usage(input_tokens=int(u.get("input_tokens") or 0),
                               output_tokens=int(u.get("output_tokens") or 0)), str(doc.get("status") or "") or None


def continued(api: str, request: dict[str, Any], reply: bytes, finish: str | None) -> dict[str, Any] | None:
    """The request that continues a paused hosted turn (Claude's `pause_turn`: the reply's content sent back as it
    came), None when the turn is done."""
    return anthropic.continuation(request, reply) if api == "anthropic" and finish == anthropic.PAUSE_TURN else None


class HostedSearch(msgspec.Struct, kw_only=True):
    query: str
    hits: list[SearchHit]
    params: dict[str, Any] = {}


class HostedFetch(msgspec.Struct, kw_only=True):
    url: str
    title: str = ""
    text: str | None = None  # None: the model read the page and the caller did not receive it (status hidden)


class HostedTurn(msgspec.Struct, kw_only=True):
    """What one model reply's hosted tools gave the caller, in the order received."""

    layer: str
    searches: list[HostedSearch] = []
    fetches: list[HostedFetch] = []
    citations: list[Citation] = []

    @property
    def empty(self) -> bool:
        return not (self.searches or self.fetches)


def _hit(rank: int, url: str, title: str, surface: list[str], saw_more: bool, snippet: str = "",
         metadata: dict[str, Any] | None = None) -> SearchHit:
    return SearchHit(rank=rank, title=title, url=url, domain=domain_of(url), snippet=snippet,
                     metadata=metadata or {}, surface=surface, model_saw_more=saw_more)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def url_citations(doc: dict[str, Any]) -> list[Citation]:
    """The `url_citation` annotations of a Responses-format reply's messages (OpenAI's and Perplexity's Agent API)."""
    return [Citation(url=str(a.get("url", "")), title=str(a.get("title") or ""), start=a.get("start_index"),
                     end=a.get("end_index"))
            for item in _dicts(doc.get("output")) if item.get("type") == "message"
            for part in _dicts(item.get("content")) for a in _dicts(part.get("annotations"))
            if a.get("type") == "url_citation"]


def read_openai(doc: dict[str, Any]) -> HostedTurn:
    """Responses `web_search_call` items (sources when included) and `url_citation` annotations: the caller gets the
    URLs, a title only where cited, never the text the model read."""
    citations = url_citations(doc)
    titles = {c.url: c.title for c in citations if c.title}
    turn = HostedTurn(layer="openai_web_search", citations=citations)
    for item in _dicts(doc.get("output")):
        if item.get("type") != "web_search_call":
            continue
        action = _obj(item.get("action"))
        kind = action.get("type")
        if kind == "search":
            queries = [str(q) for q in action.get("queries") or [] if q] or [str(action.get("query") or "")]
            urls = [str(s["url"]) for s in _dicts(action.get("sources")) if s.get("url")]
            hits = [_hit(i, u, titles.get(u, ""), ["url", "title"] if u in titles else ["url"], True)
                    for i, u in enumerate(urls, start=1)]
            turn.searches.append(HostedSearch(query=queries[0], hits=hits, params={"queries": queries}))
        elif kind in ("open_page", "find_in_page", "find") and action.get("url"):
            turn.fetches.append(HostedFetch(url=str(action["url"])))
    return turn


def read_anthropic(doc: dict[str, Any]) -> HostedTurn:
    """Messages `server_tool_use` / `web_search_tool_result` (url, title, page_age, encrypted content) /
    `web_fetch_tool_result` (the page text) blocks and `web_search_result_location` citations."""
    blocks = _dicts(doc.get("content"))
    citations = [Citation(url=str(c.get("url", "")), title=str(c.get("title") or ""),
                          cited_text=str(c.get("cited_text") or ""))
                 for b in blocks if b.get("type") == "text" for c in _dicts(b.get("citations"))
                 if c.get("type") in ("web_search_result_location", "search_result_location")]
    cited = {c.url: c.cited_text for c in citations if c.cited_text}
    queries = {str(b.get("id")): _obj(b.get("input")) for b in blocks if b.get("type") == "server_tool_use"}
    fetching = any(b.get("type") == "web_fetch_tool_result" for b in blocks)
    turn = HostedTurn(layer="anthropic_web_fetch" if fetching else "anthropic_web_search", citations=citations)
    for b in blocks:
        asked = queries.get(str(b.get("tool_use_id")), {})
        if b.get("type") == "web_search_tool_result":
            hits = []
            for i, r in enumerate(_dicts(b.get("content")), start=1):
                url = str(r.get("url", ""))
                meta: dict[str, Any] = {k: r[k] for k in ("page_age",) if r.get(k)}
                if r.get("encrypted_content"):
                    meta[OPAQUE] = str(r["encrypted_content"])
                surface = ["url", "title"]
                if url in cited:
                    meta["cited_text"] = cited[url]
                    surface.append("cited_text")
                hits.append(_hit(i, url, str(r.get("title") or ""), surface, True, metadata=meta))
            turn.searches.append(HostedSearch(query=str(asked.get("query") or ""), hits=hits))
        elif b.get("type") == "web_fetch_tool_result" and isinstance(b.get("content"), dict):
            res = _obj(b["content"])
            document = _obj(res.get("content"))
            source = _obj(document.get("source"))
            text = source.get("data") if source.get("type") == "text" else None
            turn.fetches.append(HostedFetch(url=str(res.get("url") or asked.get("url") or ""),
                                            title=str(document.get("title") or ""),
                                            text=str(text) if text is not None else None))
    return turn


def read_gemini(doc: dict[str, Any]) -> HostedTurn:
    """`groundingMetadata` of the first candidate: the queries, a source per grounding chunk (redirect URI, domain
    title; no snippet), citations from `groundingSupports`."""
    cands = _dicts(doc.get("candidates"))
    meta = _obj(cands[0].get("groundingMetadata")) if cands else {}
    chunks = [_obj(c.get("web")) for c in _dicts(meta.get("groundingChunks"))]
    turn = HostedTurn(layer="gemini_grounding")
    if not chunks and not meta.get("webSearchQueries"):
        return turn
    queries = [str(q) for q in meta.get("webSearchQueries") or []]
    hits = [_hit(i, str(c.get("uri", "")), str(c.get("title") or ""), ["url", "title"], True)
            for i, c in enumerate(chunks, start=1)]
    turn.searches.append(HostedSearch(query=queries[0] if queries else "", hits=hits, params={"queries": queries}))
    for s in _dicts(meta.get("groundingSupports")):
        seg = _obj(s.get("segment"))
        for j in s.get("groundingChunkIndices") or []:
            if isinstance(j, int) and 0 <= j < len(chunks):
                turn.citations.append(Citation(url=str(chunks[j].get("uri", "")), title=str(chunks[j].get("title") or ""),
                                               cited_text=str(seg.get("text") or ""), start=seg.get("startIndex"),
                                               end=seg.get("endIndex")))
    return turn


def read_perplexity(doc: dict[str, Any]) -> HostedTurn:
    """Agent API `search_results` (id, title, url, snippet, date) and `fetch_url_results` items."""
    turn = HostedTurn(layer="perplexity_agent", citations=url_citations(doc))
    for item in _dicts(doc.get("output")):
        if item.get("type") == "search_results":
            queries = [str(q) for q in item.get("queries") or []]
            hits = [_hit(i, str(r.get("url", "")), str(r.get("title") or ""), ["url", "title", "snippet"], False,
                         snippet=str(r.get("snippet") or ""),
                         metadata={k: r[k] for k in ("date", "last_updated") if r.get(k)})
                    for i, r in enumerate(_dicts(item.get("results")), start=1)]
            turn.searches.append(HostedSearch(query=queries[0] if queries else "", hits=hits,
                                              params={"queries": queries}))
        elif item.get("type") == "fetch_url_results":
            turn.fetches += [HostedFetch(url=str(c.get("url", "")), title=str(c.get("title") or ""),
                                         text=str(c.get("snippet") or ""))
                             for c in _dicts(item.get("contents"))]
    return turn


READERS: dict[str, Callable[[dict[str, Any]], HostedTurn]] = {
    "responses": read_openai, "anthropic": read_anthropic, "gemini": read_gemini, "perplexity": read_perplexity,
}
"""The reader of each model API whose replies can carry hosted search (by the API name model.responded records)."""


def read_hosted(api: str, body: bytes) -> HostedTurn | None:
    """The hosted search in one reply of model API `api`, None when the API has none or the body is not JSON."""
    reader = READERS.get(api)
    if reader is None:
        return None
    try:
        doc = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return reader(doc) if isinstance(doc, dict) else None


def resolve_redirects(turn: HostedTurn, resolve: Callable[[str], str | None]) -> HostedTurn:
    """The turn with every hit's and citation's URL replaced by where its redirect points (`resolve(uri)`; None:
    kept as it is), the redirect kept in the hit's metadata; a turn of another layer is returned as it is."""
    if turn.layer != "gemini_grounding":
        return turn
    final: dict[str, str] = {}
    for s in turn.searches:
        for h in s.hits:
            if h.url not in final:
                final[h.url] = resolve(h.url) or h.url
    searches = [msgspec.structs.replace(s, hits=[
        msgspec.structs.replace(h, url=final[h.url], domain=domain_of(final[h.url]),
                                metadata={**h.metadata, REDIRECT: h.url} if final[h.url] != h.url else h.metadata)
        for h in s.hits]) for s in turn.searches]
    citations = [msgspec.structs.replace(c, url=final.get(c.url, c.url)) for c in turn.citations]
    return msgspec.structs.replace(turn, searches=searches, citations=citations)


async def resolved(turn: HostedTurn, client: httpx.AsyncClient) -> HostedTurn:
    """`resolve_redirects` with each redirect asked once through `client` (a 3xx's Location; else kept as it is)."""
    if turn.layer != "gemini_grounding":
        return turn
    final: dict[str, str | None] = {}
    for s in turn.searches:
        for h in s.hits:
            if h.url in final:
                continue
            try:
                r = await client.get(h.url, follow_redirects=False)
                final[h.url] = r.headers.get("location") if r.is_redirect else None
            except httpx.HTTPError:
                final[h.url] = None
    return resolve_redirects(turn, final.get)
