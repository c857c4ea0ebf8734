"""The model adapter over OpenAI's Responses API (`api="responses"`): the request it sends for a chat
conversation, and what it reads from a reply (text from output_text, calls from function_call items, usage,
finish_reason); a failed or garbled reply is retried like a garbled chat body."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters import ChatError, OpenAIChat, build_chat
from searchtrace.engine import TOOL_SCHEMAS
from searchtrace.store import BadInput, ToolCall, Usage
from tests.adapters.support import Recorder, fast_endpoint

pytestmark = pytest.mark.anyio

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Search, then answer."},
    {"role": "user", "content": "Who?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "search_web", "arguments": '{"query":"who"}'}}]},
    {"role": "tool", "tool_call_id": "call_a", "content": "<document doc_id=\"d1\">…</document>"},
]
REPLY = {
    "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-x",
    "output": [
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Let me check. ", "annotations": []},
                     {"type": "output_text", "text": "One more look.", "annotations": []}]},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_b", "name": "fetch_page",
         "arguments": '{"doc_id":"d1"}'},
        {"id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_c", "name": "search_web",
         "arguments": {"query": "who else"}},
    ],
    "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
              "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 25}, "total_tokens": 160},
}


def _answer(*bodies: dict[str, Any] | bytes) -> Recorder:
    def one(_req: httpx.Request, n: int) -> httpx.Response:
        body = bodies[min(n, len(bodies)) - 1]
        return httpx.Response(200, content=body if isinstance(body, bytes) else json.dumps(body).encode())

    return Recorder(one)


def _chat(rec: Recorder, **params: Any) -> OpenAIChat:
    return OpenAIChat(fast_endpoint("http://o/v1", None), "gpt-x", params=params, transport=rec.transport,
                      key_fallback="k", api="responses")


async def test_the_request_is_the_conversation_as_input_items() -> None:
    rec = _answer(REPLY)
    async with _chat(rec, reasoning={"effort": "low"}) as c:
        await c.complete(CONVERSATION, tools=TOOL_SCHEMAS, trace_id="t1")
    (sent,) = rec.requests
    assert sent.method == "POST" and sent.url.path == "/v1/responses"
    body = json.loads(sent.content)
    assert body["model"] == "gpt-x" and body["store"] is False and body["reasoning"] == {"effort": "low"}
    assert "messages" not in body and "previous_response_id" not in body
    assert body["input"] == [
        {"role": "system", "content": "Search, then answer."},
        {"role": "user", "content": "Who?"},
        {"type": "function_call", "call_id": "call_a", "name": "search_web", "arguments": '{"query":"who"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "<document doc_id=\"d1\">…</document>"},
    ]
    assert body["tools"] == [{"type": "function", **t["function"]} for t in TOOL_SCHEMAS]


async def test_json_mode_becomes_text_format() -> None:
    rec = _answer(REPLY)
    schema = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}, "strict": True}}
    async with _chat(rec) as c:
        await c.complete([{"role": "user", "content": "judge"}], response_format=schema)
    body = json.loads(rec.requests[0].content)
    assert body["text"] == {"format": {"type": "json_schema", "name": "verdict", "schema": {"type": "object"},
                                       "strict": True}}
    assert "tools" not in body and "response_format" not in body


async def test_text_calls_usage_and_finish_reason_are_read_from_the_reply() -> None:
    rec = _answer(REPLY)
    async with _chat(rec) as c:
        resp = await c.complete(CONVERSATION, tools=TOOL_SCHEMAS)
    assert resp.text == "Let me check. One more look."
    assert resp.tool_calls == [ToolCall(call_id="call_b", name="fetch_page", arguments='{"doc_id":"d1"}'),
                               ToolCall(call_id="call_c", name="search_web", arguments='{"query": "who else"}')]
    assert resp.usage == Usage(input_tokens=120, output_tokens=40, reasoning_tokens=25, cached_tokens=64)
    assert resp.finish_reason == "tool_calls" and resp.raw == json.dumps(REPLY).encode()


@pytest.mark.parametrize(("status", "details", "finish"), [
    ("completed", None, "stop"),
    ("incomplete", {"reason": "max_output_tokens"}, "length"),
    ("incomplete", {"reason": "content_filter"}, "content_filter"),
])
async def test_finish_reason_of_a_text_reply(status: str, details: dict[str, str] | None, finish: str) -> None:
    reply = {**REPLY, "status": status, "incomplete_details": details, "output": REPLY["output"][:2]}
    async with _chat(_answer(reply)) as c:
        resp = await c.complete(CONVERSATION)
    assert resp.finish_reason == finish and resp.tool_calls == [] and resp.text


async def test_a_failed_or_garbled_reply_is_retried_then_a_bad_response() -> None:
    failed = {**REPLY, "status": "failed", "output": [], "error": {"code": "server_error", "message": "boom"}}
    rec = _answer(failed, b'{"output": [{"type": "mess')
    async with _chat(rec) as c:
        with pytest.raises(ChatError) as info:
            await c.complete(CONVERSATION)
    assert info.value.status == "bad_response" and len(rec.requests) == 3
    assert [r.reason for r in info.value.retries] == ["bad_body", "bad_body"]
    rec = _answer(failed, REPLY)
    async with _chat(rec) as c:
        resp = await c.complete(CONVERSATION)
    assert len(rec.requests) == 2 and resp.text and [r.reason for r in resp.retries] == ["bad_body"]


def test_build_chat_refuses_an_unknown_api() -> None:
    with pytest.raises(BadInput, match="chat api: must be one of chat, responses, anthropic, gemini, got 'soap'"):
        build_chat("gpt-x", fast_endpoint("http://o/v1", None), api="soap")


def test_a_reply_with_an_impossible_token_count_is_unusable() -> None:
    """Counts obey the chat replies' bound (0 … 10^12), so a run's sums fit 64-bit integers."""
    import msgspec

    from searchtrace.adapters import parse_response

    for bad in (-1, 10**12 + 1):
        with pytest.raises(msgspec.ValidationError):
            parse_response(msgspec.json.encode({"output": [], "usage": {"input_tokens": 5,
                                                                        "output_tokens_details": {"reasoning_tokens": bad}}}))
