"""`searchtrace bench fanout`: engine overhead per trajectory, and how exactly a 50 req/s limit is held.

Part 1 records N trajectories (default 2,000) against the in-process sandbox with zero latency into a fresh
DuckDB file, and reports the CPU per trajectory (the sandbox serves in the same process; its share is
measured separately and subtracted for the engine's own figure). Part 2 starts 1,000 chat calls at once
through the production chat adapter limited to 50 req/s and timestamps each request as it reaches the
transport: the achieved rate must be >= 95% of the limit and no 1-second window may hold more than
limit + burst requests.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import click
import msgspec

from searchtrace.adapters import paper_providers


class TimedASGI:
    """Wraps an ASGI app: counts requests, their arrival times, and the CPU spent inside the app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cpu_s = 0.0
        self.arrivals: list[float] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        self.arrivals.append(time.perf_counter())
        t0 = time.thread_time()
        try:
            await self.app(scope, receive, send)
        finally:
            self.cpu_s += time.thread_time() - t0


def _questions(path: Path, n_questions: int) -> None:
    from searchtrace.adapters.sandbox import default_world, question_rows

    base = [r for r in question_rows(default_world().questions)]
    rows = []
    for i in range(n_questions):
        row = dict(base[i % len(base)])
        row["qid"] = f"{row['qid']}-{i // len(base)}"
        rows.append(row)
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))


async def trajectories(n: int, workdir: Path, concurrency: int = 64) -> dict[str, Any]:
    """Records ~n trajectories (3 personas) against the in-process sandbox; CPU and wall figures."""
    from searchtrace.adapters.sandbox import create_app, in_process
    from searchtrace.engine import endpoint_factory, parse_config, point_at_sandbox, record_run
    from searchtrace.store import EventLog

    qfile = workdir / "questions.jsonl"
    _questions(qfile, math.ceil(n / 3))
    cfg = parse_config(
        {
            "run_id": "bench-fanout",
            "agent": {"model": "sandbox-agent", "rps": 1e6, "concurrency": concurrency, "timeout_s": 30.0},
            "providers": {k: {"rps": 1e6, "concurrency": concurrency, "timeout_s": 30.0} for k in paper_providers()},
            "fetch": {"rps": 1e6, "concurrency": concurrency, "timeout_s": 30.0, "cache_dir": ""},
            "limits": {"max_trajectories": concurrency},
            "dataset": {"path": str(qfile)},
        },
        "<bench fanout>",
    )
    app = TimedASGI(create_app())
    box = in_process(app)
    point_at_sandbox(cfg, box.root)
    log = await anyio.to_thread.run_sync(EventLog, workdir / "bench.duckdb")
    try:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        summary = await record_run(cfg, log, endpoint_factory(box.transport))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        events = log.head
    finally:
        await anyio.to_thread.run_sync(log.close)
    k = max(summary.recorded, 1)
    calls = summary.model_calls + summary.search_calls + summary.fetch_calls
    return {
        "trajectories": summary.recorded,
        "reasons": summary.reasons,
        "events": events,
        "calls": calls,
        "wall_s": round(wall, 3),
        "trajectories_per_s": round(summary.recorded / wall, 1),
        "cpu_ms_per_trajectory_total": round(cpu * 1000 / k, 3),
        "cpu_ms_per_trajectory_sandbox": round(app.cpu_s * 1000 / k, 3),
        "cpu_ms_per_trajectory_engine": round((cpu - app.cpu_s) * 1000 / k, 3),
        "cpu_ms_per_call_engine": round((cpu - app.cpu_s) * 1000 / max(calls, 1), 3),
    }


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most timestamps inside any half-open window [t, t + window)."""
    best, j = 0, 0
    for i in range(len(times)):
        while times[i] - times[j] >= window:
            j += 1
        best = max(best, i - j + 1)
    return best


async def rate_limit(calls: int, rps: float, burst: int = 0) -> dict[str, Any]:
    """`calls` chat completions started at once through the adapter limited to `rps`; arrival-time figures."""
    from searchtrace.adapters import SANDBOX_KEY, Endpoint, build_chat
    from searchtrace.adapters.sandbox import create_app, in_process

    app = TimedASGI(create_app())
    box = in_process(app)
    endpoint = Endpoint(base_url=f"{box.root}/openai/v1", rps=rps, burst=burst, concurrency=64, timeout_s=30.0)
    chat = build_chat("sandbox-agent", endpoint, transport=box.transport, key_fallback=SANDBOX_KEY)
    messages = [{"role": "system", "content": "bench"}, {"role": "user", "content": "Who founded the bench?"}]
    errors = 0

    async def one(i: int) -> None:
        nonlocal errors
        try:
            await chat.complete(messages, trace_id=f"bench-{i}")
        except Exception:
            errors += 1

    t0 = time.perf_counter()
    try:
        async with anyio.create_task_group() as tg:
            for i in range(calls):
                tg.start_soon(one, i)
    finally:
        await chat.aclose()
    wall = time.perf_counter() - t0
    times = sorted(app.arrivals)
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    achieved = (len(times) - 1) / span if span > 0 else float("inf")
    bucket = burst if burst > 0 else max(1, int(rps / 10))
    worst = max_in_window(times)
    return {
        "calls": calls,
        "errors": errors,
        "limit_rps": rps,
        "burst": bucket,
        "wall_s": round(wall, 3),
        "achieved_rps": round(achieved, 2),
        "achieved_share": round(achieved / rps, 4),
        "max_in_any_1s_window": worst,
        "ok_rate": achieved >= 0.95 * rps,
        "ok_burst": worst <= rps + bucket,
    }


async def run_all(n: int, calls: int, rps: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-") as tmp:
        part1 = await trajectories(n, Path(tmp))
    part2 = await rate_limit(calls, rps)
    return {"bench": "fanout", "trajectories": part1, "rate_limit": part2}


@click.command("fanout")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--trajectories", "n", default=2000, show_default=True, help="Trajectories to record (3 personas).")
@click.option("--calls", default=1000, show_default=True, help="Chat calls for the rate-limit check.")
@click.option("--rps", default=50.0, show_default=True, help="The rate limit to hold.")
def command(as_json: bool, n: int, calls: int, rps: float) -> None:
    """Engine CPU per trajectory against the in-process sandbox, and rate-limit accuracy at 50 req/s."""
    result = anyio.run(run_all, n, calls, rps, backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    t, r = result["trajectories"], result["rate_limit"]
    click.echo(
        f"fan-out: {t['trajectories']} trajectories ({t['calls']} calls, {t['events']} events) in {t['wall_s']} s "
        f"= {t['trajectories_per_s']}/s; CPU per trajectory {t['cpu_ms_per_trajectory_total']} ms total, "
        f"{t['cpu_ms_per_trajectory_engine']} ms engine + store, {t['cpu_ms_per_trajectory_sandbox']} ms sandbox"
    )
    click.echo(
        f"rate limit {r['limit_rps']:g}/s (burst {r['burst']}): {r['calls']} calls in {r['wall_s']} s, achieved "
        f"{r['achieved_rps']}/s ({r['achieved_share']:.1%}, {'ok' if r['ok_rate'] else 'BELOW 95%'}), "
        f"max {r['max_in_any_1s_window']} in any 1 s window ({'ok' if r['ok_burst'] else 'ABOVE limit + burst'})"
    )
