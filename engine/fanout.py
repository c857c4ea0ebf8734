"""The fan-out over every (question, provider) trajectory: a fixed pool of anyio workers, per-endpoint limits.

A trajectory that fails for any reason (chat failure after retries, an adapter bug) is written with reason
`error` and never stops the others; only cancellation (Ctrl-C) stops the pool, and then nothing of the
unfinished trajectories is written (see `engine.agent` on crash safety).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import anyio
import structlog
from aiolimiter import AsyncLimiter

from adapters.types import ChatResponse, FetchResponse, SearchResponse
from engine.agent import Agent, ChatModel, FetchBackend, Recorder, SearchProvider, Trajectory
from store.errors import BadInput, ConcurrencyError
from store.writer import Writer

log = structlog.get_logger("searchtrace.fanout")


def rate_limiter(rps: float, burst: int = 0) -> AsyncLimiter:
    """A leaky bucket with mean rate `rps` whose burst is `burst` calls, or rps/10 when 0 (no first-second 2x burst)."""
    if burst > 0:
        return AsyncLimiter(burst, burst / rps)
    return AsyncLimiter(rps / 10, 0.1) if rps >= 10 else AsyncLimiter(1, 1 / rps)


class Limits:
    """Request rate (leaky bucket) and in-flight cap of one endpoint, shared by every caller of it."""

    def __init__(self, rps: float, concurrency: int, burst: int = 0) -> None:
        self.rate = rate_limiter(rps, burst)
        self.slots = anyio.CapacityLimiter(concurrency)
        self.rps, self.concurrency, self.burst = rps, concurrency, burst

    async def __aenter__(self) -> None:
        await self.slots.acquire()
        try:
            await self.rate.acquire()
        except BaseException:
            self.slots.release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.slots.release()


class LimitedSearch:
    """A search provider behind its endpoint's limits (same `name`/`params` as the wrapped adapter)."""

    def __init__(self, inner: SearchProvider, limits: Limits) -> None:
        self.inner, self.limits = inner, limits
        self.name, self.params = inner.name, inner.params

    async def search(self, query: str, *, trace_id: str | None = None) -> SearchResponse:
        async with self.limits:
            return await self.inner.search(query, trace_id=trace_id)


class LimitedFetch:
    def __init__(self, inner: FetchBackend, limits: Limits) -> None:
        self.inner, self.limits = inner, limits

    async def fetch(self, url: str, *, trace_id: str | None = None) -> FetchResponse:
        async with self.limits:
            return await self.inner.fetch(url, trace_id=trace_id)


class LimitedChat:
    def __init__(self, inner: ChatModel, limits: Limits) -> None:
        self.inner, self.limits = inner, limits

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        trace_id: str | None = None,
    ) -> ChatResponse:
        async with self.limits:
            return await self.inner.complete(messages, tools=tools, response_format=response_format, trace_id=trace_id)


async def run_one(agent: Agent, traj: Trajectory, writer: Writer) -> str:
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
    log.debug("trajectory finished", trajectory_id=traj.trajectory_id, reason=reason, s=round(time.perf_counter() - t0, 3))
    return reason


async def fan_out(
    jobs: Iterable[Trajectory],
    agents: Mapping[str, Agent],
    writer: Writer,
    *,
    max_concurrent: int,
    on_progress: Callable[[], None] | None = None,
) -> None:
    """Runs every job with at most `max_concurrent` trajectories in flight (a worker pool, not one task per job)."""
    shared: Iterator[Trajectory] = iter(list(jobs))

    async def worker() -> None:
        for traj in shared:
            await run_one(agents[traj.provider], traj, writer)
            if on_progress is not None:
                on_progress()

    async with anyio.create_task_group() as tg:
        for _ in range(max_concurrent):
            tg.start_soon(worker)
