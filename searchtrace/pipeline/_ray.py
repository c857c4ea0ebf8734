"""docs/how-to/scale.md, fan-out on Ray: `record --ray auto|ADDRESS --shards N` and `judge --ray auto|ADDRESS --shards N`.

The driver plans against the target store (the run's protocol, which shards still have cells to record), starts one
Ray async actor per such shard, each running the unchanged single-process record (`record --shard i/N`) into its
segment, merges the segments into the target and alone appends `run.finished` (the plain record on the merged store,
which finds every cell recorded). A segment's path is stable per (run, shard), next to the target, so a restarted
actor or a second run resumes its shard from what the segment holds and no recorded cell is called again. Keys
never leave the machines that hold them: a shard reads them from its own environment (the driver needs none), and
when the config names quota domains the shard actor requests each domain's custom resource, which only the machines
holding that domain's keys declare (`ray start --resources '{"quota:NAME": 1}'`). Ray is imported here only.

`judge --ray` shards the judge items by their trajectory's cell (the same stable hash of provider, qid, epoch, so
every item and attempt of a trajectory is in one shard). The driver opens the judge run in the target (its
`judge.started`, as one process would append it) and writes, per shard with items to judge, an input store: the
shard's trajectory streams, their questions and run configs, the run's header and every verdict the target holds
for the shard, copied byte for byte. Its bytes travel through Ray's object store; the actor merges them into its
segment (created when missing) and runs the unchanged judge there, which calls only what has no verdict.

Segments need no shared filesystem: an actor writes its segment at the driver's path (a shared filesystem) or in
`segment_dir` on its own node, and the driver fetches every closed segment through the actor in chunks, checked
against the size and sha256 the actor reports, into its own path next to the target (a copy already holding those
bytes moves nothing; a fetch that does not reproduce them leaves the copy as it was and is not merged).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import resource
import select
import socket
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import msgspec

from searchtrace.adapters import quota_limiter
from searchtrace.analytics import JudgeItem, judge_items
from searchtrace.engine import (
    AdapterFactory,
    Endpoints,
    Question,
    RunConfig,
    RunSummary,
    Stats,
    endpoint_factory,
    plan_cells,
    shard_of,
)
from searchtrace.pipeline._judging import JudgePlan
from searchtrace.pipeline._merging import MergeResult, merge
from searchtrace.pipeline._quota import (
    NAMESPACE,
    domain_rates,
    hold_share,
    quota_actor,
    resource_of,
)
from searchtrace.pipeline._recording import aim, questions_of, record_into
from searchtrace.replay import JudgeStats, open_judge_run
from searchtrace.store import (
    BadInput,
    EventConflict,
    EventLog,
    StoreError,
    copy_events,
    judge_stream,
    trajectory_stream,
)

CHUNK = 8 << 20  # bytes per read of a segment fetched from its actor (well under Ray's object size limits)

SHARE_OF_RESOURCE = 0.01  # what a shard actor asks of a quota domain's resource: one unit hosts 100 shards


class ShardDone(msgspec.Struct, kw_only=True):
    """What one shard's actor did (or why it stopped)."""

    shard: int
    segment: str
    node: str = ""  # the Ray node the actor ran on
    host: str = ""
    summary: RunSummary | None = None  # a record shard's summary; None: the actor died (error says how)
    judged: JudgeStats | None = None  # a judge shard's counters; None: the actor died
    error: str = ""
    max_rss_mb: float = 0.0  # the actor process's peak resident memory
    local: str = ""  # the segment's path on the actor's node
    fetched_bytes: int = 0  # bytes of it brought to `segment` through Ray (0: the driver saw those bytes there)


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


def judge_segment_path(db: Path, judge_run_id: str, shard: int, shards: int) -> Path:
    """Shard i of N of a judge run judges here, next to the target (the same path on every run: a rerun resumes it)."""
    # a judge run id may hold any character (`model@judge/1`): kept readable where it is safe, told apart by its hash
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", judge_run_id)[:80]
    tag = hashlib.sha256(judge_run_id.encode()).hexdigest()[:8]
    return db.parent / f"{db.name}.segments" / f"judge-{safe}-{tag}.shard-{shard}-of-{shards}.duckdb"


def absolute(segment_dir: str | None) -> None:
    """`--segment-dir` names the same directory on every node: a relative one would be each Ray worker's own."""
    if segment_dir is not None and not Path(segment_dir).is_absolute():
        raise BadInput(f"--segment-dir {segment_dir}: give an absolute path (each node writes its segments there)")


