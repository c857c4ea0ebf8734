"""Citation metrics (docs/how-to/hosted.md) on a store small enough to count by hand.

One arm (perplexity_agent), two answers:
- q1 shows A, B, C; A's snippet supports gold and the answer, B neither, C gold only; the answer cites A, B and a URL
  that is no item (X).
- q2 shows D, which supports the answer and not gold; the answer cites D.
By hand: 4 citations over 2 answers = 2.0 per answer; cited items with a verdict: A, B, D (3; X links to none);
supporting the answer: A, D = 2/3; supporting gold: A = 1/3; answers with an uncited gold-supporting item: q1 (C) = 1/2.
"""

from __future__ import annotations

from pathlib import Path

from searchtrace.adapters import normalize_url
from searchtrace.adapters._hosted import HostedSearch, HostedTurn
from searchtrace.adapters._types import SearchHit
from searchtrace.engine import Builder
from searchtrace.store import (
    Citation,
    EventLog,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    NewEvent,
    Verdict,
)
from tests.analytics.analytics_fixture import report_json

URL = {k: f"https://{k.lower()}.example/page" for k in "ABCDX"}
GOLD_OK = {"A": True, "B": False, "C": True, "D": False}
ANSWER_OK = {"A": True, "B": False, "C": False, "D": True}


def hit(rank: int, key: str) -> SearchHit:
    return SearchHit(rank=rank, title=f"{key} page", url=URL[key], domain=f"{key.lower()}.example",
                     snippet=f"snippet {key}", surface=["url", "title", "snippet"], model_saw_more=False)


def build(path: Path) -> None:
    events: list[NewEvent] = []
    for tid, qid, shown, cited in (("t1", "q1", "ABC", "ABX"), ("t2", "q2", "D", "D")):
        b = Builder(tid)
        b.start(qid=qid, provider="perplexity_agent", question=f"question {qid}", gold_answer="gold")
        b.hosted(HostedTurn(layer="perplexity_agent", searches=[
            HostedSearch(query=qid, hits=[hit(i, k) for i, k in enumerate(shown, start=1)])]))
        b.final("an answer", citations=[Citation(url=URL[k], title=k) for k in cited])
        b.finish("answered")
        payloads, _ = b.take()
        events += [NewEvent(stream_id=f"traj:{tid}", run_id="r", payload=p) for p in payloads]
    judged: list[NewEvent] = [NewEvent(stream_id="judge:j", run_id="j", payload=JudgeStarted(
        judge_run_id="j", model="m", prompt_version="judge/1", prompt_sha256="0"))]
    for tid, keys in (("t1", "ABC"), ("t2", "D")):
        for k in keys:
            labels = Verdict(snippet=Labels(supports_gold=GOLD_OK[k], contradicts_gold=False, relevant=True),
                             page=None, supports_final_answer=ANSWER_OK[k], rationale="by hand")
            judged.append(NewEvent(stream_id="judge:j", run_id="j", payload=JudgeVerdict(
                judge_run_id="j", item=JudgeItemRef(trajectory_id=tid, url_normalized=normalize_url(URL[k])),
                surface="snippet", valid=True, labels=labels)))
    with EventLog(path) as log:
        log.append(events)
        log.append(judged)


def test_every_citation_metric_equals_its_count_by_hand(tmp_path: Path) -> None:
    db = tmp_path / "cites.duckdb"
    build(db)
    _, rep = report_json(db, "--judge-run-id", "j")
    p = rep["providers"]["perplexity_agent"]
    assert (p["final_answers"], p["citations"], p["cited_items"], p["cited_items_judged"]) == (2, 4, 3, 3)
    assert p["citations_per_answer"] == 2.0
    assert (p["citation_supports_answer_count"], p["citation_supports_answer"]) == (2, 2 / 3)
    assert (p["citation_supports_gold_count"], p["citation_supports_gold"]) == (1, 1 / 3)
    assert (p["uncited_support_count"], p["uncited_support"]) == (1, 1 / 2)
    for key in ("citation_supports_answer", "citation_supports_gold", "uncited_support"):
        lo, hi = p[f"{key}_ci"]
        assert 0.0 <= lo <= p[key] <= hi <= 1.0
    assert p["denominators"]["citation_supports_gold"] == "cited_items_judged"
    assert p["denominators"]["uncited_support"] == "final_answers"


def test_no_citation_keys_without_citations(tmp_path: Path) -> None:
    from tests.analytics.analytics_fixture import import_fixture

    db = tmp_path / "plain.duckdb"
    import_fixture(db, tmp_path / "in")
    _, rep = report_json(db, "--judge-run-id", "j1")
    assert all("citations_per_answer" not in block for block in rep["providers"].values())
