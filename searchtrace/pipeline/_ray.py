"""SPEC §22, fan-out on Ray: `record --ray auto|ADDRESS --shards N`.

The driver plans against the target store (the run's protocol, which shards still have cells to record), starts one
Ray async actor per such shard, each running the unchanged single-process record (`record --shard i/N`) into its
segment, merges the segments into the target and alone appends `run.finished` (the plain record on the merged store,
which finds every cell recorded). A segment's path is stable per (run, shard), next to the target, so a restarted
actor or a second run resumes its shard from what the segment holds and no recorded cell is called again. Keys
never leave the machines that hold them: a shard reads them from its own environment (the driver needs none), and
when the config names quota domains the shard actor requests each domain's custom resource, which only the machines
holding that domain's keys declare (`ray start --resources '{"quota:NAME": 1}'`). Ray is imported here only.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import msgspec

from searchtrace.adapters import quota_limiter
from searchtrace.engine import (
    AdapterFactory,
    Endpoints,
    Question,
    RunConfig,
    RunSummary,
    Stats,
    endpoint_factory,
    plan_cells,
)
from searchtrace.pipeline._merging import MergeResult, merge
from searchtrace.pipeline._quota import (
    NAMESPACE,
    domain_rates,
    hold_share,
    quota_actor,
    resource_of,
)
from searchtrace.pipeline._recording import aim, questions_of, record_into
from searchtrace.store import BadInput, EventLog

SHARE_OF_RESOURCE = 0.01  # what a shard actor asks of a quota domain's resource: one unit hosts 100 shards


class ShardDone(msgspec.Struct, kw_only=True):
    """What one shard's actor did (or why it stopped)."""

    shard: int
    segment: str
    node: str = ""  # the Ray node the actor ran on
    host: str = ""
    summary: RunSummary | None = None  # None: the actor died (error says how)
    error: str = ""
    max_rss_mb: float = 0.0  # the actor process's peak resident memory


class RayRecord(msgspec.Struct, kw_only=True):
    """A fanned-out record: every shard, the merge of their segments, and the coordinator's finish."""

    run_id: str
    shards: int
    trajectories: int  # cells of the run
    already: int  # cells final in the target before this run (planned there)
    recorded: int  # trajectories the shards recorded now
    done: list[ShardDone]
    merged: MergeResult | None
    finished: bool  # run.finished is in the target
    to_record: int  # cells still not final in the target (run again)
    elapsed_s: float


def segment_path(db: Path, run_id: str, shard: int, shards: int) -> Path:
    """Shard i of N of a run records here, next to the target (the same path on every run: a rerun resumes it)."""
    # a run id is [A-Za-z0-9._-]+ (engine._config), so it names a file as it is
    return db.parent / f"{db.name}.segments" / f"{run_id}.shard-{shard}-of-{shards}.duckdb"


def quota_endpoints(cfg: RunConfig) -> list[tuple[str, str | None, float]]:
    """(where, quota, rps) of every endpoint of a config."""
    out: list[tuple[str, str | None, float]] = [("agent", cfg.agent.quota or None, cfg.agent.rps),
                                                ("fetch", cfg.fetch.quota or None, cfg.fetch.rps)]
    out += [(f"providers.{n}", p.quota or None, p.rps) for n, p in sorted(cfg.providers.items())]
    return out


def leased(base: AdapterFactory, worker: str) -> AdapterFactory:
    """`base`, with every adapter whose endpoint names a quota domain paced at its lease of that domain."""

    async def make(cfg: RunConfig, stack: AsyncExitStack) -> Endpoints:
        eps = await base(cfg, stack)
        adapters: list[tuple[str, object]] = [("agent", eps.chat), ("fetch", eps.fetch), *eps.search.items()]
        for name, adapter in adapters:
            if (held := quota_limiter(adapter)) is not None:
                domain, limiter = held
                await stack.enter_async_context(hold_share(quota_actor(domain), f"{worker}:{name}", limiter))
        return eps

    return make


class ShardRecorder:
    """One shard's engine (the body of its Ray async actor): `record --shard i/N` into its segment."""

    def __init__(self) -> None:
        self._stats = Stats()

    def progress(self) -> int:
        """Trajectories this actor has finished so far."""
        return self._stats.done

    async def record(self, cfg: RunConfig, segment: str, shard: tuple[int, int], questions: list[Question],
                     sandbox: bool, sandbox_url: str | None) -> ShardDone:
        import ray

        transport = aim(cfg, sandbox=sandbox, sandbox_url=sandbox_url)
        path = Path(segment)
        path.parent.mkdir(parents=True, exist_ok=True)
        worker = f"{cfg.effective_run_id()}:{shard[0]}/{shard[1]}@{socket.gethostname()}:{os.getpid()}"
        from searchtrace.pipeline._recording import record

        summary = await record(cfg, path, transport, progress=False, shard=shard, questions=questions,
                               endpoints=leased(endpoint_factory(transport), worker), stats=self._stats)
        return ShardDone(shard=shard[0], segment=segment, node=ray.get_runtime_context().get_node_id(),
                         host=socket.gethostname(), summary=summary,
                         max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)


