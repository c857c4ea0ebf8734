"""Surface fidelity (docs/how-to/hosted.md): the judge sees the fields the caller received, a result without a snippet
has no snippet verdict and is UNOBSERVED (a fifth cell, never NO-OP), and every rate names its denominator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from searchtrace.adapters import normalize_url
from searchtrace.analytics import judge_items
from searchtrace.engine import document_block
from searchtrace.replay import JudgeOptions, run_judge
from searchtrace.store import (
    AnswerFinal,
    EventLog,
    NewEvent,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.analytics.analytics_fixture import report_json
from tests.replay.test_judge import GOLD, QUESTION, sandbox_chat, verdicts

# (url, snippet); the first supports the gold answer on its snippet
DOCS = [("https://a.example/zembla", "The founding year of Zembla Works is 1987."),
        ("https://c.example/food", "Cooking recipes for every season.")]
LAYERS = {  # provider -> (surface, model_saw_more)
    "perplexity_agent": (["url", "title", "snippet"], False),
    "anthropic_web_search": (["url", "title", "cited_text"], True),
}


def hosted_trajectory(tid: str, provider: str) -> list[Payload]:
    surface, more = LAYERS[provider]
    out: list[Payload] = [TrajectoryStarted(trajectory_id=tid, qid="q1", provider=provider, question=QUESTION,
                                            gold_answer=GOLD),
                          SearchCalled(call_id="h1", iteration=1, query="zembla works founded", provider=provider)]
    for rank, (url, snippet) in enumerate(DOCS, start=1):
        out.append(SearchResult(
            call_id="h1", doc_id=f"h1:{rank}", rank=rank, title=f"Title {rank}", url=url,
            url_normalized=normalize_url(url), domain=url.split("/")[2], snippet=snippet if "snippet" in surface else "",
            metadata={"cited_text": snippet} if "cited_text" in surface and rank == 1 else {},
            surface=surface, model_saw_more=more))
    out += [SearchCompleted(call_id="h1", status="ok", n_results=len(DOCS), latency_ms=5.0),
            AnswerFinal(iteration=1, text="1987"), TrajectoryFinished(reason="answered", iterations=1)]
    return out


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "hosted.duckdb"
    with EventLog(path) as log:
        log.append([NewEvent(stream_id=f"traj:{tid}", run_id="r1", payload=p)
                    for tid, prov in (("tp", "perplexity_agent"), ("ta", "anthropic_web_search"))
                    for p in hosted_trajectory(tid, prov)])
    return path


def test_the_judge_block_holds_only_the_received_fields() -> None:
    block = document_block(doc_id="h1:1", rank=1, domain="a.example", title="Title 1", url="https://a.example/z",
                           snippet="", metadata={"cited_text": "founded in 1987", "opaque_blob": "ab12"},
                           surface=["url", "cited_text"])
    assert "<url>https://a.example/z</url>" in block and "<cited_text>founded in 1987</cited_text>" in block
    assert "<title>" not in block and "<snippet>" not in block and "ab12" not in block and "<metadata>" not in block
    full = document_block(doc_id="d", rank=1, domain="a", title="T", url="u", snippet="s")
    assert "<title>T</title>" in full and "<snippet>s</snippet>" in full and "<metadata>{}</metadata>" in full


@pytest.mark.anyio
async def test_unobserved_items_have_no_snippet_verdict_and_their_own_cell(store: Path, app: Any) -> None:
    with EventLog(store) as log:
        items = {(i.provider, i.rank): i for i in judge_items(log.cursor())}
        assert items[("anthropic_web_search", 1)].surface == ["url", "title", "cited_text"]
        assert not items[("anthropic_web_search", 1)].snippet_observed
        assert items[("perplexity_agent", 1)].snippet_observed and items[("perplexity_agent", 1)].snippet_shown
        chat = sandbox_chat(app)
        await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1", concurrency=2), chat=chat)
        await chat.aclose()
        got = verdicts(log, "j1")
    first = normalize_url(DOCS[0][0])
    assert got[f"tp|{first}"].labels is not None and got[f"tp|{first}"].labels.snippet is not None
    assert got[f"tp|{first}"].labels.snippet.supports_gold
    for url, _ in DOCS:  # valid verdicts, without snippet labels: unobservable, not false
        v = got[f"ta|{normalize_url(url)}"]
        assert v.valid and v.labels is not None and v.labels.snippet is None
    _, rep = report_json(store, "--judge-run-id", "j1")
    claude, pplx = rep["providers"]["anthropic_web_search"], rep["providers"]["perplexity_agent"]
    assert claude["partition"] == {"SMART": 0, "MISSED": 0, "BLIND": 0, "NO-OP": 0, "UNOBSERVED": 2}
    assert claude["unobserved_items"] == 2 and claude["snippet_observed_items"] == 0
    assert claude["surface_support_rate"] is None  # no snippet reached the caller: no rate, not zero
    assert pplx["partition"] == {"SMART": 0, "MISSED": 1, "BLIND": 0, "NO-OP": 1, "UNOBSERVED": 0}
    assert pplx["surface_support_rate"] == 0.5 and pplx["snippet_observed_items"] == 2
    assert claude["denominators"]["surface_support_rate"] == "snippet_observed_items"
    assert claude["denominators"]["partition"] == "valid_items"


@pytest.fixture
def app() -> Any:
    from searchtrace.adapters.sandbox import create_app

    return create_app()
