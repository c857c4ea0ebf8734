"""OpenAI's Responses API (`POST /v1/responses`) in Chat Completions terms, both ways, so one engine speaks both.

Chat messages become input items (a system/user/assistant text as a message item, each tool call a
`function_call` item, each tool result a `function_call_output` item) and input items become chat messages
again; function tools are flattened (`{"type": "function", "name", "parameters"}`) or nested back; a reply's
text is the concatenation of its `output_text` parts, its tool calls are its `function_call` items.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from searchtrace.adapters._types import Tokens
from searchtrace.store import ToolCall, Usage

_TEXT_PARTS = ("input_text", "output_text", "text")
_ROLES = ("system", "developer", "user", "assistant")


def tools_to_responses(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat function tools (`{"type": "function", "function": {...}}`) as Responses function tools."""
    out = []
    for t in tools or []:
        fn = t.get("function") if isinstance(t, dict) else None
        out.append({"type": "function", **fn} if isinstance(fn, dict) else t)
    return out


def tools_to_chat(tools: list[Any]) -> list[dict[str, Any]]:
    """Responses function tools as chat tools; raises ValueError on another tool type (a hosted tool)."""
    out = []
    for t in tools:
        if not isinstance(t, dict) or t.get("type") != "function":
            kind = t.get("type") if isinstance(t, dict) else type(t).__name__
            raise ValueError(f"Unsupported tool type {kind!r}: only tools of type 'function' are served here.")
        out.append({"type": "function", "function": {k: v for k, v in t.items() if k != "type"}})
    return out


def text_format(response_format: dict[str, Any]) -> dict[str, Any]:
    """A chat `response_format` as the Responses `text.format` (json_schema's inner object is flattened)."""
    if response_format.get("type") == "json_schema" and isinstance(response_format.get("json_schema"), dict):
        return {"type": "json_schema", **response_format["json_schema"]}
    return dict(response_format)


def input_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as Responses input items (order kept; an assistant turn's text precedes its calls)."""
    items: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": str(m.get("tool_call_id", "")),
                          "output": _text(m.get("content"))})
            continue
        text = _text(m.get("content"))
        if role != "assistant" or text:
            items.append({"role": role, "content": text})
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            args = fn.get("arguments", "")
            items.append({"type": "function_call", "call_id": str(tc.get("id", "")), "name": str(fn.get("name", "")),
                          "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})
    return items


def _text(content: Any) -> str:
    """A message's or an item's text: the string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in _TEXT_PARTS)
    return ""


def chat_messages(instructions: Any, input_: Any) -> list[dict[str, Any]]:
    """A request's `instructions` and `input` as chat messages; raises ValueError (OpenAI's wording) on a bad item.

    Consecutive `function_call` items join one assistant message (with the text before them); `reasoning`
    items carry nothing a chat transcript keeps and are skipped."""
    messages: list[dict[str, Any]] = []
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    if isinstance(input_, str):
        return [*messages, {"role": "user", "content": input_}]
    if not isinstance(input_, list):
        raise ValueError("Invalid type for 'input': expected a string or an array of input items.")
    for i, item in enumerate(input_):
        if not isinstance(item, dict):
            raise ValueError(f"Invalid type for 'input[{i}]': expected an object.")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise ValueError(f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                                 "'developer', and 'user'.")
            messages.append({"role": role, "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": str(item.get("call_id", "")), "type": "function",
                    "function": {"name": str(item.get("name", "")), "arguments": str(item.get("arguments", ""))}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":  # the same turn: its text, then its calls
                last.setdefault("tool_calls", []).append(call)
                last["content"] = last.get("content") or None
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")),
                             "content": _text(item.get("output"))})
        elif kind != "reasoning":
            raise ValueError(f"Invalid value: '{kind}'. Supported input item types here: 'message', "
                             "'function_call', 'function_call_output', 'reasoning'.")
    return messages


class _Part(msgspec.Struct):
    type: str = ""
    text: str = ""


class _Item(msgspec.Struct):
    type: str = ""
    content: list[_Part] = []
    call_id: str = ""
    id: str | None = None
    name: str = ""
    arguments: Any = ""  # a JSON string; some servers send an object


class _InDetails(msgspec.Struct):
    cached_tokens: Tokens | None = None


class _OutDetails(msgspec.Struct):
    reasoning_tokens: Tokens | None = None


class _Usage(msgspec.Struct):
    input_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    input_tokens_details: _InDetails | None = None
    output_tokens_details: _OutDetails | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Error(msgspec.Struct):
    message: str = ""
    code: str | None = None


class _Response(msgspec.Struct):
    output: list[_Item]
    status: str | None = None
    usage: _Usage | None = None
    incomplete_details: _Incomplete | None = None
    error: _Error | None = None


_LENGTH = {"max_output_tokens": "length", "content_filter": "content_filter"}


def parse_response(body: bytes) -> tuple[str | None, list[ToolCall], Usage, str | None]:
    """Text, tool calls, usage and a chat-style finish_reason of a Responses body (status `failed` is an error).

    finish_reason: `length` / `content_filter` for an incomplete reply, else `tool_calls` when it calls a
    function, else `stop`."""
    parsed = msgspec.json.decode(body, type=_Response)
    if parsed.status == "failed":
        raise ValueError(f"response failed: {parsed.error.message if parsed.error else 'no error given'}")
    texts = [p.text for item in parsed.output if item.type == "message" for p in item.content if p.type == "output_text"]
    calls = []
    for i, item in enumerate(it for it in parsed.output if it.type == "function_call"):
        args = item.arguments if isinstance(item.arguments, str) else json.dumps(item.arguments, ensure_ascii=False)
        calls.append(ToolCall(call_id=item.call_id or item.id or f"call_{i}", name=item.name, arguments=args))
    u = parsed.usage
    usage = Usage()
    if u is not None:
        out, inp = u.output_tokens_details, u.input_tokens_details
        usage = Usage(input_tokens=u.input_tokens or 0, output_tokens=u.output_tokens or 0,
                      reasoning_tokens=(out.reasoning_tokens if out else None) or 0,
                      cached_tokens=(inp.cached_tokens if inp else None) or 0)
    if parsed.status == "incomplete":
        reason = parsed.incomplete_details.reason if parsed.incomplete_details else None
        finish = _LENGTH.get(reason or "", reason or "length")
    else:
        finish = "tool_calls" if calls else "stop"
    return ("".join(texts) if texts else None), calls, usage, finish


_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def assemble_events(stream: bytes) -> bytes:
    """The Responses object of a typed event stream: the `response` of its closing event (completed, incomplete
    or failed), which carries the whole output and the usage."""
    for line in reversed(stream.decode("utf-8", "replace").splitlines()):
        if not line.startswith("data:"):
            continue
        event = msgspec.json.decode(line[5:].strip() or "null")
        if isinstance(event, dict) and event.get("type") in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            return msgspec.json.encode(event["response"])
    raise ValueError("no response.completed event in the stream")
