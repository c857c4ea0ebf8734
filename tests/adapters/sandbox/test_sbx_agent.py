"""The scripted agent, driven by a minimal harness over the real routes: answers most, runs out on the hopeless."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters.sandbox import default_world
from searchtrace.adapters.sandbox._agent import decide
from searchtrace.engine import document_block
from tests.adapters.sandbox.harness import run_agent


def _calls(messages: list[dict[str, Any]]) -> list[list[str]]:
    return [[c["function"]["name"] for c in m.get("tool_calls") or []] for m in messages if m["role"] == "assistant"]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["brave", "tavily", "firecrawl"])
async def test_agent_answers_most_and_runs_out_on_unanswerable(client: httpx.AsyncClient, provider: str) -> None:
    world = default_world()
    answered = correct = fetches = 0
    parallel_search = parallel_fetch = False
    for q in world.questions:
        res = await run_agent(client, provider, q.question, max_iterations=8)
        turns = _calls(res["messages"])
        parallel_search |= any(t.count("search_web") == 2 for t in turns)
        parallel_fetch |= any(t.count("fetch_page") == 2 for t in turns)
        fetches += len(res["fetched"])
        if not q.answerable:
            assert res["answer"] is None and res["iterations"] == 8  # the answer is nowhere: max iterations
            assert res["searches"] >= 3
            continue
        if res["answer"] is not None:
            answered += 1
            correct += res["answer"].lower() == q.answer.lower()
    n = sum(q.answerable for q in world.questions)
    assert answered >= 0.9 * n
    assert correct >= 0.6 * n
    assert parallel_search and parallel_fetch and fetches > 0


def _msgs(question: str, snippets: list[str]) -> list[dict[str, Any]]:
    blocks = [document_block(doc_id=f"d{i}", rank=i, domain="x.example", title=f"T{i}", url=f"https://x.example/{i}",
                             snippet=s) for i, s in enumerate(snippets, start=1)]
    call = {"id": "call_1", "type": "function", "function": {"name": "search_web", "arguments": json.dumps({"query": question})}}
    return [{"role": "user", "content": question}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "\n\n".join(blocks)}]


def test_agent_reads_only_what_it_is_shown() -> None:
    q = "What is the launch year of Zorbex-4?"
    assert decide([{"role": "user", "content": q}]).calls[0] == ("search_web", {"query": q})
    agree = decide(_msgs(q, ["Old news. The launch year of Zorbex-4 is 2011.", "Zorbex-4 flew."]))
    assert agree.text == "FINAL ANSWER: 2011" and not agree.calls
    other_entity = decide(_msgs(q, ["The launch year of Zorbex-5 is 2011."]))
    assert other_entity.text is None  # a fact about another subject is not an answer
    conflict = decide(_msgs(q, ["The launch year of Zorbex-4 is 2011.", "Zorbex-4 ...", "The launch year of Zorbex-4 is 2013."]))
    assert conflict.calls == [("fetch_page", {"doc_id": "d1"})]  # verify the top-ranked claim
    nothing = decide(_msgs(q, ["Zorbex-4 is a probe.", "Unrelated text."]))
    assert nothing.calls and all(name == "fetch_page" for name, _ in nothing.calls)
    assert nothing.calls[0] == ("fetch_page", {"doc_id": "d1"})


@pytest.mark.anyio
async def test_agent_is_deterministic_with_plausible_usage(client: httpx.AsyncClient) -> None:
    q = default_world().questions[3].question
    a = await run_agent(client, "firecrawl", q)
    b = await run_agent(client, "firecrawl", q)
    assert a["messages"] == b["messages"]
    req = {"model": "sandbox-agent", "messages": a["messages"][:-1]}
    usage = [(await client.post("/openai/v1/chat/completions", json=req, headers={"Authorization": "Bearer k"})).json()["usage"]
             for _ in range(2)]
    assert usage[0] == usage[1]
    short = (await client.post("/openai/v1/chat/completions", json={"model": "sandbox-agent", "messages": a["messages"][:2]},
                               headers={"Authorization": "Bearer k"})).json()["usage"]
    assert usage[0]["prompt_tokens"] > short["prompt_tokens"] > 0
    assert 0 < usage[0]["prompt_tokens_details"]["cached_tokens"] <= usage[0]["prompt_tokens"]