def begin(segment_dir: str | None, shards: int, what: str, address: str = "auto") -> Any:
    """What a fan-out checks before it joins a cluster; the ray module."""
    absolute(segment_dir)
    reach(address)  # an unreachable cluster is one line before the target store is touched
    ray = ray_module(address)
    if shards < 1:
        raise BadInput(f"--shards {shards}: {what} needs at least one shard")
    return ray


def local_path(dest: Path, segment_dir: str | None) -> Path:
    """Where an actor writes the segment the driver merges from `dest`: in `segment_dir` on the actor's own node, else
    at `dest` itself (a filesystem the nodes share with the driver)."""
    return Path(segment_dir) / dest.name if segment_dir else dest


class SegmentFile(msgspec.Struct, frozen=True, kw_only=True):
    """A closed segment file: where, its size and sha256 (what a copy of it must reproduce)."""

    path: str
    size: int
    sha256: str


def file_of(path: Path) -> SegmentFile:
    """A file's size and sha256, read in chunks."""
    h, n = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return SegmentFile(path=str(path), size=n, sha256=h.hexdigest())


def write_checked(data: bytes, sha256: str, path: Path) -> None:
    """Bytes sent through Ray written to `path` only when they are the ones sent (their sha256)."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise StoreError(f"{path}: the store sent through Ray arrived damaged ({len(data)} bytes, another sha256)")
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_bytes(data)
    os.replace(part, path)


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
        held_here: set[int] = set()  # the endpoints naming one domain share its limiter: granted once
        for name, adapter in adapters:
            if (held := quota_limiter(adapter)) is not None and id(held[1]) not in held_here:
                domain, limiter = held
                held_here.add(id(limiter))
                await stack.enter_async_context(hold_share(quota_actor(domain), f"{worker}:{name}", limiter))
        return eps

    return make


class ShardActor:
    """What every shard's Ray async actor has besides its work: its progress, and its segment readable through Ray
    (the driver fetches it when it cannot see it at its own path)."""

    def __init__(self) -> None:
        self._done = 0
        self._segment: Path | None = None  # set when the work starts

    def progress(self) -> int:
        """Trajectories or items this actor has finished so far."""
        return self._done

    def segment_file(self) -> SegmentFile | None:
        """The segment as it is now on this node; None before it exists or while a write-ahead log says it is open."""
        path = self._segment
        if path is None or not path.exists() or path.with_name(path.name + ".wal").exists():
            return None
        return file_of(path)

    def read_chunk(self, offset: int, size: int) -> bytes:
        """`size` bytes of the segment from `offset` (fewer at its end)."""
        assert self._segment is not None
        with self._segment.open("rb") as f:
            f.seek(offset)
            return f.read(size)

    def _ran(self, shard: int, dest: str) -> ShardDone:
        import ray

        return ShardDone(shard=shard, segment=dest, node=ray.get_runtime_context().get_node_id(),
                         host=socket.gethostname(), local=str(self._segment),
                         max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)


class ShardRecorder(ShardActor):
    """One shard's engine (the body of its Ray async actor): `record --shard i/N` into its segment."""

    def __init__(self) -> None:
        super().__init__()
        self._stats = Stats()

    def progress(self) -> int:
        """Trajectories this actor has finished so far."""
        return self._stats.done

    async def record(self, cfg: RunConfig, dest: str, segment_dir: str | None, shard: tuple[int, int],
                     questions: list[Question], sandbox: bool, sandbox_url: str | None,
                     seed: bytes | None = None, seed_sha256: str = "") -> ShardDone:
        """Records the shard into its segment on this node; `seed`: the driver's copy of it (what the target holds of
        the shard), merged into this node's segment first, so a node that has none, or an older one (the shard ran
        elsewhere before, or there is no shared filesystem), records only what neither holds."""
        transport = aim(cfg, sandbox=sandbox, sandbox_url=sandbox_url)
        path = self._segment = local_path(Path(dest), segment_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        if seed is not None:
            given = seed
            await anyio.to_thread.run_sync(lambda: take_input(given, seed_sha256, path))
        worker = f"{cfg.effective_run_id()}:{shard[0]}/{shard[1]}@{socket.gethostname()}:{os.getpid()}"
        from searchtrace.pipeline._recording import record

        summary = await record(cfg, path, transport, progress=False, shard=shard, questions=questions,
                               endpoints=leased(endpoint_factory(transport), worker), stats=self._stats)
        done = self._ran(shard[0], dest)
        done.summary = summary
        return done


class ShardJudge(ShardActor):
    """One judge shard (the body of its Ray async actor): the unchanged `judge` on its segment, which starts from the
    input the driver sent (the shard's trajectories and the verdicts the target holds)."""

    async def judge(self, plan: JudgePlan, shard: int, dest: str, segment_dir: str | None, given: bytes,
                    given_sha256: str) -> ShardDone:
        """Judges what the shard's segment has no verdict for, with the keys of this node's environment."""
        from searchtrace.pipeline._judging import judge, judge_chat

        path = self._segment = local_path(Path(dest), segment_dir)
        await anyio.to_thread.run_sync(lambda: take_input(given, given_sha256, path))
        chat = judge_chat(model=plan.model, base_url=plan.base_url, key_env=plan.key_env, rps=plan.rps, api=plan.api,
                          concurrency=plan.concurrency, timeout_s=plan.timeout_s, max_retries=plan.max_retries,
                          sandbox=plan.sandbox, sandbox_url=plan.sandbox_url)

        def tick(s: JudgeStats) -> None:
            self._done = s.done

        stats = await judge(path, chat, plan.options(), progress=tick)
        done = self._ran(shard, dest)
        done.judged = stats
        return done


def take_input(given: bytes, sha256: str, segment: Path) -> None:
    """The driver's input store merged into the shard's segment (created when missing): what the segment judged
    before stays, the target's verdicts join it. A segment that disagrees with the target (its items were judged
    since on another node) starts again from the input."""
    if segment.exists() and not segment.with_name(segment.name + ".wal").exists() and file_of(segment).sha256 == sha256:
        return  # this node's segment is those bytes (a filesystem shared with the driver)
    inbox = segment.with_name(segment.name + ".input")
    write_checked(given, sha256, inbox)
    try:
        try:
            merge([inbox], segment)
        except EventConflict:
            for stale in (segment, segment.with_name(segment.name + ".wal")):
                stale.unlink(missing_ok=True)
            merge([inbox], segment)
    finally:
        inbox.unlink(missing_ok=True)


REACH_TIMEOUT_S = 10.0  # how long `--ray HOST:PORT` waits for the head to accept a connection


def head_of(address: str) -> tuple[str, int] | None:
    """(host, port) of `--ray HOST:PORT`; None for `auto` and a `ray://` client address."""
    if address == "auto" or "://" in address:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"--ray {address}: give HOST:PORT (the head's port, 6379 unless `ray start --port` said "
                       "otherwise) or auto")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def reach(address: str) -> None:
    """Nothing answering at HOST:PORT within REACH_TIMEOUT_S is one line, before Ray spends its own minute on it
    (and before the target store is touched); `auto` is not checked."""
    head = head_of(address)
    if head is None:
        return
    try:
        with socket.create_connection(head, timeout=REACH_TIMEOUT_S):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise BadInput(f"--ray {address}: no Ray cluster answers there ({why})") from None


