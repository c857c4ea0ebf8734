"""`searchtrace bench merge`: docs/how-to/scale.md merge rate against the store's own ingest rate, measured in the same run.

The same N synthetic events (the `bench ingest` rows) are appended once through the async Writer into one store
(the `bench ingest` headline path) and, split by stream into S segments, merged into an empty store; the merge
clock covers everything `searchtrace merge` does (opening and verifying every segment, the conflict checks, the
appends with their hash chain, blobs). Merging the same segments again (which appends nothing) is timed too.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from searchtrace.benchmarks._ingest import bench_writer
from searchtrace.benchmarks._synthetic import events
from searchtrace.store import EventLog, bulk_appends, verify


def make_segments(folder: Path, n: int, segments: int, batch: int = 20_000) -> list[Path]:
    """The events of `events(n)`, stream k into segment k mod S, each segment an ordinary store."""
    parts: list[list[Any]] = [[] for _ in range(segments)]
    for ev in events(n):
        parts[int(ev.stream_id.rsplit("-", 1)[1]) % segments].append(ev)
    paths = []
    for k, part in enumerate(parts):
        path = folder / f"segment{k}.duckdb"
        with EventLog(path) as log, bulk_appends(log):
            for i in range(0, len(part), batch):
                log.append(part[i : i + batch])
        paths.append(path)
    return paths


def run(n: int, segments: int, folder: Path, *, producers: int = 50, per_call: int = 1_000) -> dict[str, Any]:
    ingest = bench_writer(folder / "ingest.duckdb", n, producers, per_call)
    paths = make_segments(folder, n, segments)
    target = folder / "merged.duckdb"
    with EventLog(target) as log:
        t0 = time.perf_counter()
        merged = log.merge(paths)
        merge_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = log.merge(paths)
        again_s = time.perf_counter() - t0
        report = verify(log.cursor())
    appended = sum(m.appended for m in merged)
    if appended != n or any(m.appended for m in again) or not report.ok:
        raise click.ClickException(f"merge appended {appended} of {n} events ({report.line()})")
    ingest_eps = n / ingest["append_s"]
    merge_eps = n / merge_s
    return {
        "events": n,
        "segments": segments,
        "merge_events_per_s": round(merge_eps),
        "ingest_events_per_s": round(ingest_eps),
        "merge_vs_ingest": round(merge_eps / ingest_eps, 3),
        "merge_s": round(merge_s, 3),
        "merge_again_s": round(again_s, 3),
        "merge_note": "searchtrace merge of S segments into an empty store: open + verify each segment, conflict "
                      "checks, appends keeping recorded_at (new positions and hash chain)",
        "ingest_note": f"bench ingest's headline path: {producers} anyio producers x Writer.append of {per_call} "
                       "events, bulk tuning",
    }


@click.command("merge")
@click.option("--events", "n", type=click.IntRange(1), default=200_000, show_default=True)
@click.option("--segments", type=click.IntRange(1), default=2, show_default=True, help="Segments the events are split into (by stream).")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), help="Where the scratch databases go.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def command(n: int, segments: int, folder: Path | None, as_json: bool) -> None:
    """Merge N synthetic events from S segments; compare with ingesting them through the Writer (events/s)."""
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-", dir=folder) as tmp:
        result = run(n, segments, Path(tmp))
    if as_json:
        click.echo(json.dumps(result))
        return
    click.echo(f"merge of {n:,} events from {segments} segments: {result['merge_events_per_s']:,} events/s "
               f"({result['merge_s']} s; again, appending nothing: {result['merge_again_s']} s)")
    click.echo(f"ingest of the same events through the Writer: {result['ingest_events_per_s']:,} events/s; "
               f"merge / ingest = {result['merge_vs_ingest']:.2f}")
