"""Every docs/concepts/metrics.md metric on the hand-computed fixture (numbers worked out in analytics_fixture.py's comments)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.analytics.analytics_fixture import JUDGMENTS, TRACES, import_fixture, report_json, write_fixture
from tests.builders import run_cli, write_jsonl


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.duckdb"
    import_fixture(path, tmp_path / "in")
    return path


def test_alpha_j1_every_metric(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j1")
    assert rep["schema"] == "searchtrace.report/1" and rep["judge_run_id"] == "j1"
    a = rep["providers"]["alpha"]
    expected: dict[str, Any] = {
        "trajectories": 2, "audited": 2, "correct": 1, "accuracy": 0.5,
        "exact_match": 0.5, "token_f1": 0.5,  # "paris." matches "Paris"; the missing final answer scores 0
        "searches_per_trajectory": 1.5, "fetches_per_trajectory": 1.5,  # 3 fetch calls incl. a repeat, 2 trajectories
        "input_tokens_per_trajectory": 175.0, "output_tokens_per_trajectory": 17.5,
        "items": 6,  # the utm/case variants of example.com/a count once; the unjudged y.org counts
        "valid_items": 4, "invalid_items": 1, "snippet_only_items": 3, "page_visible_items": 1,
        "partition": {"SMART": 1, "MISSED": 1, "BLIND": 1, "NO-OP": 1, "UNOBSERVED": 0},
        "discovered_support": 1,
        "surface_support_rate": 0.5, "surface_answerable_queries": 1,
        "gold_rank1_share": 2 / 3,  # example.com/a twice at rank 1, fourth.io/d once at rank 2
        "contradiction_gold_ratio": 1.0,
    }
    for key, value in expected.items():
        assert a[key] == value, key
    assert a["reasoning_tokens_per_trajectory"] == 2.5
    assert a["page_tokens_per_trajectory"] == 40.0  # two ok fetches of 40 tokens over 2 trajectories
    assert a["query_outcome"]["answerable"] == {"correct": 1, "incorrect": 0, "unaudited": 0}


def test_beta_unaudited_and_f1(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j1")
    b = rep["providers"]["beta"]
    assert (b["trajectories"], b["audited"], b["correct"], b["accuracy"]) == (1, 0, 0, None)
    assert b["exact_match"] == 0.0 and b["token_f1"] == 0.5  # [city, is, paris] vs [paris]
    assert b["partition"] == {"SMART": 0, "MISSED": 1, "BLIND": 0, "NO-OP": 1, "UNOBSERVED": 0}
    assert (b["gold_rank1_share"], b["contradiction_gold_ratio"], b["surface_support_rate"]) == (1.0, 0.0, 0.5)


def test_provider_without_surface_support_has_null_ratios(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j1")
    g = rep["providers"]["gamma"]
    assert g["items"] == 2 and g["valid_items"] == 1 and g["surface_answerable_queries"] == 0
    assert g["surface_support_rate"] == 0.0
    assert g["gold_rank1_share"] is None and g["contradiction_gold_ratio"] is None
    assert g["exact_match"] == 0.5  # "Three cats!" == "3 cats"; "London" != "Paris"
    assert g["accuracy"] == 0.5


def test_complementarity_partial_provider(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j1")
    c = rep["complementarity"]
    assert sorted(c) == ["alpha|beta", "alpha|gamma", "beta|gamma"]
    assert c["alpha|beta"] == {"a_only": 0, "b_only": 0, "both": 1, "neither": 0, "url_jaccard": 0.2}  # only q1 shared
    assert c["alpha|gamma"] == {"a_only": 1, "b_only": 0, "both": 0, "neither": 1, "url_jaccard": 0.1}
    assert c["beta|gamma"] == {"a_only": 1, "b_only": 0, "both": 0, "neither": 0, "url_jaccard": 0.0}


def test_a_named_judge_run(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", "j2")
    assert rep["judge_run_id"] == "j2"
    a, b = rep["providers"]["alpha"], rep["providers"]["beta"]
    assert a["items"] == 6 and a["valid_items"] == 1 and a["invalid_items"] == 0
    assert a["gold_rank1_share"] == 1.0 and a["contradiction_gold_ratio"] == 0.0
    assert b["items"] == 2 and b["valid_items"] == 0 and b["surface_support_rate"] is None
    assert rep["complementarity"]["alpha|beta"]["a_only"] == 1


def test_unknown_judge_run_is_exit_2(db: Path) -> None:
    code, _, err = run_cli("report", "--db", str(db), "--judge-run-id", "nope", "--json")
    assert code == 2 and "nope" in err and "j1" in err


def test_report_json_twice_byte_identical_and_sorted(db: Path) -> None:
    first, rep = report_json(db, "--judge-run-id", "j1")
    second, _ = report_json(db, "--judge-run-id", "j1")
    assert first == second
    assert first.endswith("}\n") and first.startswith('{\n "complementarity"')  # indent 1, keys sorted


def test_same_numbers_from_several_files(tmp_path: Path, db: Path) -> None:
    one, _ = report_json(db, "--judge-run-id", "j1")
    t1 = write_jsonl(tmp_path / "t1.jsonl", TRACES[:2])
    t2 = write_jsonl(tmp_path / "t2.jsonl", TRACES[2:])
    j1 = write_jsonl(tmp_path / "j1.jsonl", JUDGMENTS[4:])
    j2 = write_jsonl(tmp_path / "j2.jsonl", JUDGMENTS[:4])
    _, _, audit = write_fixture(tmp_path / "again")
    other = tmp_path / "several.duckdb"
    # judgments for t-b1.. in a later call than their trajectories; files in another order
    assert run_cli("import", "--db", str(other), str(t2))[0] == 0
    assert run_cli("import", "--db", str(other), str(t1), "--judgments", str(j2))[0] == 0
    assert run_cli("import", "--db", str(other), "--judgments", str(j1), "--audit", str(audit))[0] == 0
    several, _ = report_json(other, "--judge-run-id", "j1")
    assert several == one


def test_terminal_table(db: Path) -> None:
    code, out, err = run_cli("report", "--db", str(db), "--judge-run-id", "j1")
    assert code == 0, err
    assert "alpha" in out and "gamma" in out and "SMART" in out and "alpha|gamma" in out


def test_report_on_missing_db_is_exit_2(tmp_path: Path) -> None:
    code, _, err = run_cli("report", "--db", str(tmp_path / "none.duckdb"), "--json")
    assert code == 2 and "none.duckdb" in err
    assert not (tmp_path / "none.duckdb").exists()


def test_report_on_an_empty_store(tmp_path: Path) -> None:
    from searchtrace.store import EventLog

    db = tmp_path / "empty.duckdb"
    EventLog(db).close()
    _, rep = report_json(db)
    assert rep == {"complementarity": {}, "judge_batches": None, "judge_run_chosen_by": None, "judge_run_id": None, "providers": {},
                   "schema": "searchtrace.report/1"}
    code, out, _ = run_cli("report", "--db", str(db))
    assert code == 0 and "no trajectories" in out


def test_no_judge_run_yet(tmp_path: Path) -> None:
    db = tmp_path / "nj.duckdb"
    t = write_jsonl(tmp_path / "t.jsonl", TRACES)
    assert run_cli("import", "--db", str(db), str(t))[0] == 0
    _, rep = report_json(db)
    a = rep["providers"]["alpha"]
    assert rep["judge_run_id"] is None and a["items"] == 6 and a["valid_items"] == 0 and a["invalid_items"] == 0
    assert a["surface_support_rate"] is None and a["partition"] == {"SMART": 0, "MISSED": 0, "BLIND": 0, "NO-OP": 0, "UNOBSERVED": 0}
    assert a["exact_match"] == 0.5 and a["audited"] == 0


def test_audit_precedence_gold_fallback_and_first_verdict(tmp_path: Path) -> None:
    """An imported audit beats an LLM grader in either order; gold falls back to dataset.question; first verdict wins."""
    from searchtrace.store import (
        AnswerFinal,
        AuditAnswer,
        DatasetQuestion,
        EventLog,
        JudgeItemRef,
        JudgeStarted,
        JudgeVerdict,
        Labels,
        NewEvent,
        Payload,
        SearchCalled,
        SearchResult,
        TrajectoryStarted,
        Verdict,
    )

    def traj(tid: str, qid: str) -> list[Payload]:
        return [
            TrajectoryStarted(trajectory_id=tid, qid=qid, provider="p"),  # no gold here: from dataset.question
            SearchCalled(call_id="s1", iteration=1, query="q"),
            SearchResult(call_id="s1", doc_id="d1", rank=1, title="t", url="https://a.org/", url_normalized="https://a.org/",
                         domain="a.org", snippet="s"),
            AnswerFinal(iteration=1, text="Paris"),
        ]

    def verdict(tid: str, s: bool) -> JudgeVerdict:
        lab = Labels(supports_gold=s, contradicts_gold=False, relevant=True)
        return JudgeVerdict(judge_run_id="jr", item=JudgeItemRef(trajectory_id=tid, url_normalized="https://a.org/"),
                            surface="snippet", valid=True,
                            labels=Verdict(snippet=lab, page=None, supports_final_answer=True, rationale="r"))

    def audit(tid: str | None, qid: str, match: bool, source: str) -> AuditAnswer:
        return AuditAnswer(trajectory_id=tid, provider=None if tid else "p", qid=None if tid else qid,
                           semantic_match=match, source=source)

    with EventLog(tmp_path / "a.duckdb") as log:
        log.append([NewEvent(stream_id="ds", run_id="r", payload=DatasetQuestion(qid=q, question="Q", gold_answer="paris"))
                    for q in ("q1", "q2", "q3")])
        for tid, qid in (("t1", "q1"), ("t2", "q2"), ("t3", "q3")):
            log.append([NewEvent(stream_id=f"traj:{tid}", run_id="r", payload=p) for p in traj(tid, qid)])
        log.append([NewEvent(stream_id="a", run_id="r", payload=p) for p in (
            audit(None, "q1", False, "imported"),
            audit("t1", "q1", True, "llm:grader"),  # later, but an LLM grader: the imported audit wins
            audit("t2", "q2", True, "llm:grader"),
            audit(None, "q2", False, "imported"),  # imported after the grader: wins too
            audit("t3", "q3", True, "llm:grader"),  # only a grader: it counts
        )])
        log.append([NewEvent(stream_id="judge:jr", run_id="r", payload=p) for p in (
            JudgeStarted(judge_run_id="jr", model="m", prompt_version="v", prompt_sha256="x"),
            verdict("t1", True), verdict("t1", False),  # a second verdict for the same item is ignored
            verdict("t2", False),
        )])
    _, rep = report_json(tmp_path / "a.duckdb")
    p = rep["providers"]["p"]
    assert (p["audited"], p["correct"]) == (3, 1)
    assert p["exact_match"] == 1.0  # "Paris" against the dataset's "paris"
    assert p["valid_items"] == 2 and p["partition"]["MISSED"] == 1 and p["surface_answerable_queries"] == 1
