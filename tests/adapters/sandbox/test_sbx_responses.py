"""POST R/openai/v1/responses: OpenAI's refusals for bad requests, faults as on the chat route, the bounded
memory behind `previous_response_id`, and the same turn the chat route gives for the same conversation."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters import input_items
from searchtrace.adapters.sandbox import base_urls, default_world
from searchtrace.engine import TOOL_SCHEMAS
from tests.adapters.sandbox.harness import HEADERS, ROOT

pytestmark = pytest.mark.anyio
URL = f"{base_urls(ROOT)['openai']}/responses"
TOOLS = [{"type": "function", **t["function"]} for t in TOOL_SCHEMAS]
Q = default_world().questions[0].question


async def _post(client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return await client.post(URL, json=body, headers=HEADERS["chat"] if headers is None else headers)


@pytest.mark.parametrize(("body", "status", "says"), [
    ({"model": "sandbox-agent"}, 400, "Missing required parameter: 'input'."),
    ({"input": Q}, 400, "you must provide a model parameter"),
    ({"model": "gpt-nowhere", "input": Q}, 404, "The model `gpt-nowhere` does not exist"),
    ({"model": "sandbox-agent", "input": Q, "tools": [{"type": "code_interpreter"}]}, 400, "Unsupported tool type 'code_interpreter'"),
    ({"model": "sandbox-agent", "input": [{"type": "function_call_output", "call_id": "c1", "output": "x"}]}, 400,
     "function_call_output items must be a response to a preceeding message"),
    ({"model": "sandbox-agent", "input": [{"type": "image_generation_call"}]}, 400, "Invalid value: 'image_generation_call'"),
    ({"model": "sandbox-agent", "input": 3}, 400, "Invalid type for 'input'"),
    ({"model": "sandbox-agent", "input": Q, "previous_response_id": "resp_x"}, 400, "Previous response with id 'resp_x'"),
])
async def test_bad_requests_are_refused_the_openai_way(client: httpx.AsyncClient, body: dict[str, Any], status: int,
                                                       says: str) -> None:
    r = await _post(client, body)
    assert r.status_code == status and says in r.json()["error"]["message"]


async def test_no_key_or_a_bad_key_is_a_401(client: httpx.AsyncClient) -> None:
    assert (await _post(client, {"model": "sandbox-agent", "input": Q}, headers={})).status_code == 401
    r = await _post(client, {"model": "sandbox-agent", "input": Q}, headers={"Authorization": "Bearer bad-key"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


async def test_a_fault_marker_faults_the_responses_route(client: httpx.AsyncClient) -> None:
    r = await _post(client, {"model": "sandbox-agent", "input": f"{Q} !fault:429"})
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limit_exceeded"


async def test_the_same_turn_as_the_chat_route(client: httpx.AsyncClient) -> None:
    """A conversation with a tool result, asked on both routes: the same calls or text, the same input tokens."""
    opening = [{"role": "system", "content": "Search."}, {"role": "user", "content": Q}]
    first = (await client.post(URL.replace("/responses", "/chat/completions"), headers=HEADERS["chat"],
                               json={"model": "sandbox-agent", "messages": opening, "tools": TOOL_SCHEMAS})).json()
    message = first["choices"][0]["message"]
    hits = [{"title": "The founding year", "url": "https://example.org/a", "content": "It says nothing."}]
    conversation = [*opening, {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")},
                    {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": json.dumps({"results": hits})}]
    chat = (await client.post(URL.replace("/responses", "/chat/completions"), headers=HEADERS["chat"],
                              json={"model": "sandbox-agent", "messages": conversation, "tools": TOOL_SCHEMAS})).json()
    resp = (await _post(client, {"model": "sandbox-agent", "input": input_items(conversation), "tools": TOOLS})).json()
    chat_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in chat["choices"][0]["message"]["tool_calls"]]
    assert chat_calls == [(o["name"], o["arguments"]) for o in resp["output"] if o["type"] == "function_call"]
    assert chat["usage"]["prompt_tokens"] == resp["usage"]["input_tokens"]


async def test_previous_responses_are_kept_per_server_and_bounded(client: httpx.AsyncClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import searchtrace.adapters.sandbox._state as state

    monkeypatch.setattr(state, "RESPONSES_KEPT", 2)
    ids = [(await _post(client, {"model": "sandbox-judge", "input": f"question {i}"})).json()["id"] for i in range(3)]
    assert len(set(ids)) == 3
    oldest = await _post(client, {"model": "sandbox-judge", "input": "and?", "previous_response_id": ids[0]})
    assert oldest.status_code == 400 and oldest.json()["error"]["code"] == "previous_response_not_found"
    newest = await _post(client, {"model": "sandbox-judge", "input": "and?", "previous_response_id": ids[2]})
    assert newest.status_code == 200 and newest.json()["previous_response_id"] == ids[2]
