"""A trajectory's chat transcript as OpenAI messages, and its exact re-derivation from recorded events alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchtrace.adapters import PAUSE_TURN
from searchtrace.engine._prompts import user_message
from searchtrace.engine._tools import fetch_content, refusal_content, search_content
from searchtrace.engine._trajectory import Fetch, Search, fold
from searchtrace.store import FINAL_PREFIX, ModelResponded, Payload, ToolCall, ToolRefused

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




def turn_messages(text: str | None, calls: list[ToolCall], results: list[tuple[str, str]],
                  finish_reason: str | None = None) -> list[dict[str, Any]]:
    """What one answered turn adds: the reply, then a nudge when it called no tool, else each (call_id, content);
    a paused turn (Anthropic's `pause_turn`) is continued as it is, without a nudge."""
    out = [assistant_message(text, calls)]
    if not calls and finish_reason != PAUSE_TURN:
        out.append({"role": "user", "content": NUDGE})
    out.extend(tool_message(call_id, content) for call_id, content in results)
    return out


def rebuild_messages(
    payloads: list[Payload], prompt_text: str, get_blob: Callable[[str], bytes], user_template: str = "{question}"
) -> list[list[dict[str, Any]]]:
    """The message list sent to the model at each iteration, re-derived from one trajectory's events alone."""
    f = fold(payloads)
    messages = opening_messages(prompt_text, f.started.question, user_template) if f.started is not None else []
    sent: list[list[dict[str, Any]]] = []
    last: ModelResponded | None = None
    results: list[tuple[str, str]] = []  # (call_id, content) of the tool calls after `last`, in recorded order

    for step in f.steps:
        if isinstance(step, ModelResponded):
            if last is not None:
                messages.extend(turn_messages(last.text, last.tool_calls, results, last.finish_reason))
            sent.append([dict(m) for m in messages])
            last, results = step, []
        elif isinstance(step, Search) and step.completed is not None:
            results.append((step.called.call_id, search_content(step.completed, step.results)))
        elif isinstance(step, Fetch) and step.completed is not None and step.completed.doc_id is not None:
            page = get_blob(step.completed.content_digest).decode() if step.completed.content_digest else None
            results.append((step.called.call_id,
                            fetch_content(step.completed, f.docs[step.completed.doc_id], page)))
        elif isinstance(step, ToolRefused):
            results.append((step.call_id, refusal_content(step.reason)))
    return sent
