"""docs/how-to/scale.md `judge --ray` on the session's two raylets: the shards' verdicts equal one process's judge of the same
run (every value but the clock's), fetched through Ray from segments in node-local directories; merging again adds
nothing; a judge shard killed mid-run is resumed by a rerun that judges only the items the target misses."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio

from searchtrace import pipeline
from searchtrace.replay import JudgeOptions
from searchtrace.store import EventLog
from tests.builders import sandbox_config
from tests.ray.conftest import kill_when_under_way

CLOCK = ("latency_ms", "provider_ms", "queue_ms")  # what a clock measured: not compared


def _recorded(tmp: Path, name: str) -> Path:
    db = tmp / f"{name}.duckdb"
    cfg = sandbox_config(tmp, n=4, run_id=name)
    anyio.run(lambda: pipeline.record(cfg, db, pipeline.aim(cfg, sandbox=True), progress=False))
    return db


def _verdicts(db: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every verdict of the store by item, without what a clock measured."""
    import json

    with EventLog(db, read_only=True) as log:
        rows = log.cursor().execute("SELECT CAST(payload AS VARCHAR) FROM events WHERE type = 'judge.verdict'").fetchall()
    out = {}
    for (text,) in rows:
        v = {k: x for k, x in json.loads(text).items() if k not in CLOCK}
        out[(v["item"]["trajectory_id"], v["item"]["url_normalized"])] = v
    return out


def test_judge_shards_on_two_raylets_give_one_process_verdicts_fetched_from_node_local_dirs(
        ray_cluster: str, tmp_path: Path) -> None:
    source = _recorded(tmp_path, "jr")
    single, target = tmp_path / "single.duckdb", tmp_path / "target.duckdb"
    shutil.copy(source, single)
    shutil.copy(source, target)
    chat = pipeline.judge_chat(model=pipeline.SANDBOX_JUDGE, sandbox=True, rps=0.0, concurrency=8, timeout_s=5.0,
                               max_retries=2)
    alone = anyio.run(lambda: pipeline.judge(single, chat, JudgeOptions(model=pipeline.SANDBOX_JUDGE, concurrency=8)))
    plan = pipeline.plan_judge(target, sandbox=True, concurrency=8)
    node_local = tmp_path / "node-local"  # the actors' directory: the driver only ever reads its own copies
    done = pipeline.judge_on_ray(plan, target, shards=2, address=ray_cluster, segment_dir=str(node_local))
    assert done.items == alone.items > 0 and done.already == 0 and done.judged == done.items and done.pending == 0
    assert len({d.node for d in done.done}) == 2  # one shard on each raylet
    for d in done.done:
        assert d.error == "" and Path(d.local).parent == node_local and d.fetched_bytes == Path(d.local).stat().st_size
        assert d.segment == str(pipeline.judge_segment_path(target, plan.judge_run_id, d.shard, 2))
    assert _verdicts(target) == _verdicts(single)
    with EventLog(target, read_only=True) as log:
        assert log.cursor().execute("SELECT count(*) FROM events WHERE type = 'judge.started'").fetchone() == (1,)
    again = pipeline.judge_on_ray(plan, target, shards=2, address=ray_cluster, segment_dir=str(node_local))
    assert again.judged == 0 and again.done == [] and again.merged is None  # no shard started, none merged


def test_a_judge_shard_killed_mid_run_is_resumed_with_only_the_items_the_target_misses(
        ray_cluster: str, tmp_path: Path) -> None:

    target = _recorded(tmp_path, "jk")
    # one call at a time at 40/s per shard: the killed shard has judged some of its items, not all
    plan = pipeline.plan_judge(target, sandbox=True, rps=40.0, concurrency=1)
    killed: dict[str, Any] = {}


    first = pipeline.judge_on_ray(plan, target, shards=2, address=ray_cluster, on_started=kill_when_under_way(killed))
    assert "at" in killed and first.pending > 0
    [died] = [d for d in first.done if d.shard == 1]
    assert died.judged is None and "died" in died.error
    in_target = len(_verdicts(target))
    assert in_target == first.items - first.pending  # shard 0's items and what shard 1 committed before the kill
    rerun = pipeline.judge_on_ray(plan, target, shards=2, address=ray_cluster)
    [resumed] = rerun.done
    assert resumed.shard == 1 and resumed.judged is not None and rerun.pending == 0
    shard_items = resumed.judged.items
    kept = resumed.judged.already  # shard 1's verdicts that reached the target before the kill
    assert 0 < kept < shard_items  # killed mid-run
    assert rerun.already == in_target and rerun.judged == first.pending == shard_items - kept  # only the missing
    print(f"judge shard 1/2: {shard_items} items, {kept} in the target after the kill, {rerun.judged} judged by the rerun")
    assert len(_verdicts(target)) == rerun.items


def test_judge_on_ray_refusals_are_one_line(tmp_path: Path) -> None:
    """The options that do not go together, and a --segment-dir each Ray worker would read as its own, are one line
    and exit 2 before a cluster is joined or anything is judged."""
    from tests.builders import run_cli

    db = tmp_path / "s.duckdb"
    EventLog(db).close()
    for args, words in ((["--shards", "2"], "--ray and --shards go together"),
                        (["--ray", "auto"], "--ray and --shards go together"),
                        (["--ray", "auto", "--shards", "2", "--ship-to", "postgresql://x@/y"], "--ship-to"),
                        (["--ray", "auto", "--shards", "2", "--segment-dir", "rel/dir"], "absolute path"),
                        (["--ray", "auto", "--shards", "0"], "--shards")):
        code, _, err = run_cli("judge", "--sandbox", "--db", str(db), *args)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and words in lines[0], (args, err)
    with EventLog(db, read_only=True) as log:
        assert log.cursor().execute("SELECT count(*) FROM events").fetchone() == (0,)