def ray_module(address: str = "auto") -> Any:
    """The ray package, imported only here and only for --ray; its absence is one line naming the extra. A cluster
    on loopback keeps every Ray process of this machine on loopback (read when ray is first imported)."""
    head = head_of(address)
    if head is not None and is_loopback(head[0]):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if head is not None and "RAY_AUTH_MODE" not in os.environ and has_ray_token():
        # Ray turns token authentication on by itself only for a cluster it finds (`auto`), never for one named by
        # its address, while `ray start` requires the token wherever one exists; a driver in token mode also joins
        # a cluster that asks for none
        os.environ["RAY_AUTH_MODE"] = "token"
    try:
        import ray
    except ModuleNotFoundError:
        raise BadInput("--ray needs the ray extra: pip install 'searchtrace[ray]'") from None
    return ray


def has_ray_token() -> bool:
    """Whether this machine holds a Ray token where Ray looks for one (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, or
    ~/.ray/auth_token, which `ray start` and a local cluster write); the token itself is never read here."""
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return True
    return (Path.home() / ".ray" / "auth_token").is_file()


def connect(address: str) -> None:
    """Joins the Ray cluster at `address`; `auto`: the one this machine runs (RAY_ADDRESS, `ray start`), else a
    local one started here. HOST:PORT is checked first (one line within REACH_TIMEOUT_S when nothing answers); Ray
    then finds this machine's raylet of that cluster whatever address it registered under (a plain `ray start
    --head` registers the outward interface, not the loopback address it is reached by)."""
    ray = ray_module(address)
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False, "logging_level": "WARNING"}
    reach(address)
    try:
        if address == "auto":
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        hint = "" if address == "auto" else (
            "; a head that asks for a token needs its own here: RAY_AUTH_TOKEN, or its ~/.ray/auth_token copied to "
            "this machine")
        raise BadInput(f"--ray {address}: cannot join a Ray cluster there ({str(exc).splitlines()[0]}){hint}") from None


