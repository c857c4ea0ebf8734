"""Cells that ended in `error` are recorded again by the next `record` (new attempt, `supersedes` set), up to
`limits.max_attempts`; final cells (answered, max_iterations, or errored on every attempt) cause no call at all."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.adapters.sandbox import ROOT, create_app, default_world, in_process, question_rows
from searchtrace.analytics import trajectory_stats
from searchtrace.analytics._sources import reading_raw
from searchtrace.engine import RunSummary, endpoint_factory, point_at_sandbox, record_run
from searchtrace.pipeline._recording import questions_of
from searchtrace.store import BadInput, EventLog, RunFinished, TrajectoryFinished, TrajectoryStarted
from tests.builders import check_chain, sandbox_config, trajectories

pytestmark = pytest.mark.anyio


async def record(cfg: Any, db: Path, app: Any) -> RunSummary:
    log = EventLog(db)
    try:
        return await record_run(cfg, log, endpoint_factory(in_process(app).transport), questions=questions_of(cfg))
    finally:
        log.close()


def run_finished(db: Path) -> list[RunFinished]:
    with EventLog(db, read_only=True) as log:
        return [e.payload for e in log.read(types=["run.finished"]) if isinstance(e.payload, RunFinished)]


async def test_errored_cells_are_retried_until_answered_or_out_of_attempts(tmp_path: Path) -> None:
    rows = question_rows(default_world().questions)[:3]
    q_flaky, q_down, q_ok = (r["qid"] for r in rows)
    rows[0]["question"] += " !fault:500x3"  # the chat fails the first 3 attempts of this request: attempt 1 of the cell
    rows[1]["question"] += " !fault:500"  # the chat fails every attempt: every attempt of the cell errors
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    cfg = sandbox_config(tmp_path, n=None, dataset=str(qfile), limits={"max_attempts": 2})
    cfg.providers = {"brave": cfg.providers["brave"]}  # one provider: the flaky request is asked by one cell only
    point_at_sandbox(cfg, ROOT)
    app = create_app()
    counters: Counter[Any] = app.state.counters
    db = tmp_path / "a.duckdb"
    tid = {q: f"t:brave:{q}" for q in (q_flaky, q_down, q_ok)}

    first = await record(cfg, db, app)
    assert (first.recorded, first.retried, first.to_retry, first.errored_final) == (3, 0, 2, 0)
    assert first.reasons.get("error") == 2 and not first.finished and run_finished(db) == []
    assert counters[("chat", tid[q_flaky])] == 3 and counters[("chat", tid[q_down])] == 3  # 1 call + 2 retries each
    seen = Counter(dict(counters))

    second = await record(cfg, db, app)
    assert (second.already, second.recorded, second.retried, second.to_retry, second.errored_final) == (1, 2, 2, 0, 1)
    assert second.finished and second.superseded == 2
    for q in (q_ok, q_flaky, q_down):  # the final cell and both errored attempts got no further call
        assert all(counters[(r, tid[q])] == seen[(r, tid[q])] for r in ("chat", "brave", "jina"))
    assert counters[("chat", tid[q_down] + "#2")] == 3
    assert counters[("chat", tid[q_flaky] + "#2")] >= 1
    with EventLog(db, read_only=True) as log:
        trajs = trajectories(log)
    assert set(trajs) == {*tid.values(), tid[q_flaky] + "#2", tid[q_down] + "#2"}
    for q in (q_flaky, q_down):
        head = trajs[tid[q] + "#2"][0]
        assert isinstance(head, TrajectoryStarted)
        assert (head.attempt, head.supersedes, head.qid, head.provider) == (2, tid[q], q, "brave")
        old = trajs[tid[q]][0]
        assert isinstance(old, TrajectoryStarted) and (old.attempt, old.supersedes) == (1, None)
    end = {t: ps[-1] for t, ps in trajs.items()}
    assert all(isinstance(e, TrajectoryFinished) for e in end.values())
    reasons = {t: e.reason for t, e in end.items() if isinstance(e, TrajectoryFinished)}
    assert reasons[tid[q_flaky]] == reasons[tid[q_down]] == reasons[tid[q_down] + "#2"] == "error"
    assert reasons[tid[q_flaky] + "#2"] in ("answered", "max_iterations")
    assert reasons[tid[q_ok]] in ("answered", "max_iterations")
    (fin,) = run_finished(db)
    assert fin.counts["trajectories"] == 3 and fin.counts["error"] == 1 and fin.counts["superseded"] == 2
    check_chain(db)

    # the metrics see one trajectory per cell: the latest attempt
    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        with reading_raw(cur):
            stats = trajectory_stats(cur, None)
        cur.close()
    assert sorted(s.trajectory_id for s in stats) == sorted([tid[q_ok], tid[q_flaky] + "#2", tid[q_down] + "#2"])

    before = sum(counters.values())
    third = await record(cfg, db, app)  # every cell is final: nothing to do, no call at all
    assert (third.already, third.recorded, third.retried) == (3, 0, 0) and third.finished
    assert sum(counters.values()) == before and len(run_finished(db)) == 1


async def test_max_attempts_one_keeps_the_first_error_final(tmp_path: Path) -> None:
    rows = question_rows(default_world().questions)[:1]
    rows[0]["question"] += " !fault:500"
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(msgspec.json.encode(rows[0]) + b"\n")
    cfg = sandbox_config(tmp_path, n=None, dataset=str(qfile), limits={"max_attempts": 1})
    cfg.providers = {"brave": cfg.providers["brave"]}
    point_at_sandbox(cfg, ROOT)
    app = create_app()
    db = tmp_path / "one.duckdb"
    first = await record(cfg, db, app)
    assert first.finished and first.errored_final == 1 and first.to_retry == 0
    before = sum(app.state.counters.values())
    again = await record(cfg, db, app)
    assert again.recorded == 0 and sum(app.state.counters.values()) == before


def test_max_attempts_is_validated(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"limits\.max_attempts: must be >= 1, got 0"):
        sandbox_config(tmp_path, limits={"max_attempts": 0})
    assert sandbox_config(tmp_path).limits.max_attempts == 3