def ray_module() -> Any:
    """The ray package, imported only here and only for --ray; its absence is one line naming the extra."""
    try:
        import ray
    except ModuleNotFoundError:
        raise BadInput("--ray needs the ray extra: pip install 'searchtrace[ray]'") from None
    return ray


def connect(address: str) -> None:
    """Joins the Ray cluster at `address`; `auto`: the one this machine runs (RAY_ADDRESS, `ray start`), else a
    local one started here."""
    ray = ray_module()
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False, "logging_level": "WARNING"}
    try:
        if address == "auto":
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BadInput(f"--ray {address}: cannot join a Ray cluster there ({str(exc).splitlines()[0]})") from None


def record_on_ray(
    cfg: RunConfig, db: Path, *, shards: int, address: str = "auto", sandbox: bool = False,
    sandbox_url: str | None = None, on_started: Callable[[dict[int, Any]], None] | None = None,
) -> RayRecord:
    """Records the run as `shards` segments on a Ray cluster, merges them into `db` and finishes the run there.

    `on_started` is told each started shard's actor (tests kill one)."""
    ray = ray_module()

    t0 = time.perf_counter()
    if shards < 1:
        raise BadInput(f"--shards {shards}: a run needs at least one shard")
    aim(cfg, sandbox=sandbox, sandbox_url=sandbox_url)  # the run's identity as the shards (which aim it too) record it
    rates = domain_rates(quota_endpoints(cfg))
    questions = questions_of(cfg)
    run_id = cfg.effective_run_id()
    with EventLog(db) as log:  # planned against the target: its protocol check, and which shards are complete
        whole = plan_cells(cfg, log, questions)
        plans = {i: plan_cells(cfg, log, questions, (i, shards)) for i in range(shards)}
    for i, plan in plans.items():
        seg = segment_path(db, run_id, i, shards)
        if plan.to_record and plan.to_record < plan.cells and not seg.exists():
            raise BadInput(f"{db} holds {plan.cells - plan.to_record} cells of shard {i}/{shards} but its segment "
                           f"{seg} is gone; restore it (recording the shard again would call those cells twice)")
    connect(address)
    have: dict[str, float] = ray.cluster_resources()
    if missing := [resource_of(d) for d in rates if have.get(resource_of(d), 0) < SHARE_OF_RESOURCE]:
        # a shard asks for every domain its config names: with none declared it would wait for a node forever
        raise BadInput(f"no node of the Ray cluster declares {', '.join(missing)}: start the nodes that hold those "
                       f"keys with ray start --resources '{{\"{missing[0]}\": 1}}'")
    for domain, rate in rates.items():
        quota_actor(domain, rate)
    actor: Any = ray.remote(ShardRecorder)  # Ray's handle types do not carry remote methods
    need = {resource_of(d): SHARE_OF_RESOURCE for d in rates}
    started: dict[int, Any] = {}
    refs: dict[int, Any] = {}
    for i, plan in plans.items():
        if not plan.to_record:
            continue
        handle = actor.options(
            name=f"searchtrace-shard:{run_id}:{i}/{shards}", namespace=NAMESPACE, num_cpus=0, resources=need,
            max_restarts=0, scheduling_strategy="SPREAD",
        ).remote()
        started[i] = handle
        refs[i] = handle.record.remote(cfg, str(segment_path(db, run_id, i, shards)), (i, shards), questions,
                                       sandbox, sandbox_url)
    if on_started is not None:
        on_started(started)
    done: list[ShardDone] = []
    for i, ref in refs.items():
        where = str(segment_path(db, run_id, i, shards))
        try:
            done.append(ray.get(ref))
        except ray.exceptions.RayActorError as exc:
            done.append(ShardDone(shard=i, segment=where, error=f"its actor died ({type(exc).__name__})"))
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            if isinstance(cause, BadInput):
                raise cause from None
            done.append(ShardDone(shard=i, segment=where, error=f"{type(cause).__name__}: {str(cause).splitlines()[0]}"))
        finally:
            ray.kill(started[i])  # its segment is closed; the actor's process goes
    segments = [p for i in range(shards) if (p := segment_path(db, run_id, i, shards)).exists()]
    merged = merge(segments, db) if segments else None
    with EventLog(db) as log:
        after = plan_cells(cfg, log, questions)
        finished = False
        if not after.to_record:  # the coordinator's finish: records nothing (no endpoint, no key), appends run.finished
            anyio.run(lambda: record_into(log, cfg, progress=False, questions=questions), backend="asyncio")
            finished = True
    recorded = sum(d.summary.recorded for d in done if d.summary is not None)
    return RayRecord(run_id=run_id, shards=shards, trajectories=whole.cells, already=whole.cells - whole.to_record,
                     recorded=recorded, done=sorted(done, key=lambda d: d.shard), merged=merged, finished=finished,
                     to_record=after.to_record, elapsed_s=time.perf_counter() - t0)
