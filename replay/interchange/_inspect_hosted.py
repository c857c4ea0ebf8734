"""Inspect's hosted web search (docs/how-to/hosted.md) -> the hosted layer's reply, read by the proxy's own readers.

Inspect's `web_search()` tool runs inside the model API for its internal providers. A model event keeps what the
caller received two ways: the raw reply (`call.response`, kept for the first calls of each model only) and Inspect's
own content: `tool_use` parts with `tool_type` "web_search" (OpenAI: the action as arguments, no result; Claude: the
query, and the result blocks as JSON), URL citations on the text parts, and Perplexity's sources in the output's
metadata. The raw reply is read when kept; otherwise the content is put back into the layer's wire shape, so both
go through `read_hosted` exactly as a proxied reply does. What Inspect never keeps stays absent: OpenAI's sources
(Inspect does not ask for them), Gemini's uncited grounding chunks and queries (only the cited ones survive, as
citations), Perplexity's queries.
"""

from __future__ import annotations

from typing import Any

import msgspec

from searchtrace.adapters import HostedTurn, read_hosted

# Inspect's provider prefix -> the model API whose replies carry that provider's hosted search
HOSTED_APIS = {"openai": "responses", "anthropic": "anthropic", "google": "gemini", "perplexity": "perplexity"}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _json(text: Any) -> Any:
    try:
        return msgspec.json.decode(text) if isinstance(text, str) and text else None
    except (msgspec.DecodeError, RecursionError):
        return None


def _span(citation: dict[str, Any]) -> tuple[int, int] | None:
    """A citation's (start, end) in its text part, when Inspect gives the span rather than the passage."""
    cited = citation.get("cited_text")
    if isinstance(cited, list) and len(cited) == 2 and all(isinstance(i, int) for i in cited):
        return cited[0], cited[1]
    return None


def hosted_turn(event: dict[str, Any]) -> HostedTurn | None:
    """The hosted search one Inspect model event received (None: its provider has none, or it searched nothing)."""
    prefix = str(event.get("model") or "").partition("/")[0]
    api = HOSTED_APIS.get(prefix)
    if api is None:
        return None
    call: dict[str, Any] = event["call"] if isinstance(event.get("call"), dict) else {}
    raw = call.get("response")
    if isinstance(raw, dict) and not call.get("error"):
        turn = read_hosted(api, msgspec.json.encode(raw))
    else:
        turn = read_hosted(api, msgspec.json.encode(wire_reply(api, event.get("output") or {})))
    return None if turn is None or (turn.empty and not turn.citations) else turn


def wire_reply(api: str, output: dict[str, Any]) -> dict[str, Any]:
    """The reply of model API `api` that Inspect's output was read from, as far as the output keeps it."""
    choice = next(iter(_dicts(output.get("choices"))), {})
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = _dicts(message.get("content")) if isinstance(message, dict) else []
    uses = [c for c in content if c.get("type") == "tool_use" and c.get("tool_type") == "web_search"]
    texts = [c for c in content if c.get("type") == "text"]
    if api == "anthropic":
        return {"content": _anthropic(uses, texts)}
    if api == "gemini":
        return {"candidates": [{"groundingMetadata": _gemini(uses, texts)}]}
    annotations = [{"type": "url_citation", "url": c.get("url"), "title": c.get("title") or "",
                    "start_index": span[0], "end_index": span[1]}
                   for t in texts for c in _dicts(t.get("citations"))
                   if c.get("type") == "url" and (span := _span(c)) is not None]  # Perplexity: its sources are
    # attached as citations without a span too; only the spans are the answer's own citations
    items: list[dict[str, Any]] = []
    if api == "responses":
        items = [{"type": "web_search_call", "action": action} for u in uses
                 if isinstance(action := _json(u.get("arguments")), dict)]
    else:  # perplexity: the sources Inspect moved into the output's metadata, by item type
        meta: dict[str, Any] = output["metadata"] if isinstance(output.get("metadata"), dict) else {}
        if meta.get("search_results"):
            items.append({"type": "search_results", "queries": [], "results": _dicts(meta["search_results"])})
        if meta.get("fetch_url_results"):
            items.append({"type": "fetch_url_results", "contents": _dicts(meta["fetch_url_results"])})
    return {"output": [*items, {"type": "message", "content": [{"type": "output_text", "annotations": annotations}]}]}


def _anthropic(uses: list[dict[str, Any]], texts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages blocks: each server tool use and its result block (Inspect keeps a search's result list, a fetch's
    whole result block), then the text parts' web search citations."""
    blocks: list[dict[str, Any]] = []
    for u in uses:
        use_id = str(u.get("id") or "")
        args = _json(u.get("arguments"))
        blocks.append({"type": "server_tool_use", "id": use_id, "name": u.get("name"),
                       "input": args if isinstance(args, dict) else {}})
        result = _json(u.get("result"))
        if u.get("name") == "web_fetch" and isinstance(result, dict):
            blocks.append({**result, "tool_use_id": use_id})
        elif isinstance(result, list):
            blocks.append({"type": "web_search_tool_result", "tool_use_id": use_id, "content": result})
    blocks += [{"type": "text", "citations": [
        {"type": "web_search_result_location", "url": c.get("url"), "title": c.get("title") or "",
         "cited_text": c.get("cited_text")} for c in _dicts(t.get("citations"))
        if c.get("type") == "url" and isinstance(c.get("cited_text"), str)]} for t in texts]
    return blocks


def _gemini(uses: list[dict[str, Any]], texts: list[dict[str, Any]]) -> dict[str, Any]:
    """`groundingMetadata` from what Inspect keeps: a chunk per cited URL (in order of first citation), a support per
    citation over its span of the text, the queries of any server search call."""
    chunks: dict[str, dict[str, Any]] = {}
    supports: list[dict[str, Any]] = []
    for t in texts:
        text = str(t.get("text") or "")
        for c in _dicts(t.get("citations")):
            url = c.get("url")
            if c.get("type") != "url" or not isinstance(url, str) or not url:
                continue
            chunks.setdefault(url, {"web": {"uri": url, "title": c.get("title") or ""}})
            start, end = _span(c) or (0, 0)
            supports.append({"segment": {"startIndex": start, "endIndex": end, "text": text[start:end]},
                             "groundingChunkIndices": [list(chunks).index(url)]})
    queries: list[str] = []
    for u in uses:
        args = _json(u.get("arguments"))
        if isinstance(args, dict):
            given = args.get("queries") or ([args["query"]] if args.get("query") else [])
            queries += [str(q) for q in given if q] if isinstance(given, list) else []
    return {"webSearchQueries": queries, "groundingChunks": list(chunks.values()), "groundingSupports": supports}
