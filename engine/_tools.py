"""The agent's two tools: JSON schemas, the validation of a call, and what each call shows the model.

Every text the model sees from a tool is a pure function of recorded events (and blobs), so a trajectory's
message list can be rebuilt from the store alone (`engine._agent.rebuild_messages`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from searchtrace.engine._documents import document_block
from searchtrace.store import FetchCompleted, SearchCompleted, SearchResult

SEARCH_WEB = "search_web"
FETCH_PAGE = "fetch_page"

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": SEARCH_WEB,
            "description": "Search the web. Returns up to 10 ranked results as <document> blocks, each with a doc_id.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "The search query."}},
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": FETCH_PAGE,
            "description": (
                "Fetch the full page of an earlier search result as markdown. "
                "Takes only a doc_id returned by search_web earlier in this conversation."
            ),
            "parameters": {
                "type": "object",
                "properties": {"doc_id": {"type": "string", "description": "A doc_id such as d3."}},
                "required": ["doc_id"],
                "additionalProperties": False,
            },
        },
    },
]


class SearchPlan(msgspec.Struct, frozen=True):
    call_id: str
    query: str


class FetchPlan(msgspec.Struct, frozen=True):
    call_id: str
    doc: SearchResult


class Refusal(msgspec.Struct, frozen=True):
    call_id: str
    name: str
    arguments: str
    reason: str


Plan = SearchPlan | FetchPlan | Refusal

_args_decoder = msgspec.json.Decoder(dict[str, Any])


def plan(docs: Mapping[str, SearchResult], call_id: str, name: str, arguments: str) -> Plan:
    """Validates one tool call against the schemas and the trajectory's doc_ids so far; never performs it."""
    try:
        args = _args_decoder.decode(arguments or "{}")
    except (msgspec.DecodeError, RecursionError):
        return Refusal(call_id, name, arguments, "arguments are not a JSON object")
    if name == SEARCH_WEB:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return Refusal(call_id, name, arguments, "search_web needs a non-empty string `query`")
        return SearchPlan(call_id, query)
    if name == FETCH_PAGE:
        doc_id = args.get("doc_id")
        if not isinstance(doc_id, str) or not doc_id:
            return Refusal(call_id, name, arguments, "fetch_page needs a string `doc_id`")
        doc = docs.get(doc_id.strip())
        if doc is None:
            return Refusal(
                call_id,
                name,
                arguments,
                f"unknown doc_id {doc_id!r}: fetch_page accepts only a doc_id returned by search_web earlier",
            )
        return FetchPlan(call_id, doc)
    return Refusal(call_id, name, arguments, f"unknown tool {name!r} (tools: {SEARCH_WEB}, {FETCH_PAGE})")


def doc_block(doc: SearchResult, page: str | None = None) -> str:
    return document_block(
        doc_id=doc.doc_id,
        rank=doc.rank,
        domain=doc.domain,
        title=doc.title,
        url=doc.url,
        snippet=doc.snippet,
        metadata=doc.metadata,
        page=page,
    )


def _failure(what: str, status: str, http_status: int | None) -> str:
    code = f" (HTTP {http_status})" if http_status else ""
    return f"Error: {what} failed: {status}{code}. You may try again or continue with what you have."


def search_content(done: SearchCompleted, results: list[SearchResult]) -> str:
    """What the model sees of one search_web call."""
    if done.status != "ok":
        return _failure("search_web", done.status, done.http_status)
    if not results:
        return "No results."
    return "\n\n".join(doc_block(r) for r in results)


def fetch_content(done: FetchCompleted, doc: SearchResult, page: str | None) -> str:
    """What the model sees of one fetch_page call: the document block with <page>, or the error."""
    if done.status != "ok" or page is None:
        return _failure(f"fetch_page({doc.doc_id})", done.status, done.http_status)
    return doc_block(doc, page)


def refusal_content(reason: str) -> str:
    return f"Error: {reason}"
