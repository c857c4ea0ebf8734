"""docs/how-to/scale.md fan-out on Ray, on a local cluster of two raylets: a sharded sandbox record merged into the target
reports what one process reports (every value but latencies), its segments fetched from node-local directories
through Ray; a shard actor killed mid-run is resumed by the rerun, which records only the cells its segment misses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from searchtrace import pipeline
from searchtrace.replay import JudgeOptions
from searchtrace.store import EventLog
from tests.builders import sandbox_config
from tests.ray.conftest import QUOTA, kill_when_under_way
from tests.store.test_segments_merge import _record_judge_grade, _values


def _judge_and_grade(db: Path) -> None:
    chat = pipeline.judge_chat(model=pipeline.SANDBOX_JUDGE, sandbox=True, rps=10_000.0, concurrency=16,
                               timeout_s=5.0, max_retries=2)
    anyio.run(lambda: pipeline.judge(db, chat, JudgeOptions(model=pipeline.SANDBOX_JUDGE, concurrency=16)))
    pipeline.grade(db)


def _count(db: Path, sql: str) -> int:
    with EventLog(db, read_only=True) as log:
        row = log.cursor().execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def test_shards_on_two_raylets_merge_into_the_report_of_one_process(ray_cluster: str, tmp_path: Path) -> None:
    # the search providers name the quota domain both machines hold: the shard actors ask for its resource
    cfg = sandbox_config(tmp_path, n=6, providers={k: {"quota": QUOTA} for k in ("brave", "tavily", "firecrawl")})
    single = tmp_path / "single.duckdb"
    _record_judge_grade(cfg, single, None)
    target = tmp_path / "target.duckdb"
    # each actor writes in a directory of its own node; the driver merges the copies it fetched through Ray
    node_local = tmp_path / "node-local"
    done = pipeline.record_on_ray(cfg, target, shards=2, address=ray_cluster, sandbox=True, segment_dir=str(node_local))
    assert done.finished and done.recorded == done.trajectories == 18 and done.already == 0
    assert len({d.node for d in done.done}) == 2  # one shard on each raylet
    assert [d.segment for d in done.done] == [str(pipeline.segment_path(target, "t", i, 2)) for i in range(2)]
    assert all(Path(d.local).parent == node_local and d.fetched_bytes == Path(d.local).stat().st_size
               for d in done.done)
    _judge_and_grade(target)
    assert _values(target) == _values(single)
    assert _count(target, "SELECT count(*) FROM events WHERE type = 'run.finished'") == 1
    again = pipeline.record_on_ray(cfg, target, shards=2, address=ray_cluster, sandbox=True)
    assert again.recorded == 0 and again.done == [] and again.merged is not None and again.merged.appended == 0


def test_a_shard_killed_mid_run_is_resumed_with_only_its_missing_cells(ray_cluster: str, tmp_path: Path) -> None:

    # one trajectory at a time at 20 model calls/s: the killed shard has recorded some of its 9 cells (3), not all
    cfg = sandbox_config(tmp_path, n=6, run_id="kill", limits={"max_trajectories": 1}, agent={"rps": 20.0})
    target = tmp_path / "target.duckdb"
    killed: dict[str, Any] = {}


    first = pipeline.record_on_ray(cfg, target, shards=2, address=ray_cluster, sandbox=True,
                                   on_started=kill_when_under_way(killed))
    assert "at" in killed and not first.finished
    [died] = [d for d in first.done if d.shard == 1]
    assert died.summary is None and "died" in died.error
    segment = pipeline.segment_path(target, "kill", 1, 2)
    kept = _count(segment, "SELECT count(*) FROM events WHERE type = 'trajectory.finished'")
    plan = first.trajectories - _count(target, "SELECT count(*) FROM events WHERE type = 'trajectory.finished'")
    assert plan == first.to_record
    rerun = pipeline.record_on_ray(cfg, target, shards=2, address=ray_cluster, sandbox=True)
    [resumed] = rerun.done
    assert resumed.shard == 1 and resumed.summary is not None
    shard_cells = resumed.summary.trajectories
    assert 0 < kept < shard_cells  # killed mid-run
    assert resumed.summary.already == kept and rerun.recorded == shard_cells - kept  # only the missing cells
    assert rerun.finished
    print(f"shard 1/2: {shard_cells} cells, {kept} in its segment when killed, {rerun.recorded} recorded by the rerun")
    # no cell was recorded twice: one attempt per cell, none superseded
    assert _count(target, "SELECT count(*) FROM events WHERE type = 'trajectory.started'") == first.trajectories
    assert _count(target, "SELECT count(DISTINCT stream_id) FROM events WHERE type = 'trajectory.finished'") \
        == first.trajectories

