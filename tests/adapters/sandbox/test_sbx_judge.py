"""The sandbox judge: docs/concepts/judge.md JSON, deterministic and honest about the one document it is shown."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters import domain_of
from searchtrace.adapters.sandbox import default_world
from searchtrace.adapters.sandbox._corpus import fact_sentence, infobox_row
from searchtrace.engine import document_block
from searchtrace.replay import get_judge_prompt
from tests.adapters.sandbox.harness import HEADERS, fetch, search

SCHEMA = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}}


def prompt(question: str, gold: str, final: str | None, hit: dict[str, Any], page: str | None = None) -> list[dict[str, str]]:
    doc = document_block(doc_id="d1", rank=hit["rank"], domain=domain_of(hit["url"]), title=hit["title"],
                         url=hit["url"], snippet=hit["snippet"], page=page)
    return get_judge_prompt().messages(question=question, gold_answer=gold, final_answer=final, document=doc)


async def judge(client: httpx.AsyncClient, messages: list[dict[str, str]], model: str = "sandbox-judge") -> str:
    r = await client.post("/openai/v1/chat/completions", headers=HEADERS["chat"],
                          json={"model": model, "messages": messages, "response_format": SCHEMA, "temperature": 0})
    assert r.status_code == 200
    body = r.json()
    assert body["choices"][0]["finish_reason"] == "stop" and "tool_calls" not in body["choices"][0]["message"]
    content = body["choices"][0]["message"]["content"]
    assert isinstance(content, str)
    return content


@pytest.mark.anyio
async def test_judge_labels_follow_the_evidence(client: httpx.AsyncClient) -> None:
    world = default_world()
    seen = {"support": 0, "contra": 0, "irrelevant": 0, "page_support": 0, "mention_only": 0}
    for q in world.questions[:18]:
        gold_sentence = fact_sentence(q.attribute, q.entity, q.answer)
        for hit in await search(client, "brave", q.question):
            v = json.loads(await judge(client, prompt(q.question, q.answer, q.answer, hit)))
            assert set(v) == {"snippet", "page", "supports_final_answer", "rationale"} and v["page"] is None
            surface = hit["title"] + " " + hit["snippet"]
            states_gold = gold_sentence in surface
            states_other = not states_gold and f"The {q.attribute} of {q.entity} is " in surface
            assert v["snippet"] == {"supports_gold": states_gold, "contradicts_gold": states_other,
                                    "relevant": q.entity in surface}
            assert v["supports_final_answer"] == states_gold
            seen["support"] += states_gold
            seen["contra"] += states_other
            seen["irrelevant"] += q.entity not in surface
            seen["mention_only"] += q.answer in surface and not states_gold  # the string alone is no support
            if hit["rank"] <= 2:
                page = await fetch(client, hit["url"])
                pv = json.loads(await judge(client, prompt(q.question, q.answer, None, hit, page)))
                assert pv["snippet"] == v["snippet"]  # snippet labels stay on the snippet surface
                in_page = gold_sentence in page or (q.entity in page and infobox_row(q.attribute, q.answer) in page)
                assert pv["page"] is not None and pv["page"]["supports_gold"] == in_page
                assert pv["supports_final_answer"] is False  # no final answer
                seen["page_support"] += in_page and not states_gold
    assert all(seen.values()), seen  # every case occurred: support, contradiction, irrelevant, support after fetch


@pytest.mark.anyio
async def test_judge_is_deterministic_and_uses_the_prompts_gold(client: httpx.AsyncClient) -> None:
    q = default_world().questions[0]
    hit = next(h for h in await search(client, "brave", q.question)
               if fact_sentence(q.attribute, q.entity, q.answer) in h["snippet"])
    a = await judge(client, prompt(q.question, q.answer, q.answer, hit))
    assert a == await judge(client, prompt(q.question, q.answer, q.answer, hit))
    flipped = json.loads(await judge(client, prompt(q.question, "something else", q.answer, hit)))
    assert flipped["snippet"]["supports_gold"] is False and flipped["snippet"]["contradicts_gold"] is True
    assert flipped["supports_final_answer"] is True


def _valid(reply: str, page_visible: bool) -> bool:
    try:
        v = json.loads(reply)
    except ValueError:
        return False
    keys = {"supports_gold", "contradicts_gold", "relevant"}
    return (isinstance(v, dict) and set(v) == {"snippet", "page", "supports_final_answer", "rationale"}
            and isinstance(v["snippet"], dict) and set(v["snippet"]) == keys
            and (v["page"] is not None) == page_visible)


@pytest.mark.anyio
async def test_fenced_without_json_mode_and_page_only_as_element(client: httpx.AsyncClient) -> None:
    q = default_world().questions[0]
    hit = {"rank": 1, "title": "T", "url": "https://x.example/", "snippet": f"{q.entity}: see <page> below"}
    messages = prompt(q.question, q.answer, None, hit)
    r = await client.post("/openai/v1/chat/completions", headers=HEADERS["chat"],
                          json={"model": "sandbox-judge", "messages": messages})
    content = r.json()["choices"][0]["message"]["content"]
    assert content.startswith("```json\n") and content.endswith("\n```")
    v = json.loads(content.removeprefix("```json\n").removesuffix("\n```"))
    assert v["page"] is None and v["snippet"]["relevant"] is True  # "<page>" inside a snippet is not the element


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["prose", "badjson", "wrongshape", "pagemismatch"])
async def test_bad_replies_on_request(client: httpx.AsyncClient, kind: str) -> None:
    q = default_world().questions[1]
    hit = (await search(client, "tavily", q.question))[0]
    messages = prompt(q.question, q.answer, q.answer, hit)
    assert _valid(await judge(client, messages), page_visible=False)
    messages[-1]["content"] += f"\n!fault:{kind}"
    assert not _valid(await judge(client, messages), page_visible=False)


@pytest.mark.anyio
async def test_sloppy_judge_fails_on_about_two_percent(client: httpx.AsyncClient) -> None:
    world = default_world()
    total = bad = 0
    for q in world.questions:
        for provider in ("brave", "firecrawl"):
            for hit in await search(client, provider, q.question):
                messages = prompt(q.question, q.answer, None, hit)
                sloppy = await judge(client, messages, "sandbox-judge-sloppy")
                total += 1
                if not _valid(sloppy, page_visible=False):
                    bad += 1
                else:
                    assert sloppy == await judge(client, messages)
                    continue
                assert sloppy == await judge(client, messages, "sandbox-judge-sloppy")  # deterministic
    assert total > 400 and 0 < bad <= 0.06 * total
