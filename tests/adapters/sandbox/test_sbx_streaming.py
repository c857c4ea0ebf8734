"""`stream: true` on the sandbox chat route: server-sent chunks that add up to the plain reply, then usage."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters.sandbox import base_urls, default_world
from searchtrace.engine import TOOL_SCHEMAS
from tests.adapters.sandbox.harness import HEADERS, ROOT

URL = f"{base_urls(ROOT)['openai']}/chat/completions"
Q = default_world().questions[0].question


def events(text: str) -> list[Any]:
    """The `data:` payloads of an event stream, `[DONE]` kept as the string."""
    out: list[Any] = []
    for block in text.split("\n\n"):
        if block.startswith("data: "):
            data = block[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def assemble(chunks: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]], str | None]:
    """Content, tool calls and finish reason put back together the way a client does."""
    content: str | None = None
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for c in chunks:
        for choice in c["choices"]:
            delta = choice["delta"]
            if delta.get("content"):
                content = (content or "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "type": "function",
                                                      "function": {"name": None, "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] = fn.get("name") or slot["function"]["name"]
                slot["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice["finish_reason"] or finish
    return content, [calls[i] for i in sorted(calls)], finish


@pytest.mark.anyio
@pytest.mark.parametrize("model,tools", [("sandbox-agent", True), ("sandbox-judge", False)])
async def test_stream_adds_up_to_the_plain_reply(client: httpx.AsyncClient, model: str, tools: bool) -> None:
    req: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": Q}]}
    if tools:
        req["tools"] = TOOL_SCHEMAS
    plain = (await client.post(URL, json=req, headers=HEADERS["chat"])).json()
    r = await client.post(URL, json={**req, "stream": True}, headers=HEADERS["chat"])
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = events(r.text)
    assert got[-1] == "[DONE]"
    chunks = got[:-1]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == plain["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    message = plain["choices"][0]["message"]
    content, calls, finish = assemble(chunks)
    assert content == message["content"]
    assert calls == [{k: tc[k] for k in ("id", "type", "function")} for tc in message.get("tool_calls") or []]
    assert finish == plain["choices"][0]["finish_reason"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == plain["usage"]
    assert len(chunks) > 3  # really streamed in pieces, not one chunk


@pytest.mark.anyio
async def test_include_usage_marks_every_chunk_and_errors_stay_json(client: httpx.AsyncClient) -> None:
    req = {"model": "sandbox-judge", "messages": [{"role": "user", "content": Q}], "stream": True,
           "stream_options": {"include_usage": True}}
    chunks = events((await client.post(URL, json=req, headers=HEADERS["chat"])).text)[:-1]
    assert all("usage" in c for c in chunks) and all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["usage"]["total_tokens"] > 0
    bad = await client.post(URL, json=req, headers={"Authorization": "Bearer bad-key"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
