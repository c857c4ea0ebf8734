"""The fan-out over every (question, provider) trajectory: a fixed pool of anyio workers.

Per-endpoint limits live where the requests are made: each adapter holds one adapters.EndpointClient
per endpoint with its leaky bucket (adapters.RateLimiter: rps/10 per 0.1 s, or `burst` when configured) and its
CapacityLimiter, shared by every trajectory that uses that provider, the fetch backend or the chat model.

A trajectory that fails for any reason (chat failure after retries, an adapter bug) is written with reason
`error` and never stops the others; only cancellation (Ctrl-C) stops the pool, and then nothing of the
unfinished trajectories is written (see `engine._agent` on crash safety).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Protocol, TypeVar

import anyio
import structlog

from searchtrace.engine._agent import Recorder, Stats, Trajectory, error_kind
from searchtrace.store import BadInput, ConcurrencyError, TrajectoryFinished, Writer

log = structlog.get_logger("searchtrace.fanout")

T = TypeVar("T")


class Runner(Protocol):
    """What records one trajectory: the agent loop (engine.Agent) or a hosted search layer (docs/how-to/hosted.md)."""

    stats: Stats

    async def run(self, traj: Trajectory, rec: Recorder) -> TrajectoryFinished: ...


def _bad_input_in(exc: BaseException) -> BadInput | None:
    if isinstance(exc, BadInput):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _bad_input_in(inner)
            if found is not None:
                return found
    return None


@contextmanager
def bad_input_alone() -> Iterator[None]:
    """A BadInput inside an exception group (task groups, the writer's too, group their tasks' errors) is re-raised
    alone, so a rejected key stops the run with its one line; other groups pass as they are."""
    try:
        yield
    except BaseExceptionGroup as eg:
        bad = _bad_input_in(eg)
        if bad is not None:
            raise bad from None
        raise


async def worker_pool(items: Iterable[T], work: Callable[[T], Awaitable[object]], workers: int) -> None:
    """`work(item)` for every item, by `workers` tasks sharing one iterator: at most `workers` items in flight."""
    shared = iter(items)

    async def worker() -> None:
        for item in shared:
            await work(item)

    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(worker)


async def run_one(agent: Runner, traj: Trajectory, writer: Writer) -> str:
    """One trajectory, start to end, then its single atomic append; returns the finish reason (or `skipped`)."""
    stats = agent.stats
    rec = Recorder(traj)
    stats.running += 1
    t0 = time.perf_counter()
    try:
        try:
            done = await agent.run(traj, rec)
            reason = done.reason
        except BadInput:
            raise  # a rejected key or bad usage: every trajectory would fail alike, so the run stops
        except Exception as exc:  # any failure of this trajectory ends it, never the run
            log.warning("trajectory failed", trajectory_id=traj.trajectory_id, error=f"{type(exc).__name__}: {exc}")
            if not rec.finished:
                rec.finish("error", f"{type(exc).__name__}: {exc}"[:500])
            reason = "error"
        try:
            await writer.append(rec.events(), expected={traj.stream_id: -1}, blobs=list(rec.blobs.values()))
        except ConcurrencyError:
            log.warning("trajectory already recorded by someone else", trajectory_id=traj.trajectory_id)
            stats.skipped += 1
            return "skipped"
    finally:
        stats.running -= 1
    stats.done += 1
    stats.reasons[reason] = stats.reasons.get(reason, 0) + 1
    if reason == "error":
        stats.failed += 1
        last = rec.payloads[-1] if rec.payloads else None
        kind = error_kind(getattr(last, "error", None))
        stats.error_kinds[kind] = stats.error_kinds.get(kind, 0) + 1
    log.debug("trajectory finished", trajectory_id=traj.trajectory_id, reason=reason, s=round(time.perf_counter() - t0, 3))
    return reason


async def fan_out(
    jobs: Iterable[Trajectory],
    agents: Mapping[str, Runner],
    writer: Writer,
    *,
    max_concurrent: int,
    on_progress: Callable[[], None] | None = None,
) -> None:
    """Runs every job with at most `max_concurrent` trajectories in flight (a worker pool, not one task per job)."""

    async def one(traj: Trajectory) -> None:
        await run_one(agents[traj.provider], traj, writer)
        if on_progress is not None:
            on_progress()

    await worker_pool(list(jobs), one, max_concurrent)
