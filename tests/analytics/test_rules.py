"""One definition per domain rule: the Python fold (analytics.Cells, used by grade and export) and the SQL
(TRAJECTORIES_CTE + ANSWERS_CTE, used by metrics, views and judge items) agree on a store with a superseded
attempt, two answers in one trajectory and a gold answer restated by a later dataset.question."""

from __future__ import annotations

from pathlib import Path

from searchtrace.analytics import ANSWERS_CTE, CELL_EVENT_TYPES, TRAJECTORIES_CTE, Cells, sources
from searchtrace.replay import grade_answers
from searchtrace.replay.interchange import export_all
from searchtrace.store import AnswerFinal, DatasetQuestion, EventLog, NewEvent
from tests.analytics.attempts_fixture import NEW, O1, OLD, P2, build

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
