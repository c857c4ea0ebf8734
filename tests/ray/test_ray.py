"""The Ray fan-out on one local cluster of two raylets (docs/how-to/scale.md, docs/how-to/quotas.md): quotas counted
where requests arrive, recording and judging sharded across the raylets, and joining the cluster from a fresh process.

One module, so that `make test` (a module per worker at a time) runs them on one worker, which starts one cluster
for all of them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from searchtrace import pipeline
from searchtrace.pipeline import QuotaLedger
from searchtrace.pipeline._ray import dead_pid, wait_exited
from searchtrace.replay import JudgeOptions
from searchtrace.store import EventLog, StoreLocked
from tests.builders import sandbox_config
from tests.ray.conftest import QUOTA, RAY_HOME, kill_when_under_way
from tests.store.test_segments_merge import _record_judge_grade, _values

# --- Quotas ----------------------------------------------------------------------------------------------------
# The quota ledger hands out a domain's slots, whole tokens over time, in the order asked (docs/how-to/quotas.md):
# on a clock the test moves, no cluster; then on the session's two-raylet cluster, many more workers than the rate
# allows per second, counted where their requests arrive.


def test_slots_never_exceed_the_rate_whoever_asks_and_a_dead_workers_pass() -> None:
    now = [0.0]
    ledger = QuotaLedger("d", 1.0, clock=lambda: now[0])
    step = 1.08  # at 1/s a slot every 1.08 s: an arrival 80 ms late still has a window to itself
    times = [now[0] + d for w in ("a", "b", "c", "d") for d in ledger.take(w, 3)]
    assert times == pytest.approx([0.0, step, 2 * step, 3 * step])  # one whole slot each, queued in order
    assert ledger.granted == {"a": 1, "b": 1, "c": 1, "d": 1}
    now[0] = 10.0  # d died with its slot; nothing of it is held now
    assert ledger.take("a", 1) == [0.0]
    assert ledger.configure(8.0) == 8.0  # a new rate spaces the slots after the ones already handed out
    assert ledger.take("b", 1) == pytest.approx([step]) and ledger.take("c", 1) == pytest.approx([step + 0.135])


@pytest.mark.parametrize(("workers", "rate"), [(12, 8.0), (4, 1.0), (4, 200.0)])
def test_many_workers_never_send_more_than_the_domain_grants(ray_cluster: str, workers: int, rate: float) -> None:
    """Counted where requests arrive: the ledger's slots are at least 1/R apart from the first ask on, so in `seconds`
    no more than R·seconds + 1 calls can arrive whatever the load (a late call arrives later, never earlier); each
    worker pacing alone would send workers × R a second. The achieved rate and the busiest 1-s window depend on the
    machine's load: `bench scale` measures them (docs/how-to/quotas.md), not this test."""
    import click

    from searchtrace.benchmarks._scale import rate_held

    # the bound holds from the first ask on, for any window: workers × R·seconds (12 to 288 at 3 s) is far past it.
    # A loaded machine may send nothing in a short window (its workers' first calls come too late): the window then
    # doubles, and the bound is checked on every window that counted calls
    for seconds in (3.0, 6.0, 12.0, 24.0):
        try:
            got = rate_held(workers=workers, rate=rate, seconds=seconds, concurrency=4, domain=f"test:held-{workers}")
        except click.ClickException:  # fewer than two calls arrived
            continue
        assert 2 <= got["calls"] <= rate * seconds + 1, (seconds, got)
        return
    raise AssertionError("no window of up to 24 s counted two calls")


# --- Recording on Ray ------------------------------------------------------------------------------------------
# docs/how-to/scale.md fan-out on Ray, on a local cluster of two raylets: a sharded sandbox record merged into the target
# reports what one process reports (every value but latencies), its segments fetched from node-local directories
# through Ray; a shard actor killed mid-run is resumed by the rerun, which records only the cells its segment misses.


