"""`searchtrace bench scale`: docs/how-to/scale.md fan-out on Ray, measured on the cluster it joins (or a local one).

- Throughput: the same sandbox run recorded by one process and by N shards (`record --ray --shards N`), every
  endpoint bound to a key's rate (`--rps`, per key: each shard holds keys of its own); goal ≥ 0.9·N× the one
  process's trajectories/s (the shards' engine time; the wall time with actor start-up and merge is given too).
- Rate held: W workers (Ray actors) share one quota domain of R/s through its ledger's slots and send an HTTP GET
  to a loopback server here as fast as their limiter lets them; the server keeps each request's arrival time:
  achieved rate and the busiest 1-s window, counted where the requests arrive (goals ≥ 0.9 R and ≤ 1.1 R).
- Memory: each shard actor's peak resident memory.
Merge, ship and replica rates are `bench merge` and `bench ship`.
"""

from __future__ import annotations

import bisect
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import click

from searchtrace.adapters import RateLimiter, paper_providers
from searchtrace.pipeline import connect_ray, hold_share, quota_actor


class _Counted(BaseHTTPRequestHandler):
    """Answers every request with an empty 200, noting its arrival time first (keep-alive: no connect per call)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.server.arrivals.append(time.monotonic())  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def arrival_server() -> Iterator[tuple[str, list[float]]]:
    """A loopback HTTP server in a thread of this process: its URL and the arrival time of every request it got."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counted)
    server.daemon_threads = True
    arrivals: list[float] = []
    server.arrivals = arrivals  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", arrivals
    finally:
        server.shutdown()
        server.server_close()


class PacedWorker:
    """A worker of the rate-held measurement (the body of a Ray async actor)."""

    async def warm(self, domain: str) -> None:
        """Its imports done and the domain's ledger found before the clock starts: on a loaded machine they took
        the whole measured window, and no call was sent."""
        import httpx  # noqa: F401

        await quota_actor(domain).__ray_ready__.remote()

    async def run(self, domain: str, name: str, until: float, concurrency: int, url: str) -> int:
        """Sends GET `url` at the pace of the domain's slots granted to it until `until` (wall clock); how many."""
        import httpx

        limiter = RateLimiter(1.0)  # paced by the ledger's slots from the first call on
        sent = 0

        async def caller(client: httpx.AsyncClient) -> None:
            nonlocal sent
            while True:
                await limiter.acquire()
                if time.time() >= until:
                    return
                sent += 1
                await client.get(url)

        async with httpx.AsyncClient(timeout=30.0) as client, hold_share(quota_actor(domain), name, limiter):
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(caller, client)
        return sent


def busiest_window(stamps: list[float], width: float = 1.0) -> int:
    """The most calls in any window [t, t + width) (a window starting at each call covers every maximum)."""
    s = sorted(stamps)
    return max((bisect.bisect_left(s, t + width) - i for i, t in enumerate(s)), default=0)


def held(arrivals: list[float], rate: float) -> dict[str, Any]:
    """Achieved rate and busiest 1-s window of requests counted where they arrived."""
    if len(arrivals) < 2:
        raise click.ClickException(f"{len(arrivals)} request(s) arrived: no worker was granted the quota's slots")
    span = max(arrivals) - min(arrivals)
    achieved = (len(arrivals) - 1) / span  # calls per second between the first arrival and the last
    busiest = busiest_window(arrivals)
    return {"rate": rate, "calls": len(arrivals), "span_s": round(span, 3),
            "achieved_per_s": round(achieved, 2), "achieved_vs_rate": round(achieved / rate, 4),
            "busiest_1s_window": busiest, "busiest_vs_rate": round(busiest / rate, 3)}


def rate_held(workers: int = 4, rate: float = 200.0, seconds: float = 5.0, concurrency: int = 4,
              domain: str = "bench:scale") -> dict[str, Any]:
    """W workers sharing one quota domain of `rate`/s for `seconds`, counted at a loopback server."""
    import ray

    quota_actor(domain, rate)
    actor: Any = ray.remote(PacedWorker)  # Ray's handle types do not carry remote methods
    handles = [actor.options(num_cpus=0, scheduling_strategy="SPREAD").remote() for _ in range(workers)]
    ray.get([h.warm.remote(domain) for h in handles])  # started and warm: the clock below is the pacing alone
    with arrival_server() as (url, arrivals):
        until = time.time() + seconds
        ray.get([h.run.remote(domain, f"w{k}", until, concurrency, url) for k, h in enumerate(handles)])
        counted = list(arrivals)
    for h in handles:
        ray.kill(h)
    return {"workers": workers, **held(counted, rate)}


