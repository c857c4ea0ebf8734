"""Anthropic Messages and Gemini as the engine speaks them: a chat conversation as each API's request and back
(what the sandbox and the proxy read), replies plain and streamed put back together, usage by the one rule,
errors and 429s in each API's own shape through the real adapter against the in-process sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

import searchtrace.adapters._anthropic_messages as am
import searchtrace.adapters._gemini as gm
from searchtrace.adapters import ChatError, build_chat, sandbox_endpoint
from searchtrace.adapters.sandbox import FaultPlan, create_app, in_process
from searchtrace.engine import TOOL_SCHEMAS
from searchtrace.store import (
    EventLog,
    ModelResponded,
    ToolCall,
    Usage,
    decode_payload,
    final_text,
    usage_rule,
)
from tests.builders import run_cli

pytestmark = pytest.mark.anyio

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Search, then answer."},
    {"role": "user", "content": "Who founded Elmwyn Athletic?"},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "search_web", "arguments": '{"query": "elmwyn"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "search_web", "arguments": '{"query": "founder"}'}}]},
    {"role": "tool", "tool_call_id": "call_a", "content": "<document doc_id=\"d1\">one</document>"},
    {"role": "tool", "tool_call_id": "call_b", "content": "<document doc_id=\"d2\">two</document>"},
    {"role": "user", "content": "Continue."},
]


# ---------------------------------------------------------------- the two rules

def test_the_usage_rule_sums_what_a_provider_reports_apart() -> None:
    assert usage_rule(prompt=100, output=40, cached=64, reasoning=25) == Usage(
        input_tokens=100, output_tokens=40, reasoning_tokens=25, cached_tokens=64)
    anthropic = usage_rule(prompt=10, output=40, cached=64, cache_write=26, cache_apart=True)
    assert (anthropic.input_tokens, anthropic.cached_tokens, anthropic.cache_write_tokens) == (100, 64, 26)
    gemini = usage_rule(prompt=100, output=15, cached=64, reasoning=25, reasoning_apart=True)
    assert (gemini.output_tokens, gemini.reasoning_tokens) == (40, 25)
    # no cache writes: the field is absent, so events recorded before keep their bytes
    assert b"cache_write" not in msgspec.json.encode(usage_rule(prompt=5, output=1))
    assert (anthropic + gemini).cache_write_tokens == 26


@pytest.mark.parametrize(("given", "kept"), [("FINAL ANSWER: 1937", "1937"), ("  final answer:1937 ", "1937"),
                                             ("1937", "1937"), (" Paris ", " Paris "), ("FINAL ANSWER:", "")])
def test_the_final_answer_rule_strips_the_prefix_only(given: str, kept: str) -> None:
    assert final_text(given) == kept


# ---------------------------------------------------------------- requests both ways

def test_anthropic_request_is_the_conversation_and_reads_back_as_it() -> None:
    body = am.request_body("claude-x", CONVERSATION, TOOL_SCHEMAS, None, {"temperature": 0})
    assert body["system"] == "Search, then answer." and body["max_tokens"] == am.MAX_TOKENS
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]  # roles alternate
    results = body["messages"][2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert body["messages"][1]["content"][1] == {"type": "tool_use", "id": "call_a", "name": "search_web",
                                                 "input": {"query": "elmwyn"}}
    assert body["tools"][0]["input_schema"] == TOOL_SCHEMAS[0]["function"]["parameters"]
    back = am.chat_messages(body["system"], body["messages"])
    assert [m["role"] for m in back] == [m["role"] for m in CONVERSATION]
    assert [m.get("tool_call_id") for m in back] == [m.get("tool_call_id") for m in CONVERSATION]
    assert json.loads(back[2]["tool_calls"][1]["function"]["arguments"]) == {"query": "founder"}
    assert am.tools_to_chat(body["tools"]) == TOOL_SCHEMAS
    with pytest.raises(ValueError, match="web_search_20250305"):
        am.tools_to_chat([{"type": "web_search_20250305", "name": "web_search"}])


def test_gemini_request_is_the_conversation_and_reads_back_as_it() -> None:
    body = gm.request_body("gemini-x", CONVERSATION, TOOL_SCHEMAS, {"type": "json_object"}, {"temperature": 0})
    assert body["systemInstruction"] == {"parts": [{"text": "Search, then answer."}]}
    assert body["generationConfig"] == {"temperature": 0, "responseMimeType": "application/json"}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    answers = [p["functionResponse"] for p in body["contents"][2]["parts"] if "functionResponse" in p]
    assert [(a["id"], a["name"]) for a in answers] == [("call_a", "search_web"), ("call_b", "search_web")]
    back = gm.chat_messages(body["systemInstruction"], body["contents"])
    assert [m["role"] for m in back] == [m["role"] for m in CONVERSATION]
    assert back[3]["content"] == CONVERSATION[3]["content"]
    assert gm.tools_to_chat(body["tools"]) == TOOL_SCHEMAS
    # calls and answers without ids (older clients) are paired by name, in order
    contents = [{"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "search_web", "args": {"query": "a"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "search_web", "response": {"result": "r"}}}]}]
    paired = gm.chat_messages(None, contents)
    assert paired[1]["tool_calls"][0]["id"] == paired[2]["tool_call_id"] == "search_web#0"


# ---------------------------------------------------------------- replies, plain and streamed

REPLY = am.message(id_="msg_1", model="claude-x", text="Let me look it up.",
                   calls=[ToolCall(call_id="toolu_1", name="search_web", arguments='{"query":"elmwyn athletic founded"}')],
                   stop_reason="tool_use",
                   usage={"input_tokens": 10, "cache_read_input_tokens": 64, "cache_creation_input_tokens": 26,
                          "output_tokens": 40})


def test_anthropic_reply_plain_and_streamed_say_the_same() -> None:
    plain = am.parse_message(msgspec.json.encode(REPLY))
    assert plain[0] == "Let me look it up." and plain[3] == "tool_use"
    assert plain[1] == [ToolCall(call_id="toolu_1", name="search_web", arguments='{"query": "elmwyn athletic founded"}')]
    assert (plain[2].input_tokens, plain[2].cached_tokens, plain[2].cache_write_tokens) == (100, 64, 26)
    stream = b"".join(am.sse_bytes(e, d) for e, d in am.stream_events(REPLY))
    assert stream.count(b"input_json_delta") >= 2  # the arguments arrive in pieces, joined per block index
    assert am.parse_message(am.assemble(stream)) == plain
    assert am.model_of(am.assemble(stream)) == "claude-x"


def test_anthropic_stream_with_thinking_citations_ping_and_cumulative_usage() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                           "model": "claude-y", "content": [], "stop_reason": None,
                           "usage": {"input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "signature_delta", "signature": "sig"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("ping", {"type": "ping"}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": "", "citations": None}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "It "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "citations_delta", "citation": {"type": "search_result_location",
                                                                                   "cited_text": "1937"}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "was 1937."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 9}}),
        ("message_delta", {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 12}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    whole = am.assemble(b"".join(am.sse_bytes(e, d) for e, d in events))
    text, calls, usage, stop = am.parse_message(whole)
    assert (text, calls, stop) == ("It was 1937.", [], "pause_turn")
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (12, 7, 12)  # the last cumulative count
    doc = msgspec.json.decode(whole)
    assert doc["content"][0]["thinking"] == "hmm" and doc["content"][1]["citations"][0]["cited_text"] == "1937"
    broken = am.sse_bytes(*events[0]) + am.sse_bytes("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                                        "message": "Overloaded"}})
    with pytest.raises(ValueError, match="overloaded_error: Overloaded"):
        am.assemble(broken)


def test_gemini_reply_plain_and_streamed_say_the_same() -> None:
    reply = gm.reply(response_id="r1", model="gemini-x", text="Let me look that one up, carefully.",
                     calls=[ToolCall(call_id="c1", name="search_web", arguments='{"query":"q"}')],
                     usage={"promptTokenCount": 100, "cachedContentTokenCount": 64, "candidatesTokenCount": 15,
                            "thoughtsTokenCount": 25})
    plain = gm.parse_reply(msgspec.json.encode(reply))
    assert plain[2] == Usage(input_tokens=100, output_tokens=40, reasoning_tokens=25, cached_tokens=64)
    stream = b"".join(gm.sse_bytes(c) for c in gm.stream_chunks(reply))
    assert stream.count(b"data: ") >= 3
    assert gm.parse_reply(gm.assemble(stream)) == plain
    assert gm.model_of(gm.assemble(stream)) == "gemini-x"
    with pytest.raises(ValueError, match="RESOURCE_EXHAUSTED"):
        gm.assemble(gm.sse_bytes(gm.error_body(429, "Resource has been exhausted")))


# ---------------------------------------------------------------- the adapter against the sandbox

@pytest.mark.parametrize("api", ["anthropic", "gemini"])
async def test_the_adapter_asks_the_sandbox_model_over_each_api(api: str) -> None:
    box = in_process()
    chat = build_chat("sandbox-agent", sandbox_endpoint(api, box.root), transport=box.transport,
                      key_fallback="sandbox", api=api)
    async with chat:
        first = await chat.complete([{"role": "user", "content": "When was Elmwyn Athletic founded?"}],
                                    tools=TOOL_SCHEMAS)
    assert first.model == "sandbox-agent" and first.api == api
    assert [c.name for c in first.tool_calls] == ["search_web"]
    assert first.usage.input_tokens > 0 and first.usage.output_tokens >= first.usage.reasoning_tokens > 0


@pytest.mark.parametrize(("api", "shape"), [("anthropic", "rate_limit_error"), ("gemini", "RESOURCE_EXHAUSTED")])
async def test_a_429_is_retried_and_then_a_chat_error_in_the_apis_words(api: str, shape: str) -> None:
    box = in_process(create_app(faults=FaultPlan(seed=1, rates={"429": 1.0}, routes=frozenset({"chat"}))))
    endpoint = sandbox_endpoint(api, box.root, max_retries=1, max_wait_s=0.01)
    async with build_chat("sandbox-agent", endpoint, transport=box.transport, key_fallback="sandbox", api=api) as chat:
        with pytest.raises(ChatError) as caught:
            await chat.complete([{"role": "user", "content": "When was Elmwyn Athletic founded?"}])
    assert caught.value.http_status == 429 and shape in caught.value.message and len(caught.value.retries) == 1


async def test_a_key_the_sandbox_refuses_names_the_api_and_its_variable() -> None:
    box = in_process()
    endpoint = sandbox_endpoint("anthropic", box.root)
    async with build_chat("sandbox-agent", endpoint, transport=box.transport, key_fallback="bad-key",
                          api="anthropic") as chat:
        with pytest.raises(ChatError) as caught:
            await chat.complete([{"role": "user", "content": "hi"}])
    assert caught.value.auth and "Anthropic Messages rejected the key in ANTHROPIC_API_KEY" in caught.value.message


async def test_sandbox_count_tokens_and_its_own_errors() -> None:
    box = in_process()

    async with httpx.AsyncClient(transport=box.transport, base_url=box.root) as c:
        body = {"model": "sandbox-agent", "messages": [{"role": "user", "content": "hi"}]}
        counted = await c.post("/anthropic/v1/messages/count_tokens", json=body)
        no_max = await c.post("/anthropic/v1/messages", json=body)
        unknown = await c.post("/gemini/v1beta/models/nope:generateContent",
                               json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
    assert no_max.status_code == 400 and no_max.json()["error"]["type"] == "invalid_request_error"
    assert unknown.status_code == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"


# ---------------------------------------------------------------- the demo over each API

@pytest.mark.parametrize("api", ["anthropic", "gemini"])
def test_demo_runs_offline_with_the_agent_on_each_api(api: str, tmp_path: Path) -> None:
    ran = run_cli("demo", "--agent-api", api, "--n", "3", "--out", str(tmp_path), "--json")
    assert ran.code == 0, ran.err
    log = EventLog(tmp_path / "demo.duckdb")
    try:
        rows = log.cursor().execute("SELECT payload FROM events WHERE type = 'model.responded'").fetchall()
        finished = log.cursor().execute(
            "SELECT count(*) FROM events WHERE type = 'trajectory.finished' AND payload->>'reason' = 'answered'"
        ).fetchone()
    finally:
        log.close()
    turns = [decode_payload(r[0]) for r in rows]
    assert turns and all(isinstance(t, ModelResponded) and t.api == api and t.model == "sandbox-agent" for t in turns)
    assert finished is not None and finished[0] == 9  # three questions, three personas, every one answered


@pytest.mark.parametrize("api", ["anthropic", "gemini"])
def test_a_sandbox_record_of_a_named_model_says_which_model_answered(api: str, tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'[agent]\nmodel = "claude-or-gemini-x"\napi = "{api}"\n[providers.brave]\n'
                      f'[dataset]\npath = "sandbox"\n[sample]\nn = 1\n[fetch]\ncache_dir = ""\n')
    ran = run_cli("record", "--config", str(config), "--db", str(tmp_path / "r.duckdb"), "--sandbox", "--no-progress")
    assert ran.code == 0, ran.err
    said = [line for line in ran.err.splitlines() if "claude-or-gemini-x" in line]
    assert said == [f"searchtrace: the config names model 'claude-or-gemini-x'; in the sandbox 'sandbox-agent' "
                    f"answers (over the {api} API) and is recorded as the model"]
    log = EventLog(tmp_path / "r.duckdb")
    try:
        rows = log.cursor().execute("SELECT payload FROM events WHERE type = 'model.responded'").fetchall()
    finally:
        log.close()
    assert rows and all((t.model, t.api) == ("sandbox-agent", api) for t in map(decode_payload, (r[0] for r in rows))
                        if isinstance(t, ModelResponded))