def _judge_and_grade(db: Path) -> None:
    chat = pipeline.judge_chat(model=pipeline.SANDBOX_JUDGE, sandbox=True, rps=10_000.0, concurrency=16,
                               timeout_s=120.0, max_retries=2)  # 120 s: a hang guard
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



def test_a_killed_writer_s_segment_is_opened_once_its_process_has_exited(tmp_path: Path) -> None:
    # Ray reports an actor dead while its process may still hold its segment: the driver waits for that PID to exit
    error = ("The actor died unexpectedly before finishing this task.\n\tclass_name: ShardRecorder\n\tpid: 4242\n"
             "\tip: 10.0.0.7\nThe actor is dead because it was killed by `ray.kill`.")
    assert dead_pid(error, {"10.0.0.7"}) == 4242 and dead_pid(error, {"10.0.0.8"}) is None
    segment = tmp_path / "s.duckdb"
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; from searchtrace.store import EventLog; log = EventLog(sys.argv[1]); "
         "print('held', flush=True); sys.stdin.read()", str(segment)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            with pytest.raises(StoreLocked):
                EventLog(segment, read_only=True)
            assert not wait_exited(holder.pid, 0.1)  # alive: the wait ends at its bound
            holder.kill()
            assert wait_exited(holder.pid, 60.0)  # exited, not yet reaped by its parent: its lock is released
            with EventLog(segment, read_only=True) as log:
                assert log.cursor().execute("SELECT count(*) FROM events").fetchone() == (0,)
        finally:
            holder.kill()  # Popen's exit reaps it


# --- Judging on Ray --------------------------------------------------------------------------------------------
# docs/how-to/scale.md `judge --ray` on the session's two raylets: the shards' verdicts equal one process's judge of the same
# run (every value but the clock's), fetched through Ray from segments in node-local directories; merging again adds
# nothing; a judge shard killed mid-run is resumed by a rerun that judges only the items the target misses.


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
    chat = pipeline.judge_chat(model=pipeline.SANDBOX_JUDGE, sandbox=True, rps=0.0, concurrency=8, timeout_s=120.0,
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


# --- Connecting from a fresh process ---------------------------------------------------------------------------
# `record --ray HOST:PORT` from a fresh process (docs/how-to/scale.md): nothing listening there is one line and exit
# 2 before the store is touched; the session's cluster (a token asked for, its nodes registered under an address
# other than the one it is reached by: tests/ray/conftest.py) is joined with no Ray setting in the environment, by a
# user whose ~/.ray holds the token.


CONFIG = """run_id = "t"
[agent]
model = "sandbox-agent"
[dataset]
path = "sandbox"
[sample]
n = 2
seed = "t"
[fetch]
cache_dir = ""
[providers.brave]
"""


def _record(tmp_path: Path, address: str, timeout: float) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # a fresh shell: no Ray setting
    env["HOME"] = str(RAY_HOME)  # ~/.ray/auth_token: where `ray start` leaves the token on the head's machine
    return subprocess.run(
        [sys.executable, "-c", "from searchtrace.cli import main; main()", "record", "--config", str(cfg), "--db", str(tmp_path / "t.duckdb"),
         "--sandbox", "--no-progress", "--ray", address, "--shards", "2"],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )


def test_nothing_listening_is_one_line_and_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the Ray tests need the ray extra: pip install 'searchtrace[ray]'")
    with socket.socket() as s:  # a loopback port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = _record(tmp_path, f"127.0.0.1:{port}", timeout=120)
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        f"searchtrace: error: --ray 127.0.0.1:{port}: no Ray cluster answers there (Connection refused)"]
    assert not (tmp_path / "t.duckdb").exists()


def test_a_cluster_like_ray_start_s_is_joined_from_a_fresh_process(ray_cluster: str, tmp_path: Path) -> None:
    got = _record(tmp_path, ray_cluster, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    assert (tmp_path / "t.duckdb").exists()