def fetch_segment(ray: Any, handle: Any, dest: Path) -> int:
    """Brings a shard actor's closed segment to `dest` unless `dest` holds those bytes already (a shared filesystem);
    the bytes moved. Written beside `dest` and put in its place only when size and sha256 are the actor's: a fetch cut
    short or damaged leaves `dest` as it was (StoreError)."""
    got: SegmentFile | None = ray.get(handle.segment_file.remote())
    if got is None:
        raise StoreError("its segment is not closed on its node")
    if dest.exists() and dest.stat().st_size == got.size and file_of(dest).sha256 == got.sha256:
        return 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    h, n = hashlib.sha256(), 0
    try:
        with part.open("wb") as f:
            while n < got.size:
                chunk: bytes = ray.get(handle.read_chunk.remote(n, min(CHUNK, got.size - n)))
                if not chunk:
                    break
                f.write(chunk)
                h.update(chunk)
                n += len(chunk)
        if (n, h.hexdigest()) != (got.size, got.sha256):
            raise StoreError(f"its segment {got.path} came {n} of {got.size} bytes, sha256 {h.hexdigest()[:12]} "
                             f"for {got.sha256[:12]}; not merged")
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return n


EXIT_WAIT_S = 60.0  # how long the driver waits for a dead shard actor's process to exit (a hang guard)


def dead_pid(error: str, here: set[str]) -> int | None:
    """The PID Ray names in a dead actor's error when the actor ran on a node at one of the addresses `here` (this
    machine); None when Ray names none or another machine."""
    pid = re.search(r"^\s*pid: (\d+)$", error, re.MULTILINE)
    ip = re.search(r"^\s*ip: (\S+)$", error, re.MULTILINE)
    return int(pid[1]) if pid is not None and (ip is None or ip[1] in here) else None


def wait_exited(pid: int, timeout_s: float) -> bool:
    """Whether process `pid` has exited (and so released its file locks) within `timeout_s`: Ray reports an actor dead
    before its process has gone, which until then still holds its segment's lock."""
    if sys.platform != "linux":  # no pidfd: asked again until it has gone
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
            time.sleep(0.05)
        return False
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])  # a pidfd turns readable when its process exits
    finally:
        os.close(fd)


def gather(ray: Any, started: dict[int, Any], refs: dict[int, Any], dests: dict[int, Path]) -> list[ShardDone]:
    """Each shard's outcome, its segment fetched to its path at the driver when its actor is alive (also after its
    work failed: what it committed is merged), then its actor ended; BadInput of a shard is raised. A dead actor's
    process on this machine is waited for (up to EXIT_WAIT_S), so the merge does not find its segment still locked."""
    done: list[ShardDone] = []
    for i, ref in refs.items():
        where = str(dests[i])
        alive = True
        try:
            d: ShardDone = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            d, alive = ShardDone(shard=i, segment=where, error=f"its actor died ({type(exc).__name__})"), False
            here = ray.get_runtime_context().get_node_id()
            if (pid := dead_pid(str(exc), {n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == here})):
                wait_exited(pid, EXIT_WAIT_S)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            if isinstance(cause, BadInput):
                for handle in started.values():
                    ray.kill(handle)
                raise cause from None
            d = ShardDone(shard=i, segment=where, error=f"{type(cause).__name__}: {str(cause).splitlines()[0]}")
        except ray.exceptions.RayError as exc:  # its actor could not be placed (its node went)
            d, alive = ShardDone(shard=i, segment=where, error=f"its actor did not run ({type(exc).__name__})"), False
        try:
            if alive:
                d.fetched_bytes = fetch_segment(ray, started[i], dests[i])
        except (StoreError, OSError, ray.exceptions.RayError) as exc:
            d.error = "; ".join(filter(None, [d.error, f"segment not fetched: {str(exc).splitlines()[0]}"]))
        finally:
            ray.kill(started[i])  # its segment is closed (or its actor gone); the actor's process goes
        done.append(d)
    return sorted(done, key=lambda d: d.shard)


