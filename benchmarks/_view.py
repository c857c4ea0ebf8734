"""`searchtrace bench view`: the explorer's API latency on the 100× store of `bench replay` (2.2M events).

The store is built as `bench replay` builds it (synthetic traces through the real `import`, then one report so
the typed projections are current, as `searchtrace view` makes them on start). Requests go through the real
Starlette app in process (httpx ASGI transport, no socket): the trajectory list cold (its first request builds
the list index of every trajectory for the judge run) and warm (filters and pages over the index), one
trajectory (timeline, items with verdicts, pages), one question across providers, and the items behind a count
of the report (`/api/items`: cold builds the item index of the judge run, warm pages a partition cell, the
rank-1 appearances of supported items and the results shown, each at a random offset). Each median is given in
wall time and in this process's CPU time (the requests run in process: CPU time is what load on a shared
machine does not inflate). Baseline in the same run: the warm `report --json` of the same store.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import click
import httpx

from searchtrace.benchmarks._replay import generate

TARGET_MS = 200.0


@dataclass
class ViewTiming:
    scale: int
    events: int
    trajectories: int
    build_s: float
    report_warm_s: float
    list_cold_ms: float
    list_warm_ms: float
    list_filtered_ms: float
    trajectory_ms: float
    trajectory_p90_ms: float
    question_ms: float
    runs_ms: float
    items_cold_ms: float
    items_first_ms: float
    items_ms: float
    items_p90_ms: float
    list_warm_cpu_ms: float
    trajectory_cpu_ms: float
    items_first_cpu_ms: float
    items_cpu_ms: float
    requests: int


def build(folder: Path, scale: int, seed: int) -> tuple[Path, int, float]:
    """The `bench replay` store at `scale` (kept in `folder` and reused when present); (db, events, seconds)."""
    from searchtrace.replay.interchange import import_files
    from searchtrace.store import EventLog

    db = folder / "bench.duckdb"
    t0 = time.perf_counter()
    if not db.exists():
        files = generate(folder, scale, seed)
        with EventLog(db) as log:
            import_files(log, [files.traces], [files.judgments], [files.audit])
    report_seconds(db)  # projections current, views installed (what `view` does on start)
    with EventLog(db, read_only=True) as log:
        events = log.head
    return db, events, time.perf_counter() - t0


def report_seconds(db: Path) -> float:
    """`searchtrace report --json --bootstrap 0` in process (the baseline: the same store, the same run)."""
    from searchtrace import pipeline

    t0 = time.perf_counter()
    pipeline.report(db, bootstrap=0)
    return time.perf_counter() - t0


async def _measure(db: Path, repeat: int, seed: int) -> dict[str, Any]:
    from searchtrace.web import create_app

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    app = create_app(db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765",
                                 cookies={"searchtrace-view-8765": app.state.token}) as c:

        cpu: dict[str, list[float]] = {"list": [], "trajectory": [], "items": [], "first": []}

        async def ms(url: str, kind: str | None = None) -> tuple[float, Any]:
            t0, c0 = time.perf_counter(), time.process_time()
            r = await c.get(url)
            elapsed = (time.perf_counter() - t0) * 1000
            if kind is not None:
                cpu[kind].append((time.process_time() - c0) * 1000)
            if r.status_code != 200:
                raise click.ClickException(f"{url}: HTTP {r.status_code} {r.text[:200]}")
            return elapsed, r.json()

        out["list_cold_ms"], first = await ms("/api/trajectories?limit=50")
        total = first["total"]
        warm, filtered, trajs, questions, runs = [], [], [], [], []
        for i in range(repeat):
            warm.append((await ms(f"/api/trajectories?limit=50&offset={rng.randrange(0, max(1, total - 50))}", "list"))[0])
            provider = first["facets"]["providers"][i % len(first["facets"]["providers"])]
            filtered.append((await ms(f"/api/trajectories?limit=50&provider={provider}&correct=true&partition=MISSED"
                                      f"&q={rng.choice('abcdefghij')}"))[0])
        ids = (await ms(f"/api/trajectories?limit=500&offset={rng.randrange(0, max(1, total - 500))}"))[1]["trajectories"]
        for t in rng.sample(ids, min(repeat, len(ids))):
            trajs.append((await ms(f"/api/trajectories/{t['trajectory_id']}", "trajectory"))[0])
            questions.append((await ms(f"/api/questions/{t['qid']}"))[0])
        for _ in range(min(repeat, 5)):
            runs.append((await ms("/api/runs"))[0])
        providers = first["facets"]["providers"]
        out["items_cold_ms"], _ = await ms(f"/api/items?label=items&arm={providers[0]}")
        kinds = ("label=partition&partition=MISSED", "label=surface_supported_items&rank=1", "label=results_shown")
        items, firsts = [], []
        combos = [(k, a) for k in kinds for a in providers]  # each count once: its first page finds its rows
        for i in range(max(repeat, len(combos))):  # then another page of it reads the rows kept
            kind, arm = combos[i % len(combos)]
            probe = f"/api/items?{kind}&arm={arm}"
            took, body = await ms(probe, "first" if i < len(combos) else None)
            if i < len(combos):
                firsts.append(took)
            items.append((await ms(f"{probe}&offset={rng.randrange(0, max(1, body['total'] - 50))}", "items"))[0])
    app.state.source.close()
    out.update(
        trajectories=total, list_warm_ms=statistics.median(warm), list_filtered_ms=statistics.median(filtered),
        trajectory_ms=statistics.median(trajs), trajectory_p90_ms=sorted(trajs)[int(0.9 * (len(trajs) - 1))],
        question_ms=statistics.median(questions), runs_ms=statistics.median(runs),
        items_first_ms=statistics.median(firsts), items_first_cpu_ms=statistics.median(cpu["first"]),
        items_ms=statistics.median(items), items_p90_ms=sorted(items)[int(0.9 * (len(items) - 1))],
        list_warm_cpu_ms=statistics.median(cpu["list"]), trajectory_cpu_ms=statistics.median(cpu["trajectory"]),
        items_cpu_ms=statistics.median(cpu["items"]),
        requests=1 + 2 * repeat + 1 + 2 * len(trajs) + len(runs) + 1 + 2 * len(items),
    )
    return out


@contextmanager
def _folder(workdir: Path | None, scale: int) -> Iterator[Path]:
    if workdir is not None:
        folder = workdir / f"{scale}x"
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix=f"searchtrace-bench-view-{scale}x-") as tmp:
        yield Path(tmp)


@click.command("view")
@click.option("--scale", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="Multiple of the paper's volume (100: 2.2M events, 30,000 trajectories).")
@click.option("--repeat", type=click.IntRange(3, 1000), default=20, show_default=True, help="Requests per kind.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the store here (and reuse it next time) instead of a temporary folder.")
@click.option("--json", "as_json", is_flag=True)
def command(scale: int, repeat: int, seed: int, workdir: Path | None, as_json: bool) -> None:
    """API latency of `searchtrace view` on the `bench replay` store (target: list page and one trajectory < 200 ms)."""
    with _folder(workdir, scale) as folder:
        db, events, build_s = build(folder, scale, seed)
        report_warm = report_seconds(db)
        m = anyio.run(_measure, db, repeat, seed)
    row = ViewTiming(scale=scale, events=events, build_s=round(build_s, 1), report_warm_s=round(report_warm, 3),
                     trajectories=int(m.pop("trajectories")), requests=int(m.pop("requests")),
                     **{k: round(float(v), 1) for k, v in m.items()})
    targets = {"list_page_under_200ms": row.list_warm_ms < TARGET_MS, "trajectory_under_200ms": row.trajectory_ms < TARGET_MS,
               "items_under_200ms": max(row.items_first_ms, row.items_ms) < TARGET_MS}
    if as_json:
        click.echo(json.dumps({"timing": asdict(row), "targets": targets}, indent=1))
        return
    click.echo(
        f"{scale}x: {events:,} events, {row.trajectories:,} trajectories (store built/caught up in {row.build_s} s; "
        f"baseline report --json warm {row.report_warm_s} s)\n"
        f"  trajectory list: cold {row.list_cold_ms} ms (builds the index), warm page {row.list_warm_ms} ms, "
        f"filtered {row.list_filtered_ms} ms (median of {repeat})\n"
        f"  one trajectory: median {row.trajectory_ms} ms, p90 {row.trajectory_p90_ms} ms; one question "
        f"{row.question_ms} ms; runs {row.runs_ms} ms\n"
        f"  items behind a count: cold {row.items_cold_ms} ms (builds the item index), a count's first page "
        f"{row.items_first_ms} ms, another page of it {row.items_ms} ms (p90 {row.items_p90_ms} ms)\n"
        f"  CPU time (median): list page {row.list_warm_cpu_ms} ms, trajectory {row.trajectory_cpu_ms} ms, "
        f"items first page {row.items_first_cpu_ms} ms, another page {row.items_cpu_ms} ms\n"
        f"  targets (< {TARGET_MS:g} ms): " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in targets.items())
    )
