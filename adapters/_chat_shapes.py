"""The chat-message pieces every non-chat wire (Messages, Gemini) converts the same way: one home for them."""

from __future__ import annotations

import json
from typing import Any

import msgspec


def content_text(content: Any) -> str:
    """A chat content or a block list's text (text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def arguments_object(arguments: Any) -> dict[str, Any]:
    """A tool call's JSON arguments as an object (an unparsable string is kept under `_raw`)."""
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def declaration(fn: dict[str, Any], schema_key: str) -> dict[str, Any]:
    """A chat function as a wire's tool declaration: its name, its schema under `schema_key`, its description."""
    out = {"name": fn.get("name", ""), schema_key: fn.get("parameters") or {"type": "object"}}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def chat_tool(name: Any, schema: Any, description: Any) -> dict[str, Any]:
    """A wire's tool declaration as a chat function tool (an empty schema an object's)."""
    fn: dict[str, Any] = {"name": name, "parameters": schema or {"type": "object"}}
    if description:
        fn["description"] = description
    return {"type": "function", "function": fn}


def merge_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[dict[str, Any]]) -> None:
    """Append a turn, or extend the last one under `key` when it has the same role (the wires need roles to alternate)."""
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})


def named_field(body: bytes, field: str) -> str | None:
    """A reply's top-level string field (the model it names), or None."""
    try:
        doc = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return doc.get(field) if isinstance(doc, dict) and isinstance(doc.get(field), str) else None
