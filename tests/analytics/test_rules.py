"""One definition per domain rule: the Python fold (analytics.Cells, used by grade and export) and the SQL
(TRAJECTORIES_CTE + ANSWERS_CTE, used by metrics, views and judge items) agree on a store with a superseded
attempt, two answers in one trajectory and a gold answer restated by a later dataset.question.

The latest attempt of a cell is engine.Attempts in Python and analytics.not_superseded in SQL; record (resume),
grade, export, the analytics lookups and the chaos benchmark all read it, and agree on a store with superseded
attempts in two epochs."""

from __future__ import annotations

import json
from pathlib import Path

import searchtrace.analytics._lookups as lookups
from searchtrace.analytics import ANSWERS_CTE, CELL_EVENT_TYPES, TRAJECTORIES_CTE, Cells, sources
from searchtrace.benchmarks._chaos import cells as chaos_cells
from searchtrace.engine import Builder
from searchtrace.engine._record import _run_state
from searchtrace.replay import grade_answers
from searchtrace.replay.interchange import export_all
from searchtrace.store import AnswerFinal, DatasetQuestion, EventLog, NewEvent, TrajectoryReason, Usage
from tests.analytics.attempts_fixture import NEW, O1, OLD, P2, RUN, build

Row = tuple[str, str, str, str | None]  # trajectory_id, question, gold, final answer


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "rules.duckdb"
    build(db)
    with EventLog(db) as log:  # a second answer (the last one counts) and a restated gold answer (the latest counts)
        log.append([NewEvent(stream_id=f"traj:{P2}", run_id="r", payload=AnswerFinal(iteration=2, text="Roma"))])
        log.append([NewEvent(stream_id="run:r", run_id="r",
                             payload=DatasetQuestion(qid="q1", question="Where, exactly?", gold_answer="Paris, France"))])
    return db


def _sql(log: EventLog, *, writable: bool) -> set[Row]:
    cur = log.cursor()
    try:
        with sources.reading(cur, writable=writable):
            rows = cur.execute(
                f"WITH {TRAJECTORIES_CTE}, {ANSWERS_CTE} "
                "SELECT tr.trajectory_id, tr.question, tr.gold_answer, fa.final_answer FROM tr LEFT JOIN fa USING (stream_id)"
            ).fetchall()
    finally:
        cur.close()
    return {(str(t), str(q), str(g), f) for t, q, g, f in rows}


def _python(log: EventLog) -> set[Row]:
    cells = Cells()
    for ev in log.read(types=list(CELL_EVENT_TYPES)):
        cells.add(ev.stream_id, ev.payload)
    return {(t.trajectory_id, cells.question(t), cells.gold(t), cells.final(s)) for s, t in cells.current()}


def test_python_and_sql_agree_on_current_trajectories_and_answers(tmp_path: Path) -> None:
    with EventLog(_store(tmp_path)) as log:
        python = _python(log)
        assert python == _sql(log, writable=False) == _sql(log, writable=True)
    assert python == {
        (NEW, "Where, exactly?", "Paris, France", "Paris"),
        (P2, "Which?", "Rome", "Roma"),
        (O1, "Where, exactly?", "Paris, France", "Lyon"),
    }
    assert OLD not in {r[0] for r in python}


def test_grade_and_export_use_the_same_rule(tmp_path: Path) -> None:
    db = _store(tmp_path)
    with EventLog(db) as log:
        grades = {g.trajectory_id: (g.final_answer, g.gold_answer) for g in grade_answers(log)}
        counts = export_all(log, tmp_path / "out")
        sql = _sql(log, writable=False)
    assert grades == {t: (f, g) for t, _, g, f in sql}
    assert counts["traces.jsonl"] == 3
    lines = (tmp_path / "out" / "traces.jsonl").read_text().splitlines()
    assert any(f'"trajectory_id":"{P2}"' in line and '"final_answer":"Roma"' in line for line in lines)


# Epoch 2 of the same run: cell (p, q1) errored twice and answered at attempt 3; cell (o, q1) answered at once;
# cell (p, q2) errored at attempt 1 and has no later attempt (so it stays the latest one of its cell).
E2 = [("r:p:q1~2", "p", "q1", 1, None, "error"), ("r:o:q1~2", "o", "q1", 1, None, "answered"),
      ("r:p:q1~2#2", "p", "q1", 2, "r:p:q1~2", "error"), ("r:p:q2~2", "p", "q2", 1, None, "error"),
      ("r:p:q1~2#3", "p", "q1", 3, "r:p:q1~2#2", "answered")]


def _epochs_store(tmp_path: Path) -> Path:
    db = tmp_path / "epochs.duckdb"
    build(db)
    with EventLog(db) as log:
        for tid, provider, qid, attempt, supersedes, reason in E2:
            b = Builder(tid)
            b.start(qid=qid, provider=provider, attempt=attempt, supersedes=supersedes, epoch=2)
            b.model(text="FINAL ANSWER: Paris", usage=Usage(input_tokens=10, output_tokens=1), latency_ms=1.0,
                    finish_reason="stop", raw=None)
            finish: TrajectoryReason = "answered" if reason == "answered" else "error"
            if finish == "answered":
                b.final("Paris")
            b.finish(finish)
            payloads, _ = b.take()
            log.append([NewEvent(stream_id=f"traj:{tid}", run_id=RUN, payload=p) for p in payloads])
    return db


def test_every_reader_takes_the_same_latest_attempt_across_epochs(tmp_path: Path) -> None:
    db = _epochs_store(tmp_path)
    latest = {NEW, P2, O1, "r:o:q1~2", "r:p:q2~2", "r:p:q1~2#3"}
    with EventLog(db) as log:
        python = {r[0] for r in _python(log)}
        sql = {r[0] for r in _sql(log, writable=False)}
        assert python == sql == {r[0] for r in _sql(log, writable=True)} == latest
        state = _run_state(log, RUN)  # record's resume: the latest attempt of each (provider, qid, epoch) cell
        assert {a.trajectory_id for a in state.latest.values()} == latest
        assert state.latest[("p", "q1", 2)].attempt == 3 and state.latest[("p", "q2", 2)].reason == "error"
        assert state.superseded == 3
        assert set(lookups.providers(log)) == latest
        grades = {g.trajectory_id for g in grade_answers(log)}
        export_all(log, tmp_path / "out")
    assert grades == latest
    exported = {json.loads(line)["trajectory_id"] for line in (tmp_path / "out" / "traces.jsonl").read_text().splitlines()}
    assert exported == latest
    finished, _, superseded = chaos_cells(db)
    assert superseded == 3 and finished[("q1", "p")] == 2 and finished[("q2", "p")] == 2
