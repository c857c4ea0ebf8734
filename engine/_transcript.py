"""A trajectory's chat transcript as OpenAI messages, and its exact re-derivation from recorded events alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchtrace.engine._prompts import FINAL_PREFIX, user_message
from searchtrace.engine._tools import fetch_content, refusal_content, search_content
from searchtrace.store import (
    FetchCalled,
    FetchCompleted,
    ModelResponded,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    ToolCall,
    ToolRefused,
    TrajectoryStarted,
)

NUDGE = f"Continue: call a tool, or reply with `{FINAL_PREFIX}` followed by your answer."


def assistant_message(text: str | None, calls: list[ToolCall]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return msg


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def opening_messages(prompt_text: str, question: str, user_template: str = "{question}") -> list[dict[str, Any]]:
    """The first request of a trajectory: the system prompt and the question (through a prompt file's template)."""
    user = user_message(question) if user_template == "{question}" else user_template.format(question=question)
    return [{"role": "system", "content": prompt_text}, {"role": "user", "content": user}]


def turn_messages(text: str | None, calls: list[ToolCall], results: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """What one answered turn adds: the reply, then a nudge when it called no tool, else each (call_id, content)."""
    out = [assistant_message(text, calls)]
    if not calls:
        out.append({"role": "user", "content": NUDGE})
    out.extend(tool_message(call_id, content) for call_id, content in results)
    return out


def rebuild_messages(
    payloads: list[Payload], prompt_text: str, get_blob: Callable[[str], bytes], user_template: str = "{question}"
) -> list[list[dict[str, Any]]]:
    """The message list sent to the model at each iteration, re-derived from one trajectory's events alone."""
    docs: dict[str, SearchResult] = {}
    messages: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = []
    pending: dict[str, list[SearchResult]] = {}
    contents: dict[str, str] = {}
    order: list[str] = []
    last: ModelResponded | None = None

    def flush() -> None:
        nonlocal last, order
        if last is None:
            return
        messages.extend(turn_messages(last.text, last.tool_calls, [(c, contents[c]) for c in order]))
        last, order = None, []
        contents.clear()

    for p in payloads:
        if isinstance(p, TrajectoryStarted):
            messages = opening_messages(prompt_text, p.question, user_template)
        elif isinstance(p, ModelResponded):
            flush()
            sent.append([dict(m) for m in messages])
            last = p
        elif isinstance(p, SearchCalled):
            order.append(p.call_id)
            pending[p.call_id] = []
        elif isinstance(p, SearchResult):
            docs.setdefault(p.doc_id, p)
            pending[p.call_id].append(p)
        elif isinstance(p, SearchCompleted):
            contents[p.call_id] = search_content(p, pending.pop(p.call_id, []))
        elif isinstance(p, FetchCalled):
            order.append(p.call_id)
        elif isinstance(p, FetchCompleted) and p.doc_id is not None:
            page = get_blob(p.content_digest).decode() if p.content_digest else None
            contents[p.call_id] = fetch_content(p, docs[p.doc_id], page)
        elif isinstance(p, ToolRefused):
            order.append(p.call_id)
            contents[p.call_id] = refusal_content(p.reason)
    return sent
