"""`searchtrace bench judge`: N judge calls (default 10,000) against the sandbox judge at a configured rate.

A fresh store gets N judge items (trajectories of 25 distinct URLs, every 5th one page-visible), built through
the trajectory `Builder` as a recording builds them; then `replay.run_judge` judges them through the production
chat adapter, limited to `--rps` by its endpoint limiter, over the in-process sandbox (ASGI, no socket). Reported: achieved rate
against the limit (from request arrival times at the app), the busiest 1-second window, CPU ms per call
(whole process, and without the sandbox's own share), peak memory (ru_maxrss) and the verdict counts.
Building the store is timed separately and never counted.

With `--batch` (docs/how-to/batch.md) the same items are judged a second time in the same run through the sandbox's
OpenAI Batch API (`replay.run_batch_judge`, `--batch-size` items a batch, a batch in progress for `--batch-delay`
seconds): wall time per item and USD of each way (the judge model's price from `--prices`, else EXAMPLE_PRICE; a
batch at the table's `batch_discount`), and how many items got other labels (0: the same judge either way).
"""

from __future__ import annotations

import resource
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio
import click
import msgspec

from searchtrace.adapters import SearchHit, paper_providers
from searchtrace.engine import Builder, ModelPrice, Prices, load_prices, model_usd
from searchtrace.store import NewEvent, Payload, digest

ITEMS_PER_TRAJECTORY = 25
JUDGE_RUN = "bench-judge"
BATCH_RUN = "bench-judge-batch"
# USD per 1M tokens of the sandbox judge when no --prices names it: the price file example's placeholder figures
EXAMPLE_PRICE = ModelPrice(input=1.25, cached_input=0.125, output=10.0)


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
    from searchtrace.replay import JudgeOptions, run_judge
    from searchtrace.store import EventLog

    app = TimedASGI(create_app())
    box = in_process(app)
    endpoint = sandbox_endpoint("openai", box.root, rps=rps, concurrency=concurrency, timeout_s=60.0)
    chat = build_chat("sandbox-judge", endpoint, transport=box.transport, key_fallback=SANDBOX_KEY)
    log = EventLog(db)
    try:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id=JUDGE_RUN, concurrency=concurrency), chat=chat)
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


def _usd(price: ModelPrice, stats: Any, discount: float = 1.0) -> float:
    u = stats.usage
    return float(model_usd(price, u.input_tokens, u.cached_tokens, u.output_tokens) * Fraction(discount))


async def batch_bench(db: Path, *, rps: float, concurrency: int, batch_size: int, batch_delay_s: float,
                      prices: Prices | None) -> dict[str, Any]:
    """The store's items judged online and then through model batches, over one in-process sandbox."""
    from searchtrace.adapters import SANDBOX_KEY, build_chat, sandbox_endpoint
    from searchtrace.adapters.sandbox import create_app, in_process
    from searchtrace.replay import JudgeOptions, run_batch_judge, run_judge
    from searchtrace.store import EventLog

    box = in_process(create_app(batch_delay_s=batch_delay_s))
    endpoint = sandbox_endpoint("openai", box.root, rps=rps, concurrency=concurrency, timeout_s=60.0)
    chat = build_chat("sandbox-judge", endpoint, transport=box.transport, key_fallback=SANDBOX_KEY)
    log = EventLog(db)
    try:
        wall0 = time.perf_counter()
        online = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id=JUDGE_RUN, concurrency=concurrency), chat=chat)
        wall1 = time.perf_counter()
        batched = await run_batch_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id=BATCH_RUN, concurrency=concurrency), chat=chat, batch_size=batch_size, poll_s=0.05)
        wall2 = time.perf_counter()
        cur = log.cursor()
        differ = cur.execute(
            "SELECT count(*) FROM events a JOIN events b ON a.payload->>'$.item' = b.payload->>'$.item' "
            "WHERE a.type = 'judge.verdict' AND b.type = 'judge.verdict' AND a.stream_id = ? AND b.stream_id = ? "
            "AND a.payload->>'$.labels' IS DISTINCT FROM b.payload->>'$.labels'",
            [f"judge:{JUDGE_RUN}", f"judge:{BATCH_RUN}"]).fetchone()
        cur.close()
    finally:
        await chat.aclose()
        log.close()
    price = (prices.models.get("sandbox-judge") if prices is not None else None) or EXAMPLE_PRICE
    discount = prices.batch_discount if prices is not None else 0.5
    n = max(online.done, 1)
    b = batched.batch
    assert not isinstance(b, msgspec.UnsetType)
    on_usd, b_usd = _usd(price, online), _usd(price, batched, discount)
    return {
        "items": online.items,
        "online": {"verdicts": online.done, "wall_s": round(wall1 - wall0, 3),
                   "wall_ms_per_item": round((wall1 - wall0) * 1000 / n, 3), "usd": on_usd,
                   "rps_limit": rps, "concurrency": concurrency},
        "batch": {"verdicts": batched.done, "wall_s": round(wall2 - wall1, 3),
                  "wall_ms_per_item": round((wall2 - wall1) * 1000 / max(batched.done, 1), 3), "usd": b_usd,
                  "batches": b.batches, "batch_size": batch_size, "batch_delay_s": batch_delay_s},
        "usd_batch_over_online": round(b_usd / on_usd, 6) if on_usd else None,
        "labels_differ": int(differ[0]) if differ else None,
        "price": {"input": price.input, "cached_input": price.cached_input, "output": price.output,
                  "batch_discount": discount, "from": "--prices" if prices is not None and
                  "sandbox-judge" in prices.models else "example (docs/prices-example.toml placeholders)"},
    }