def seed_of(ray: Any, dest: Path) -> tuple[Any, str]:
    """The driver's copy of a shard's segment (what was fetched and merged of it before), put in Ray's object store
    for its actor, whose node may hold no copy or an older one; (None, "") when the driver has none, or when a
    write-ahead log beside it says a shard writes it in place (a filesystem shared with the driver: that shard
    resumes it itself)."""
    if not dest.exists() or dest.with_name(dest.name + ".wal").exists():
        return None, ""
    data = dest.read_bytes()
    return ray.put(data), hashlib.sha256(data).hexdigest()


def record_on_ray(
    cfg: RunConfig, db: Path, *, shards: int, address: str = "auto", sandbox: bool = False,
    sandbox_url: str | None = None, segment_dir: str | None = None,
    on_started: Callable[[dict[int, Any]], None] | None = None,
) -> RayRecord:
    """Records the run as `shards` segments on a Ray cluster, merges them into `db` and finishes the run there.

    `segment_dir`: a directory on each node the actors write their segments in (no shared filesystem; fetched
    through Ray). `on_started` is told each started shard's actor (tests kill one)."""
    t0 = time.perf_counter()
    ray = begin(segment_dir, shards, "a run", address)
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
    dests = {i: segment_path(db, run_id, i, shards) for i in range(shards)}
    for i, plan in plans.items():
        if not plan.to_record:
            continue
        handle = actor.options(
            name=f"searchtrace-shard:{run_id}:{i}/{shards}", namespace=NAMESPACE, num_cpus=0, resources=need,
            max_restarts=0, scheduling_strategy="SPREAD",
        ).remote()
        started[i] = handle
        refs[i] = handle.record.remote(cfg, str(dests[i]), segment_dir, (i, shards), questions, sandbox, sandbox_url,
                                       *seed_of(ray, dests[i]))
    if on_started is not None:
        on_started(started)
    done = gather(ray, started, refs, dests)
    segments = [p for p in dests.values() if p.exists()]
    merged = merge(segments, db) if segments else None
    with EventLog(db) as log:
        after = plan_cells(cfg, log, questions)
        finished = False
        if not after.to_record:  # the coordinator's finish: records nothing (no endpoint, no key), appends run.finished
            anyio.run(lambda: record_into(log, cfg, progress=False, questions=questions), backend="asyncio")
            finished = True
    recorded = sum(d.summary.recorded for d in done if d.summary is not None)
    return RayRecord(run_id=run_id, shards=shards, trajectories=whole.cells, already=whole.cells - whole.to_record,
                     recorded=recorded, done=done, merged=merged, finished=finished,
                     to_record=after.to_record, elapsed_s=time.perf_counter() - t0)


class RayJudge(msgspec.Struct, kw_only=True):
    """A fanned-out judge run: every shard, the merge of their segments into the target, what is left to judge."""

    judge_run_id: str
    shards: int
    items: int  # judge items of the target
    already: int  # of them with a verdict of this judge run before this run
    judged: int  # verdicts the shards made now
    failed: int  # calls that failed for good on a transient error (no verdict: run again)
    done: list[ShardDone]
    merged: MergeResult | None
    pending: int  # items of the target still without a verdict (run again)
    elapsed_s: float


# what a judge shard needs besides its trajectories' own streams: their questions and run configs, the judge run's
# header and every verdict the target holds for the shard's trajectories (so nothing judged is called again)
_INPUT_SQL = """
WITH t(stream_id) AS (SELECT unnest(?::VARCHAR[])), v(trajectory_id) AS (SELECT unnest(?::VARCHAR[]))
SELECT position FROM events WHERE stream_id IN (SELECT stream_id FROM t)
UNION ALL SELECT position FROM events WHERE type = 'dataset.question' AND payload->>'$.qid' IN
  (SELECT DISTINCT payload->>'$.qid' FROM events WHERE type = 'trajectory.started' AND stream_id IN (SELECT stream_id FROM t))
UNION ALL SELECT position FROM events WHERE type = 'run.started' AND run_id IN
  (SELECT DISTINCT run_id FROM events WHERE stream_id IN (SELECT stream_id FROM t))
UNION ALL SELECT position FROM events WHERE stream_id = ? AND (type = 'judge.started' OR (type = 'judge.verdict' AND
  payload->>'$.item.trajectory_id' IN (SELECT trajectory_id FROM v)))
ORDER BY position"""


