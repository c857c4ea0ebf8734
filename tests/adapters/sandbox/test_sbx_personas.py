"""The three personas answer the same questions with measurably different decision surfaces."""

from __future__ import annotations

from statistics import mean

import httpx
import pytest

from searchtrace.adapters.sandbox import default_world
from searchtrace.adapters.sandbox._corpus import fact_sentence
from searchtrace.adapters.sandbox._reading import strip_tags
from tests.adapters.sandbox.harness import search


@pytest.mark.anyio
async def test_personas_differ_on_the_same_questions(client: httpx.AsyncClient) -> None:
    world = default_world()
    stats: dict[str, dict[str, float]] = {}
    for provider in ("brave", "tavily", "firecrawl"):
        n = support = support_rank1 = gold_rank1 = wrong = 0
        lengths: list[int] = []
        for q in world.questions:
            hits = await search(client, provider, q.question)
            assert 0 < len(hits) <= 10
            gold = fact_sentence(q.attribute, q.entity, q.answer)
            for h in hits:
                n += 1
                text = strip_tags(h["snippet"])
                lengths.append(len(text))
                if gold in text:
                    support += 1
                    support_rank1 += h["rank"] == 1
                elif f"The {q.attribute} of {q.entity} is " in text:
                    wrong += 1
                page = world.page(h["url"])
                assert page is not None, h["url"]  # every provider spelling normalises to a corpus page
                gold_rank1 += h["rank"] == 1 and page.kind == "gold" and page.qid == q.qid
        stats[provider] = {"support": support, "rank1_share": support_rank1 / max(support, 1),
                           "gold_rank1": gold_rank1, "wrong": wrong, "mean_len": mean(lengths), "n": n}
    brave, tavily, fire = stats["brave"], stats["tavily"], stats["firecrawl"]
    # Brave: snippet-rich, the most results whose snippet states the gold answer
    assert brave["support"] > tavily["support"] > fire["support"]
    assert brave["mean_len"] > tavily["mean_len"] > fire["mean_len"]
    # Tavily: the answer page at rank 1 most often, and its supporting snippets concentrated at rank 1
    assert tavily["gold_rank1"] > brave["gold_rank1"] and tavily["gold_rank1"] > fire["gold_rank1"]
    assert tavily["rank1_share"] > brave["rank1_share"]
    # Firecrawl: sparse, the answer rarely on the surface
    assert fire["support"] <= 0.25 * brave["support"]
    # contradictions exist on the snippet-rich surfaces
    assert brave["wrong"] > 0 and tavily["wrong"] > 0


@pytest.mark.anyio
async def test_urls_differ_in_spelling_but_normalise_alike(client: httpx.AsyncClient) -> None:
    from searchtrace.adapters import normalize_url

    world = default_world()
    spellings: dict[str, set[str]] = {}
    for q in world.questions[:12]:
        for provider in ("brave", "tavily", "firecrawl"):
            for h in await search(client, provider, q.question):
                spellings.setdefault(normalize_url(h["url"]), set()).add(h["url"])
    assert any(len(v) > 1 for v in spellings.values())
    assert any("utm_source=" in u for v in spellings.values() for u in v)
    assert all(world.page(k) is not None for k in spellings)