def _config(qfile: Path, rps: float, run_id: str) -> Any:
    from searchtrace.engine import parse_config

    ep = {"rps": rps, "concurrency": 16, "timeout_s": 30.0}
    return parse_config({
        "run_id": run_id, "agent": {"model": "sandbox-agent", **ep},
        "providers": {k: dict(ep) for k in paper_providers()}, "fetch": {**ep, "cache_dir": ""},
        "limits": {"max_trajectories": 32}, "dataset": {"path": str(qfile)},
    }, "<bench scale>")


def throughput(shards: int, questions: int, rps: float, folder: Path) -> dict[str, Any]:
    """One process against `shards` Ray shards on the same key-bound run (each process its own keys at `rps`)."""
    from searchtrace import pipeline
    from searchtrace.benchmarks._fanout import _questions

    qfile = folder / "questions.jsonl"
    _questions(qfile, questions)
    one_cfg = _config(qfile, rps, "bench-scale")
    one = anyio.run(lambda: pipeline.record(one_cfg, folder / "one.duckdb", pipeline.aim(one_cfg, sandbox=True),
                                            progress=False), backend="asyncio")
    many = pipeline.record_on_ray(_config(qfile, rps, "bench-scale"), folder / "many.duckdb", shards=shards,
                                  sandbox=True)
    done = [d for d in many.done if d.summary is not None]
    engine_s = max(d.summary.elapsed_s for d in done if d.summary is not None)
    one_tps = one.recorded / one.elapsed_s
    many_tps = many.recorded / engine_s
    return {
        "shards": shards, "trajectories": one.recorded, "rps_per_key": rps,
        "one_process_trajectories_per_s": round(one_tps, 2),
        "shards_trajectories_per_s": round(many_tps, 2),
        "speedup": round(many_tps / one_tps, 2), "goal_speedup": round(0.9 * shards, 2),
        "shards_wall_s": round(many.elapsed_s, 2), "one_process_s": round(one.elapsed_s, 2),
        "shards_wall_trajectories_per_s": round(many.recorded / many.elapsed_s, 2),
        "merged_events": many.merged.appended if many.merged else 0, "finished": many.finished,
        "max_rss_mb_per_worker": [round(d.max_rss_mb, 1) for d in many.done],
        # the hash split is uneven on small runs: each shard's own rate shows whether a shard kept its key busy
        "cells_per_shard": [d.summary.recorded if d.summary else 0 for d in many.done],
        "per_shard_trajectories_per_s": [round(d.summary.recorded / d.summary.elapsed_s, 2) if d.summary else 0.0
                                         for d in many.done],
        "nodes": len({d.node for d in many.done}),
    }


@click.command("scale")
@click.option("--ray", "address", default="auto", show_default=True, help="The Ray cluster (auto: this machine's, else a local one).")
@click.option("--shards", type=click.IntRange(1), default=2, show_default=True)
@click.option("--questions", type=click.IntRange(1), default=20, show_default=True, help="Questions (x 3 personas).")
@click.option("--rps", type=float, default=20.0, show_default=True, help="Each key's rate, per endpoint.")
@click.option("--quota-rate", type=float, default=200.0, show_default=True, help="R of the shared quota domain.")
@click.option("--workers", type=click.IntRange(1), default=4, show_default=True, help="Workers sharing the quota.")
@click.option("--seconds", type=float, default=5.0, show_default=True, help="How long the quota is held.")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), help="Where the scratch databases go.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def command(address: str, shards: int, questions: int, rps: float, quota_rate: float, workers: int, seconds: float,
            folder: Path | None, as_json: bool) -> None:
    """N Ray shards against one process at a key-bound rate; a quota's rate held across workers; memory per worker."""
    connect_ray(address)
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-", dir=folder) as tmp:
        result = {"throughput": throughput(shards, questions, rps, Path(tmp)),
                  "rate_held": rate_held(workers, quota_rate, seconds)}
    if as_json:
        click.echo(json.dumps(result))
        return
    t, q = result["throughput"], result["rate_held"]
    click.echo(f"{t['trajectories']} trajectories at {rps}/s per key: one process {t['one_process_trajectories_per_s']}"
               f"/s, {shards} shards on {t['nodes']} node(s) {t['shards_trajectories_per_s']}/s = {t['speedup']}x "
               f"(goal {t['goal_speedup']}x; cells per shard {t['cells_per_shard']}, each shard "
               f"{t['per_shard_trajectories_per_s']}/s); with actor start-up and merge {t['shards_wall_trajectories_per_s']}/s; "
               f"peak memory per worker {t['max_rss_mb_per_worker']} MB")
    click.echo(f"quota of {quota_rate}/s across {workers} workers: achieved {q['achieved_per_s']}/s "
               f"({q['achieved_vs_rate']:.2%} of R), busiest 1-s window {q['busiest_1s_window']} "
               f"({q['busiest_vs_rate']:.2f} R), counted where the requests arrived")
