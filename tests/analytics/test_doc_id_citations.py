"""Our own agent's answer citing doc_ids (docs/how-to/hosted.md): `[d1, d2]` in a final answer becomes citations on
answer.final linked to items, taken out of the answer's text, so the four citation metrics work for a search API's
arm too; the sandbox agent cites when its prompt asks (`agent/1-cite`) and not otherwise.

The hand-checked store: one search-API arm (brave), three answers, by trace import and judgments import.
- q1 shows A, B, C; B's page was read. A's snippet supports gold and the answer; B's snippet neither, its page gold;
  C's snippet gold only. The answer "Paris [d1, d2]" cites A and B.
- q2 shows D, E. D supports gold and the answer, E the answer only. "Rome [d2] [d9]" cites E; d9 names no result,
  so `[d9]` stays in the answer.
- q3 shows F, supporting gold and the answer; "Oslo [d1]" cites F.
By hand: 4 citations / 3 answers; cited items with a verdict: A, B, E, F (4); supporting the answer: A, E, F = 3/4;
supporting gold (snippet, or page): A, B, F = 3/4; answers with an uncited gold-supporting item: q1 (C), q2 (D) = 2/3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchtrace.engine._prompts import get_prompt
from searchtrace.store import AnswerFinal, EventLog
from tests.analytics.analytics_fixture import report_json, verdict
from tests.builders import fetch, model, run_cli, search, traj, write_jsonl
from tests.builders import result as r

URL = {k: f"https://{k.lower()}.example/page" for k in "ABCDEF"}
GOLD = {"A": True, "B": False, "C": True, "D": True, "E": False, "F": True}  # by the snippet
ANSWER = {"A": True, "B": False, "C": False, "D": True, "E": True, "F": True}
PAGE = {"B": True}  # B's page supports gold

TRACES = [
    traj("t1", "brave", "q1", "Paris", "Paris [d1, d2]", [
        model(1, 10, 1), search(1, "s1", [r("d1", 1, URL["A"]), r("d2", 2, URL["B"]), r("d3", 3, URL["C"])]),
        fetch(1, "f1", "d2", URL["B"], "ok", "page B says Paris"), model(2, 10, 1)]),
    traj("t2", "brave", "q2", "Rome", "Rome [d2] [d9]", [
        model(1, 10, 1), search(1, "s1", [r("d1", 1, URL["D"]), r("d2", 2, URL["E"])]), model(2, 10, 1)]),
    traj("t3", "brave", "q3", "Oslo", "Oslo [d1]", [
        model(1, 10, 1), search(1, "s1", [r("d1", 1, URL["F"])]), model(2, 10, 1)]),
]


def _labels(k: str) -> dict[str, Any]:
    return {"snippet": {"supports_gold": GOLD[k], "contradicts_gold": False, "relevant": True},
            "page": {"supports_gold": PAGE[k], "contradicts_gold": False, "relevant": True} if k in PAGE else None,
            "supports_final_answer": ANSWER[k], "rationale": "by hand"}


def test_doc_id_citations_give_every_citation_metric_its_count_by_hand(tmp_path: Path) -> None:
    traces = write_jsonl(tmp_path / "t.jsonl", TRACES)
    judged = write_jsonl(tmp_path / "j.jsonl", [verdict("j", t["trajectory_id"], URL[k], _labels(k)) for t, keys in
                                                zip(TRACES, ("ABC", "DE", "F"), strict=True) for k in keys])
    db = tmp_path / "c.duckdb"
    code, _, err = run_cli("import", "--db", str(db), str(traces), "--judgments", str(judged))
    assert code == 0, err
    with EventLog(db, read_only=True) as log:
        finals = {e.stream_id: e.payload for e in log.read(types=["answer.final"])}
    answers = {k.rsplit(":", 1)[-1]: p for k, p in finals.items() if isinstance(p, AnswerFinal)}
    assert [(a.text, [c.url for c in a.citations or []]) for _, a in sorted(answers.items())] == [
        ("Paris", [URL["A"], URL["B"]]), ("Rome [d9]", [URL["E"]]), ("Oslo", [URL["F"]])]
    assert all(c.item == c.url for a in answers.values() for c in a.citations or [])  # linked to their items
    _, rep = report_json(db, "--judge-run-id", "j")
    b = rep["providers"]["brave"]
    assert (b["final_answers"], b["citations"], b["cited_items"], b["cited_items_judged"]) == (3, 4, 4, 4)
    assert b["citations_per_answer"] == 4 / 3
    assert (b["citation_supports_answer_count"], b["citation_supports_answer"]) == (3, 3 / 4)
    assert (b["citation_supports_gold_count"], b["citation_supports_gold"]) == (3, 3 / 4)
    assert (b["uncited_support_count"], b["uncited_support"]) == (2, 2 / 3)
    assert all(b[f"{k}_ci"] is not None for k in ("citation_supports_answer", "citation_supports_gold",
                                                    "uncited_support"))
    assert b["exact_match"] == 2 / 3  # scored without their citations; "Rome [d9]" keeps its bracket


CONFIG = """run_id = "c"
[agent]
model = "sandbox-agent"
prompt_version = "{version}"
[providers.brave]
[fetch]
cache_dir = ""
[dataset]
path = "sandbox"
[sample]
n = 4
"""


def _record(tmp_path: Path, version: str) -> list[Any]:
    name = version.replace("/", "-")
    (tmp_path / f"{name}.toml").write_text(CONFIG.format(version=version))
    db = tmp_path / f"{name}.duckdb"
    ran = run_cli("record", "--config", str(tmp_path / f"{name}.toml"), "--db", str(db), "--sandbox", "--no-progress")
    assert ran.code == 0, ran.err
    with EventLog(db, read_only=True) as log:
        by: dict[str, list[Any]] = {}
        for e in log.read():
            if e.stream_id.startswith("traj:"):
                by.setdefault(e.stream_id, []).append(e.payload)
    return list(by.values())


def test_the_sandbox_agent_cites_the_doc_ids_of_its_evidence_when_asked(tmp_path: Path) -> None:
    from searchtrace.adapters.sandbox._agent import CITE_PHRASE
    from searchtrace.store import ModelResponded, SearchResult

    assert CITE_PHRASE in get_prompt("agent/1-cite").text.lower() and CITE_PHRASE not in get_prompt("agent/1").text
    plain, cited = _record(tmp_path, "agent/1"), _record(tmp_path, "agent/1-cite")
    assert not any(isinstance(p, AnswerFinal) and p.citations for t in plain for p in t)
    for before, after in zip(plain, cited, strict=True):
        final = next(p for p in after if isinstance(p, AnswerFinal))
        assert final.text == next(p for p in before if isinstance(p, AnswerFinal)).text  # same answer, cited
        reply = [p for p in after if isinstance(p, ModelResponded)][-1].text or ""
        results = {p.doc_id: p for p in after if isinstance(p, SearchResult)}
        named = [x.strip() for x in reply.split("[")[1:] for x in [x.split("]")[0]]]
        assert final.citations and named and [c.item for c in final.citations] == [
            results[d].url_normalized for d in named]
