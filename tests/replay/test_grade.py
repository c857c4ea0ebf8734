"""The deterministic grader proposes semantic_match; an imported audit always wins in the report."""

from __future__ import annotations

import json
from pathlib import Path

from searchtrace.analytics import build_report
from searchtrace.replay import SOURCE, grade_answers
from searchtrace.replay._grade import proposes_match
from searchtrace.replay.interchange import import_files
from searchtrace.store import EventLog


def _trace(tid: str, qid: str, final: str | None, gold: str) -> dict[str, object]:
    return {
        "trajectory_id": tid, "provider": "p", "qid": qid, "question": f"q {qid}?", "gold_answer": gold,
        "final_answer": final, "stop_reason": "answered",
        "steps": [{"kind": "search", "iteration": 1, "call_id": "s1", "query": "x", "latency_ms": 1,
                   "results": [{"doc_id": "d1", "rank": 1, "title": "t", "url": f"https://e.org/{qid}",
                                "domain": "e.org", "snippet": "s", "metadata": {}}]}],
    }


def test_proposes_match_rules() -> None:
    assert proposes_match("The answer is Forty-two.", "42") is False  # hyphenated words stay one token
    assert proposes_match("It is forty two", "42") is False
    assert proposes_match("U.S.A.", "usa") is True
    assert proposes_match("in the year 1990, Paris", "Paris") is True
    assert proposes_match(None, "Paris") is False
    assert proposes_match("Paris", "") is False


def test_grades_then_imported_audit_wins(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        "\n".join(json.dumps(t) for t in (_trace("t1", "q1", "Paris", "Paris"), _trace("t2", "q2", "Lyon", "Nice")))
        + "\n"
    )
    db = tmp_path / "g.duckdb"
    with EventLog(db) as log:
        import_files(log, [traces], [], [])
        grades = {g.trajectory_id: g.semantic_match for g in grade_answers(log)}
        assert grades == {"t1": True, "t2": False}
        head = log.head
        grade_answers(log)
        assert log.head == head  # idempotent
        report = build_report(log.cursor(), judge_run_id=None).report
        assert report.providers["p"].correct == 1
        assert report.providers["p"].audited == 2
        audit = tmp_path / "a.tsv"
        audit.write_text("provider\tqid\tsemantic_match\np\tq2\ttrue\np\tq1\tfalse\n")
        import_files(log, [], [], [audit])
        report = build_report(log.cursor(), judge_run_id=None).report
        assert report.providers["p"].correct == 1  # q2 now, by the imported audit
        rows = log.cursor().execute(
            "SELECT count(*) FROM events WHERE type = 'audit.answer' AND payload->>'source' = ?", [SOURCE]
        ).fetchone()
        assert rows == (2,)


def test_export_keeps_the_imported_audit_over_a_later_proposal(tmp_path: Path) -> None:
    from searchtrace.replay.interchange import export_all

    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps(_trace("t1", "q1", "Paris", "Paris")) + "\n")
    audit = tmp_path / "a.tsv"
    audit.write_text("provider\tqid\tsemantic_match\np\tq1\tfalse\n")
    with EventLog(tmp_path / "g.duckdb") as log:
        import_files(log, [traces], [], [audit])
        assert [g.semantic_match for g in grade_answers(log)] == [True]  # a later proposal that disagrees
        assert build_report(log.cursor(), judge_run_id=None).report.providers["p"].correct == 0
        export_all(log, tmp_path / "out")
    assert (tmp_path / "out" / "audit.tsv").read_text().splitlines()[1:] == ["p\tq1\t1\tfalse"]
