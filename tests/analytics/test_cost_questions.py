"""docs/reference/prices.md cost and latency on a small store written event by event, against figures worked out by hand.

Two epochs of one question, a fetch cache hit, a judge call with cached input, a failed search and a failed
fetch: cache hits are billed as fetches, cached judge input takes the cached price, per-question USD sums to the
provider's exactly, latency quantiles read successful calls only and the others are counted.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import searchtrace.analytics._sources as sources
from searchtrace.analytics import build_report
from searchtrace.analytics._cost import question_costs
from searchtrace.engine import Prices, parse_prices
from searchtrace.store import (
    EventLog,
    FetchCalled,
    FetchCompleted,
    FetchStatus,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    ModelResponded,
    NewEvent,
    Payload,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    SearchStatus,
    TrajectoryStarted,
    Usage,
    Verdict,
)

PRICES: dict[str, Any] = {  # binary-exact prices, so the hand figures below are exact sixteenths
    "as_of": "2026-12-01",
    "search": {"brave": 5.0, "tavily": 8.0},  # "tav" is priced by its kind
    "fetch": {"jina": 0.0625},
    "models": {"m": {"input": 1.25, "cached_input": 0.125, "output": 10.0},
               "jm": {"input": 0.5, "cached_input": 0.0625, "output": 2.5}},
}
M = 1_000_000


def search(call: str, status: SearchStatus, ms: float, snippet: str | None) -> list[Payload]:
    out: list[Payload] = [SearchCalled(call_id=call, iteration=1, query="q"),
                          SearchCompleted(call_id=call, status=status, n_results=int(snippet is not None),
                                          latency_ms=ms + 7.0, provider_ms=ms)]
    if snippet is not None:
        out.append(SearchResult(call_id=call, doc_id=f"d{call}", rank=1, title="t", url=f"https://a.org/{call}",
                                url_normalized=f"https://a.org/{call}", domain="a.org", snippet=snippet))
    return out


def fetch(call: str, status: FetchStatus, tokens: int, *, hit: bool = False, ms: float | None = None) -> list[Payload]:
    done = FetchCompleted(call_id=call, doc_id="ds1", status=status, content_digest=None, n_bytes=tokens * 4,
                          n_tokens=tokens, cache_hit=hit, latency_ms=1.0)
    if ms is not None:
        done.provider_ms = ms
    return [FetchCalled(call_id=call, iteration=1, doc_id="ds1", url="https://a.org/s1"), done]


def model(inp: int, cached: int, out: int) -> ModelResponded:
    return ModelResponded(iteration=1, text="x", usage=Usage(input_tokens=inp, cached_tokens=cached, output_tokens=out))


def verdict(tid: str, url: str, inp: int, cached: int, out: int) -> JudgeVerdict:
    no = Labels(supports_gold=False, contradicts_gold=False, relevant=False)
    return JudgeVerdict(judge_run_id="j", item=JudgeItemRef(trajectory_id=tid, url_normalized=url), surface="snippet",
                        valid=True, labels=Verdict(snippet=no, page=None, supports_final_answer=False, rationale=""),
                        usage=Usage(input_tokens=inp, cached_tokens=cached, output_tokens=out))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("costq") / "c.duckdb"
    config = {"agent": {"model": "m"}, "fetch": {"backend": "jina"}, "providers": {"brave": {}, "tav": {"kind": "tavily"}}}
    trajectories: dict[str, list[Payload]] = {
        "t1": [TrajectoryStarted(trajectory_id="t1", qid="q1", provider="brave"),
               *search("s1", "ok", 100.0, "a"), *search("s2", "timeout", 5000.0, None), model(1000, 400, 50),
               *fetch("f1", "ok", 300, ms=40.0), *fetch("f2", "ok", 200, hit=True)],
        "t2": [TrajectoryStarted(trajectory_id="t2", qid="q1", provider="brave", epoch=2),
               *search("s1", "ok", 300.0, "a"), model(800, 0, 20)],
        "t3": [TrajectoryStarted(trajectory_id="t3", qid="q2", provider="brave"),
               *search("s1", "ok", 200.0, "ab"), model(500, 100, 10)],
        "t4": [TrajectoryStarted(trajectory_id="t4", qid="q1", provider="tav"),
               *search("s1", "ok", 50.0, "abc"), *fetch("f1", "http_error", 0, ms=30000.0)],
    }
    events = [NewEvent(stream_id="run:r", run_id="r", payload=RunStarted(run_id="r", config=config, code_version="t"))]
    events += [NewEvent(stream_id=f"traj:{tid}", run_id="r", payload=p) for tid, ps in trajectories.items() for p in ps]
    judge: list[Payload] = [JudgeStarted(judge_run_id="j", model="jm", prompt_version="v", prompt_sha256="0" * 64),
                            verdict("t1", "https://a.org/s1", 2000, 1500, 30), verdict("t3", "https://a.org/s1", 1000, 0, 10)]
    events += [NewEvent(stream_id="judge:j", run_id="r", payload=p) for p in judge]
    with EventLog(path) as log:
        log.append(events)
    return path


def report(db: Path, prices: Prices) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Fraction] | None]]:
    with EventLog(db) as log:
        cur = log.cursor()
        try:
            rep = build_report(cur, judge_run_id="j", prices=prices).report
            with sources.reading(cur, writable=True):
                per_question = question_costs(cur, prices, "j")
        finally:
            cur.close()
    return rep.to_builtins()["providers"], per_question


# By hand: brave q1 is epochs 1 and 2 (t1, t2), q2 is t3; tav q1 is t4 (its failed fetch bills nothing).
BRAVE_Q1 = {  # in USD per 16M tokens: agent input 20, cached 2, output 160; judge 8, 1, 40; fetch 1
    "search_usd": Fraction(2 * 5, 1000),
    "fetch_usd": Fraction(300 + 200, 16 * M),  # the cache hit's 200 tokens are billed
    "agent_model_usd": Fraction(600 * 20 + 400 * 2 + 50 * 160 + 800 * 20 + 20 * 160, 16 * M),
    "judge_model_usd": Fraction(500 * 8 + 1500 * 1 + 30 * 40, 16 * M),  # 1,500 cached input tokens
}
BRAVE_Q2 = {
    "search_usd": Fraction(5, 1000),
    "fetch_usd": Fraction(0),
    "agent_model_usd": Fraction(400 * 20 + 100 * 2 + 10 * 160, 16 * M),
    "judge_model_usd": Fraction(1000 * 8 + 10 * 40, 16 * M),
}
TAV_Q1 = {"search_usd": Fraction(8, 1000), "fetch_usd": Fraction(0), "agent_model_usd": Fraction(0),
          "judge_model_usd": Fraction(0)}


def test_question_costs_by_hand_and_their_sum_is_the_provider_total(db: Path) -> None:
    providers, per_question = report(db, parse_prices(PRICES, "test"))
    assert per_question == {"brave": {"q1": sum(BRAVE_Q1.values()), "q2": sum(BRAVE_Q2.values())},
                            "tav": {"q1": sum(TAV_Q1.values())}}
    for name, questions in (("brave", (BRAVE_Q1, BRAVE_Q2)), ("tav", (TAV_Q1,))):
        block = providers[name]
        for comp in BRAVE_Q1:
            assert block[comp] == float(sum(q[comp] for q in questions)), (name, comp)
        total = per_question[name]
        assert total is not None
        assert block["usd_total"] == float(sum(total.values()))  # the same exact sum, to the last bit
        assert block["usd_per_trajectory"] == float(sum(total.values()) / block["trajectories"])
    assert providers["brave"]["trajectories"] == 3 and providers["tav"]["trajectories"] == 1


def test_an_unpriced_judge_nulls_only_the_providers_it_judged(db: Path) -> None:
    prices = parse_prices({**PRICES, "models": {"m": PRICES["models"]["m"]}}, "test")
    providers, per_question = report(db, prices)
    assert per_question == {"brave": None, "tav": {"q1": sum(TAV_Q1.values())}}
    assert providers["brave"]["judge_model_usd"] is None and providers["brave"]["usd_total"] is None
    assert providers["brave"]["agent_model_usd"] == float(BRAVE_Q1["agent_model_usd"] + BRAVE_Q2["agent_model_usd"])
    assert providers["tav"]["judge_model_usd"] == 0.0 and providers["tav"]["usd_total"] == float(TAV_Q1["search_usd"])


def test_latency_reads_successful_calls_and_counts_the_rest(db: Path) -> None:
    providers, _ = report(db, parse_prices(PRICES, "test"))
    brave, tav = providers["brave"], providers["tav"]
    # ok searches 100, 300, 200 ms (the 5,000 ms timeout left out): median 200, p90 200 + 0.8 x 100
    assert (brave["search_provider_ms_median"], brave["search_provider_ms_p90"]) == (200.0, 280.0)
    assert (brave["search_failed_calls"], brave["fetch_failed_calls"], brave["fetch_cache_hits"]) == (1, 0, 1)
    assert (brave["fetch_provider_ms_median"], brave["fetch_provider_ms_p90"]) == (40.0, 40.0)  # the hit has none
    assert (tav["search_failed_calls"], tav["fetch_failed_calls"], tav["fetch_cache_hits"]) == (0, 1, 0)
    assert tav["fetch_provider_ms_median"] is None and tav["fetch_provider_ms_p90"] is None  # only a failed fetch
    assert tav["search_provider_ms_median"] == 50.0


def test_surface_chars_mean_is_not_rounded(db: Path) -> None:
    providers, _ = report(db, parse_prices(PRICES, "test"))
    assert providers["brave"]["surface_chars_mean"] == 4 / 3  # snippets "a", "a", "ab"
    assert providers["brave"]["surface_chars_median"] == 1.0 and providers["tav"]["surface_chars_mean"] == 3.0