@click.command("judge")
@click.option("--calls", default=10_000, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--rps", default=200.0, show_default=True, type=click.FloatRange(min=0.1), help="Judge request rate limit.")
@click.option("--concurrency", default=32, show_default=True, type=click.IntRange(1, 4096), help="Judge calls in flight.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--batch", "batch", is_flag=True,
              help="Judge the same items online and through the sandbox's batch API in one run: wall time per item "
                   "and USD of each (docs/how-to/batch.md).")
@click.option("--batch-size", default=1000, show_default=True, type=click.IntRange(1, 50_000), help="With --batch.")
@click.option("--batch-delay", default=0.0, show_default=True, type=click.FloatRange(0, 3600),
              help="With --batch: seconds each sandbox batch stays in progress.")
@click.option("--prices", "prices_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="With --batch: price file naming sandbox-judge (default: the example placeholder price).")
def command(calls: int, rps: float, concurrency: int, as_json: bool, batch: bool, batch_size: int,
            batch_delay: float, prices_file: Path | None) -> None:
    """10,000 judge calls against the sandbox judge: achieved rate vs limit, CPU per call, peak memory."""
    prices = load_prices(prices_file) if prices_file is not None else None
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-judge-") as tmp:
        db = Path(tmp) / "judge.duckdb"
        t0 = time.perf_counter()
        n_events = build_store(db, calls)
        build_s = time.perf_counter() - t0
        rss_before = peak_rss_mb()
        if batch:
            both = anyio.run(lambda: batch_bench(db, rps=rps, concurrency=concurrency, batch_size=batch_size,
                                                 batch_delay_s=batch_delay, prices=prices), backend="asyncio")
            _batch_out({"bench": "judge-batch", **both, "store_build_s": round(build_s, 3)}, as_json)
            return
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


def _batch_out(figures: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(msgspec.json.encode(figures).decode())
        return
    on, b = figures["online"], figures["batch"]
    click.echo(
        f"judge bench, {figures['items']} items both ways: online {on['wall_ms_per_item']} ms wall per item "
        f"(limit {on['rps_limit']:g}/s, concurrency {on['concurrency']}), USD {on['usd']:.6f}; batch "
        f"{b['wall_ms_per_item']} ms wall per item ({b['batches']} batches of up to {b['batch_size']}, "
        f"{b['batch_delay_s']:g} s in progress each), USD {b['usd']:.6f} ({figures['usd_batch_over_online']} of "
        f"online); items with other labels: {figures['labels_differ']}; price: {figures['price']['from']}"
    )
