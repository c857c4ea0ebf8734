"""docs/how-to/scale.md segments and merge: a run recorded as two shards (the same run id, disjoint cells) and judged and graded in
each segment, merged, reports what the same run recorded in one process reports (every value but latencies), in
either merge order; merging again adds nothing; a segment holding an event id with other bytes stops the merge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from searchtrace import pipeline
from searchtrace.analytics import to_json
from searchtrace.engine import RunConfig
from searchtrace.replay import JudgeOptions
from searchtrace.store import (
    AuditAnswer,
    EventConflict,
    EventLog,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    NewEvent,
    RunFinished,
    Verdict,
    copy_events,
    stable_event_id,
    verify,
)
from tests.builders import run_cli, sandbox_config

SHARDS = 2


def _record_judge_grade(cfg: RunConfig, db: Path, shard: tuple[int, int] | None) -> Any:
    async def go() -> Any:
        summary = await pipeline.record(cfg, db, pipeline.aim(cfg, sandbox=True), progress=False, shard=shard)
        chat = pipeline.judge_chat(model=pipeline.SANDBOX_JUDGE, sandbox=True, rps=10_000.0, concurrency=16,
                                   timeout_s=5.0, max_retries=2)
        await pipeline.judge(db, chat, JudgeOptions(model=pipeline.SANDBOX_JUDGE, concurrency=16))
        return summary

    summary = anyio.run(go)
    pipeline.grade(db)
    return summary


def _values(db: Path) -> Any:
    """The report without what a clock measured (latencies, and the intervals and tests over them)."""
    data = json.loads(to_json(pipeline.report(db, bootstrap=200).data))

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "latency" not in k and "_ms" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(data)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("segments")
    cfg = sandbox_config(tmp, n=6)
    out = {"single": tmp / "single.duckdb"}
    _record_judge_grade(cfg, out["single"], None)
    for i in range(SHARDS):
        out[f"shard{i}"] = tmp / f"shard{i}.duckdb"
        summary = _record_judge_grade(cfg, out[f"shard{i}"], (i, SHARDS))
        assert 0 < summary.recorded < 18  # a shard holds some cells of the 6 × 3, not all
    for name, order in (("merged", ("shard0", "shard1")), ("reversed", ("shard1", "shard0"))):
        out[name] = tmp / f"{name}.duckdb"
        ran = run_cli("merge", *(str(out[s]) for s in order), "--into", str(out[name]))
        assert ran.code == 0, ran.err
        # the coordinator: a record without --shard finds every cell recorded and appends run.finished only
        assert anyio.run(lambda db=out[name]: pipeline.record(cfg, db, pipeline.aim(cfg, sandbox=True),
                                                               progress=False)).recorded == 0
    return out


def test_merged_segments_report_what_one_process_reports(stores: dict[str, Path]) -> None:
    single = _values(stores["single"])
    assert single["providers"], "the report has providers to compare"
    assert _values(stores["merged"]) == single
    assert _values(stores["reversed"]) == single  # merge order (arrival order) does not matter
    with EventLog(stores["merged"], read_only=True) as m, EventLog(stores["single"], read_only=True) as s:
        count = "SELECT type, count(*) FROM events GROUP BY type ORDER BY type"
        assert m.cursor().execute(count).fetchall() == s.cursor().execute(count).fetchall()
    code, out, _ = run_cli("verify", "--db", str(stores["merged"]))
    assert code == 0 and "merged from 2 segments" in out, out


def test_merging_again_adds_nothing(stores: dict[str, Path]) -> None:
    with EventLog(stores["merged"], read_only=True) as log:
        head = (log.head, log.head_hash)
    ran = run_cli("merge", str(stores["shard1"]), str(stores["shard0"]), "--into", str(stores["merged"]))
    assert ran.code == 0, ran.err
    assert "0 events appended from 2 segments" in ran.out
    with EventLog(stores["merged"], read_only=True) as log:
        assert (log.head, log.head_hash) == head


def test_copied_events_form_a_store_that_merges_back_as_a_no_op(stores: dict[str, Path], tmp_path: Path) -> None:
    # what judge --ray sends a shard: chosen events (here one trajectory and the judge run) byte for byte, blobs too
    part = tmp_path / "part.duckdb"
    pick = ("SELECT position FROM events WHERE stream_id = (SELECT min(stream_id) FROM events "
            "WHERE starts_with(stream_id, 'traj:')) OR starts_with(stream_id, 'judge:') ORDER BY position")
    with EventLog(stores["single"], read_only=True) as log, EventLog(part) as out:
        positions = [p for (p,) in log.cursor().execute(pick).fetchall()]
        assert copy_events(log, positions, out) == len(positions) > 0
        assert verify(out.cursor()).ok
        digests = out.cursor().execute("SELECT count(*) FROM blobs").fetchone()
        assert digests is not None and digests[0] > 0
    before = tmp_path / "single-copy.duckdb"
    before.write_bytes(stores["single"].read_bytes())
    assert pipeline.merge([part], before).appended == 0  # the same ids with the same bytes


def test_a_conflicting_segment_stops_the_merge_in_one_line(stores: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    with EventLog(other) as log:  # a writer that finished the same run with other counts
        log.append([NewEvent(stream_id="run:t", run_id="t", payload=RunFinished(counts={"answered": 1}),
                             event_id=stable_event_id("run.finished", "t"))])
        log.append([NewEvent(stream_id="judge:x", run_id="x", payload=JudgeStarted(
            judge_run_id="x", model="m", prompt_version="p", prompt_sha256="0"))])
    with EventLog(stores["merged"], read_only=True) as log:
        head = log.head
    ran = run_cli("merge", str(other), "--into", str(stores["merged"]))
    assert ran.code == 2 and ran.out == ""
    [line] = ran.err.splitlines()
    assert "run.finished" in line and str(other) in line and "store merged into" in line, line
    assert "nothing was merged" in line
    with EventLog(stores["merged"], read_only=True) as log:
        assert log.head == head  # not even the judge run the segment held besides
        assert verify(log.cursor()).ok
        [(stream,)] = log.cursor().execute(
            "SELECT stream_id FROM events WHERE type = 'trajectory.started' ORDER BY position LIMIT 1").fetchall()
    writer = tmp_path / "writer.duckdb"
    with EventLog(writer) as log:  # a second writer of a trajectory the target holds
        log.append([NewEvent(stream_id=stream, run_id="t", payload=RunFinished(counts={}))])
    ran = run_cli("merge", str(writer), "--into", str(stores["merged"]))
    assert ran.code == 2 and len(ran.err.splitlines()) == 1
    assert f"trajectory stream {stream!r}" in ran.err and "a trajectory has one writer" in ran.err


def _later_facts(db: Path, judge_run_id: str, trajectory_id: str, match: bool) -> None:
    """A segment holding a judge run with one valid verdict and a human audit of one trajectory."""
    labels = Labels(supports_gold=True, contradicts_gold=False, relevant=True)
    with EventLog(db) as log:
        log.append([
            NewEvent(stream_id=f"judge:{judge_run_id}", run_id=judge_run_id, payload=JudgeStarted(
                judge_run_id=judge_run_id, model="m", prompt_version="p", prompt_sha256="0")),
            NewEvent(stream_id=f"judge:{judge_run_id}", run_id=judge_run_id, payload=JudgeVerdict(
                judge_run_id=judge_run_id, item=JudgeItemRef(trajectory_id=trajectory_id, url_normalized="https://x"),
                surface="snippet", valid=True,
                labels=Verdict(snippet=labels, page=None, supports_final_answer=False, rationale="r"))),
            NewEvent(stream_id="audit:answers", run_id="audit", payload=AuditAnswer(
                trajectory_id=trajectory_id, provider=None, qid=None, semantic_match=match, source="audit.tsv")),
        ])


def test_order_is_by_recorded_time_not_by_merge_order(stores: dict[str, Path], tmp_path: Path) -> None:
    with EventLog(stores["shard0"], read_only=True) as log:
        [(tid,)] = log.cursor().execute(
            "SELECT json_extract_string(payload, '$.trajectory_id') FROM events "
            "WHERE type = 'trajectory.started' ORDER BY position LIMIT 1").fetchall()
    _later_facts(tmp_path / "early.duckdb", "j-early", tid, False)
    _later_facts(tmp_path / "late.duckdb", "j-late", tid, True)
    into = tmp_path / "into.duckdb"  # the later segment first: by position it would come before the earlier one
    ran = run_cli("merge", str(tmp_path / "late.duckdb"), str(tmp_path / "early.duckdb"), str(stores["shard0"]),
                  "--into", str(into))
    assert ran.code == 0, ran.err
    # the default judge run is the first to give a valid verdict by recorded time (docs/how-to/judge-runs.md): the
    # shard's own judge run, recorded before both segments though merged after them (by position: j-late)
    with EventLog(stores["shard0"], read_only=True) as log:
        [(first,)] = log.cursor().execute("SELECT json_extract_string(payload, '$.judge_run_id') FROM events "
                                          "WHERE type = 'judge.started' ORDER BY position LIMIT 1").fetchall()
    assert pipeline.report(into, bootstrap=0).data.judge_run_id == first != "j-late"
    code, out, err = run_cli("sql", f"SELECT semantic_match FROM v_trajectories WHERE trajectory_id = '{tid}'",
                             "--db", str(into), "--json")
    assert code == 0, err
    assert json.loads(out) == [{"semantic_match": True}]  # the later human audit decides


def test_a_known_event_id_with_other_bytes_is_refused_by_append(tmp_path: Path) -> None:
    eid = stable_event_id("run.finished", "r")

    def finished(n: int) -> NewEvent:
        return NewEvent(stream_id="run:r", run_id="r", payload=RunFinished(counts={"n": n}), event_id=eid)

    with EventLog(tmp_path / "a.duckdb") as log:
        assert log.append([finished(1)]) == [1]
        assert log.append([finished(1)]) == [0]  # the same bytes: a no-op, as before
        with pytest.raises(EventConflict, match=f"event {eid} .run.finished in stream 'run:r'. is already stored "
                                                "with other payload bytes; nothing of this batch was written"):
            log.append([NewEvent(stream_id="run:r", run_id="r", payload=RunFinished(counts={"m": 0})), finished(2)])
        with pytest.raises(EventConflict, match="is already stored as run.finished in stream 'run:r'"):
            log.append([NewEvent(stream_id="run:q", run_id="r", payload=RunFinished(counts={"n": 1}), event_id=eid)])
        # another run's event under the id: refused as the central log refuses it (one rule, store._append.Identity)
        with pytest.raises(EventConflict, match="is already stored in run 'r'"):
            log.append([NewEvent(stream_id="run:r", run_id="r2", payload=RunFinished(counts={"n": 1}), event_id=eid)])
        twice = stable_event_id("twice")
        with pytest.raises(EventConflict, match="was appended earlier in this transaction with other payload bytes"):
            log.append([NewEvent(stream_id="run:q", run_id="r", payload=RunFinished(counts={"n": n}), event_id=twice)
                        for n in (1, 2)])

        async def through_the_writer() -> None:  # the group-commit path compares as well
            from searchtrace.store import open_writer

            async with open_writer(log) as writer:
                assert await writer.append([finished(1)]) == [0]
                with pytest.raises(EventConflict):
                    await writer.append([finished(3)])

        anyio.run(through_the_writer)
        assert log.head == 1 and verify(log.cursor()).ok