def judge_input(log: EventLog, judge_run_id: str, to_judge: list[JudgeItem], of_shard: set[str], into: Path) -> int:
    """Writes the input store of a judge shard: the streams of the trajectories with items `to_judge`, and the
    verdicts the target holds for every trajectory of the shard (`of_shard`); returns its events."""
    streams = sorted({trajectory_stream(it.trajectory_id) for it in to_judge})
    cur = log.cursor()
    try:
        positions = [int(r[0]) for r in cur.execute(_INPUT_SQL, [streams, sorted(of_shard), judge_stream(judge_run_id)])
                     .fetchall()]
    finally:
        cur.close()
    into.unlink(missing_ok=True)
    with EventLog(into) as out:
        return copy_events(log, positions, out)


def judge_on_ray(
    plan: JudgePlan, db: Path, *, shards: int, address: str = "auto", segment_dir: str | None = None,
    on_started: Callable[[dict[int, Any]], None] | None = None,
) -> RayJudge:
    """Judges the items of `db` this judge run has no verdict for as `shards` segments on a Ray cluster and merges
    them into `db` (which holds the run's `judge.started`, appended first by the driver).

    `segment_dir`: a directory on each node the actors write their segments in (no shared filesystem; fetched
    through Ray). `on_started` is told each started shard's actor (tests kill one)."""
    t0 = time.perf_counter()
    ray = begin(segment_dir, shards, "a judge run", address)
    dests = {i: judge_segment_path(db, plan.judge_run_id, i, shards) for i in range(shards)}
    inputs: dict[int, Path] = {}  # each shard's input store, put in Ray's object store one at a time
    with EventLog(db) as log:  # the coordinator's start of the run, and the shards' work planned against the target
        jrid, prompt = open_judge_run(log, plan.options())
        cur = log.cursor()
        try:
            every = judge_items(cur)
            pending = judge_items(cur, without_verdict_in=jrid)
        finally:
            cur.close()
        cell = {it.trajectory_id: shard_of(it.provider, it.qid, it.epoch, shards) for it in every}
        for i in sorted({cell[it.trajectory_id] for it in pending}):
            mine = {t for t, k in cell.items() if k == i}
            box = dests[i].with_name(dests[i].name + ".input")
            box.parent.mkdir(parents=True, exist_ok=True)
            judge_input(log, jrid, [it for it in pending if cell[it.trajectory_id] == i], mine, box)
            inputs[i] = box
    done: list[ShardDone] = []
    if inputs:  # else every item has a verdict: nothing to start, the segments are merged again (a no-op)
        connect(address)
        actor: Any = ray.remote(ShardJudge)  # Ray's handle types do not carry remote methods
        plan = msgspec.structs.replace(plan, judge_run_id=jrid, prompt=prompt)
        started: dict[int, Any] = {}
        refs: dict[int, Any] = {}
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        for i, box in inputs.items():
            # a judge shard asks for no resource, which Ray's SPREAD (and a soft affinity) may leave on one node: shard
            # i goes to live node i mod n, the same node on a rerun while the cluster is the same (its node-local
            # segment is there); a node gone meanwhile fails its shard's actor: the rerun judges it
            where = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False)
            given, given_sha256 = seed_of(ray, box)  # the input store, put in Ray's object store
            box.unlink()
            handle = actor.options(
                name=f"searchtrace-judge:{jrid}:{i}/{shards}", namespace=NAMESPACE, num_cpus=0, max_restarts=0,
                scheduling_strategy=where,
            ).remote()
            started[i] = handle
            refs[i] = handle.judge.remote(plan, i, str(dests[i]), segment_dir, given, given_sha256)
        if on_started is not None:
            on_started(started)
        done = gather(ray, started, refs, dests)
    # the segments of the shards this run started (the others had nothing the target lacks; a copy of an earlier
    # run that the target has since judged otherwise would only stop the merge)
    segments = [dests[d.shard] for d in done if dests[d.shard].exists()]
    merged = merge(segments, db) if segments else None
    with EventLog(db) as log:
        cur = log.cursor()
        try:
            left = len(judge_items(cur, without_verdict_in=jrid))
        finally:
            cur.close()
    judged = [d.judged for d in done if d.judged is not None]
    return RayJudge(judge_run_id=jrid, shards=shards, items=len(every), already=len(every) - len(pending),
                    judged=sum(s.done for s in judged), failed=sum(s.failed for s in judged), done=done,
                    merged=merged, pending=left, elapsed_s=time.perf_counter() - t0)
