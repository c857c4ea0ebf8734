"""`searchtrace bench judge`: N judge calls (default 10,000) against the sandbox judge at a configured rate.

A fresh store gets N judge items (trajectories of 25 distinct URLs, every 5th one page-visible), built through
the trajectory `Builder` as a recording builds them; then `replay.run_judge` judges them through the production
chat adapter, limited to `--rps` by its endpoint limiter, over the in-process sandbox (ASGI, no socket). Reported: achieved rate
against the limit (from request arrival times at the app), the busiest 1-second window, CPU ms per call
(whole process, and without the sandbox's own share), peak memory (ru_maxrss) and the verdict counts.
Building the store is timed separately and never counted.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import click
import msgspec

from searchtrace.adapters import SearchHit, paper_providers
from searchtrace.engine import Builder
from searchtrace.store import NewEvent, Payload, digest

ITEMS_PER_TRAJECTORY = 25
JUDGE_RUN = "bench-judge"


def _trajectory(t: int, n: int, blobs: dict[str, bytes]) -> list[Payload]:
    entity = f"Zembla Works {t}"
    b = Builder(f"bench:{t}")
    b.start(qid=f"q{t}", provider=paper_providers()[t % 3], question=f"What is the founding year of {entity}?",
            gold_answer="1987")
    snippets = [f"The founding year of {entity} is 1987.", f"The founding year of {entity} is 1991.",
                f"{entity} is a company.", "Unrelated text about cooking."]
    hits = [SearchHit(rank=i % 10 + 1, title=f"{entity} page {i}", url=f"https://site{i}.example/{t}/page",
                      domain=f"site{i}.example", snippet=snippets[i % 4], metadata={"age": "1y"}) for i in range(n)]
    b.search(call_id="c1", iteration=1, query=f"{entity} founded", provider="", status="ok", hits=hits,
             latency_ms=1.0, doc_ids=[f"d{i + 1}" for i in range(n)])
    for i in range(0, n, 5):
        page = f"# {entity}\n\nThe founding year of {entity} is 1987.\n\n" + "Filler sentence. " * 40
        b.fetch(call_id=f"f{i}", iteration=2, doc_id=f"d{i + 1}", url=f"https://site{i}.example/{t}/page",
                status="ok", content=page, n_tokens=len(page) // 4, latency_ms=1.0)
    b.final("1987", iteration=3)
    b.finish("answered", iterations=3)
    out, pages = b.take()
    blobs.update((digest(page), page) for page in pages)
    return out


def build_store(path: Path, calls: int) -> int:
    """A store with exactly `calls` judge items; returns the number of events."""
    from searchtrace.store import EventLog

    blobs: dict[str, bytes] = {}
    events: list[NewEvent] = []
    t = 0
    left = calls
    while left > 0:
        n = min(ITEMS_PER_TRAJECTORY, left)
        events += [NewEvent(stream_id=f"traj:bench:{t}", run_id="bench", payload=p) for p in _trajectory(t, n, blobs)]
        left -= n
        t += 1
    with EventLog(path) as log:
        for i in range(0, len(events), 20_000):
            log.append(events[i : i + 20_000], blobs=list(blobs.values()) if i == 0 else [])
    return len(events)


async def judge_bench(db: Path, *, rps: float, concurrency: int) -> dict[str, Any]:
    from searchtrace.adapters import SANDBOX_KEY, build_chat, sandbox_endpoint
    from searchtrace.adapters.sandbox import create_app, in_process
    from searchtrace.benchmarks._fanout import TimedASGI, max_in_window
    from searchtrace.replay import run_judge
    from searchtrace.store import EventLog

    app = TimedASGI(create_app())
    box = in_process(app)
    endpoint = sandbox_endpoint("openai", box.root, rps=rps, concurrency=concurrency, timeout_s=60.0)
    chat = build_chat("sandbox-judge", endpoint, transport=box.transport, key_fallback=SANDBOX_KEY)
    log = EventLog(db)
    try:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stats = await run_judge(log, model="sandbox-judge", chat=chat, judge_run_id=JUDGE_RUN, concurrency=concurrency)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    finally:
        await chat.aclose()
        log.close()
    times = sorted(app.arrivals)
    n = len(times)
    span = times[-1] - times[0] if n > 1 else 0.0
    achieved = (n - 1) / span if span > 0 else None
    return {
        "calls": n,
        "verdicts": stats.done,
        "valid": stats.valid,
        "invalid": stats.invalid,
        "failed": stats.failed,
        "retried": stats.retried,
        "rps_limit": rps,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "achieved_rps": round(achieved, 2) if achieved else None,
        "achieved_share_of_limit": round(achieved / rps, 4) if achieved and rps > 0 else None,
        "max_calls_in_any_1s": max_in_window(times),
        "cpu_ms_per_call": round(cpu * 1000 / max(n, 1), 3),
        "cpu_ms_per_call_without_sandbox": round((cpu - app.cpu_s) * 1000 / max(n, 1), 3),
        "cpu_share_of_one_core": round(cpu / wall, 3) if wall > 0 else None,
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


@click.command("judge")
@click.option("--calls", default=10_000, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--rps", default=200.0, show_default=True, type=click.FloatRange(min=0.1), help="Judge request rate limit.")
@click.option("--concurrency", default=32, show_default=True, type=click.IntRange(1, 4096), help="Judge calls in flight.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def command(calls: int, rps: float, concurrency: int, as_json: bool) -> None:
    """10,000 judge calls against the sandbox judge: achieved rate vs limit, CPU per call, peak memory."""
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-judge-") as tmp:
        db = Path(tmp) / "judge.duckdb"
        t0 = time.perf_counter()
        n_events = build_store(db, calls)
        build_s = time.perf_counter() - t0
        rss_before = peak_rss_mb()
        figures = anyio.run(lambda: judge_bench(db, rps=rps, concurrency=concurrency), backend="asyncio")
    figures = {"bench": "judge", **figures, "store_events": n_events, "store_build_s": round(build_s, 3),
               "peak_rss_mb_before_run": rss_before, "peak_rss_mb": peak_rss_mb()}
    if as_json:
        click.echo(msgspec.json.encode(figures).decode())
        return
    click.echo(
        f"judge bench: {figures['calls']} calls at limit {rps:g}/s (concurrency {concurrency}): achieved "
        f"{figures['achieved_rps']}/s ({figures['achieved_share_of_limit']} of the limit), busiest second "
        f"{figures['max_calls_in_any_1s']} calls, {figures['wall_s']} s wall; CPU {figures['cpu_ms_per_call']} ms per call "
        f"({figures['cpu_ms_per_call_without_sandbox']} ms without the sandbox); peak RSS {figures['peak_rss_mb']} MB; "
        f"verdicts {figures['verdicts']} ({figures['invalid']} invalid, {figures['failed']} failed, {figures['retried']} retries)"
    )
