"""`searchtrace bench ship --to postgresql://…`: segments shipped to the central PostgreSQL log and the log pulled
into a DuckDB replica (docs/how-to/scale.md), against the store's own ingest of the same rows in the same run.

Each figure is events per second of wall time with the clock around the work alone (segments are built, and
shipper processes started, before it starts). The log is written in schemas of its own (`bench_…`, dropped at
the end), so any database the URL names will do.
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
import uuid
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from searchtrace.benchmarks._synthetic import batches
from searchtrace.store import SHIP_BATCH, EventLog, bulk_appends, central, pull, redacted, ship, verify


def _in_schema(url: str, schema: str) -> str:
    """The URL with the connection's search_path set to `schema` (libpq's `options`)."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-c search_path={schema}')}"


def _ingest(path: Path, n: int, seed: int) -> float:
    """A segment of n synthetic events through EventLog.append in 50k batches (bulk tuning); seconds spent."""
    spent = 0.0
    with EventLog(path) as log, bulk_appends(log):
        for events in batches(n, 50_000, seed=seed):
            t0 = time.perf_counter()
            log.append(events)
            spent += time.perf_counter() - t0
    return spent


def _ship_child(db: str, url: str, batch: int, start: Barrier) -> None:
    """One shipper process: opens its segment and the log, waits for the others, ships everything."""
    from searchtrace.engine import configure_logging

    configure_logging(json=False, verbosity=0)  # a spawned process starts with structlog's print-everything default
    with central(url, "searchtrace bench ship") as log_central, EventLog(db) as log:
        start.wait()
        ship(log, log_central, batch=batch)


def _ship_concurrently(dbs: list[Path], url: str, batch: int) -> float:
    """Every segment shipped by a process of its own, at once; seconds from the start signal to the last done."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(len(dbs) + 1)  # the children import the package and connect before the clock starts
    procs = [ctx.Process(target=_ship_child, args=(str(db), url, batch, start)) for db in dbs]
    for p in procs:
        p.start()
    start.wait(timeout=120)
    t0 = time.perf_counter()
    for p in procs:
        p.join()
    spent = time.perf_counter() - t0
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    if bad:
        raise click.ClickException(f"a shipper process failed (exit {bad[0]})")
    return spent


def run(url: str, n: int, *, writers: int, batch: int, folder: Path) -> dict[str, Any]:
    central(url, "searchtrace bench ship").close()  # the URL and the extra checked, one line if either fails
    import psycopg

    tag = uuid.uuid4().hex[:8]
    one, many = f"bench_{tag}_one", f"bench_{tag}_many"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {one}; CREATE SCHEMA {many}")
    try:
        dbs = [folder / f"segment-{i}.duckdb" for i in range(writers)]
        ingest_s = [_ingest(db, n, seed=42 + i) for i, db in enumerate(dbs)]
        with central(_in_schema(url, one)) as log_central, EventLog(dbs[0]) as log:
            t0 = time.perf_counter()
            ship(log, log_central, batch=batch)
            one_s = time.perf_counter() - t0
        many_s = _ship_concurrently(dbs, _in_schema(url, many), batch)
        with central(_in_schema(url, many)) as log_central, EventLog(folder / "replica.duckdb") as replica:
            t0 = time.perf_counter()
            pulled = pull(log_central, replica)
            pull_s = time.perf_counter() - t0
            report = verify(replica.cursor())
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {one} CASCADE; DROP SCHEMA {many} CASCADE")
    ingest_eps = n * writers / sum(ingest_s)
    ship_eps = n / one_s
    many_eps = n * writers / many_s
    pull_eps = pulled.events / pull_s
    return {
        "log": redacted(url),
        "events_per_segment": n,
        "writers": writers,
        "batch": batch,
        "ingest_events_per_s": round(ingest_eps),
        "ship_events_per_s": round(ship_eps),
        "ship_concurrent_events_per_s": round(many_eps),
        "replica_events_per_s": round(pull_eps),
        "ship_vs_ingest": round(ship_eps / ingest_eps, 3),
        "ship_concurrent_vs_ingest": round(many_eps / ingest_eps, 3),
        "replica_vs_ingest": round(pull_eps / ingest_eps, 3),
        "replica_events": pulled.events,
        "replica_verify": report.line(),
    }


@click.command("ship")
@click.option("--to", "url", required=True, help="A PostgreSQL database to write scratch schemas in.")
@click.option("--events", "n", type=click.IntRange(1), default=100_000, show_default=True, help="Events per segment.")
@click.option("--writers", type=click.IntRange(1, 16), default=2, show_default=True,
              help="Segments shipped at once, each by a process of its own.")
@click.option("--batch", type=click.IntRange(1), default=SHIP_BATCH, show_default=True, help="Events per transaction.")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), help="Where the segments go.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def command(url: str, n: int, writers: int, batch: int, folder: Path | None, as_json: bool) -> None:
    """Ship synthetic segments to the central log (one, then WRITERS at once) and pull a replica; rates against the
    store's own ingest of the same events."""
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-", dir=folder) as tmp:
        result = run(url, n, writers=writers, batch=batch, folder=Path(tmp))
    if as_json:
        click.echo(json.dumps(result))
        return
    click.echo(f"{result['events_per_segment']:,} events per segment, batches of {result['batch']:,}, "
               f"log {result['log']}")
    click.echo(f"  ingest (EventLog.append)       {result['ingest_events_per_s']:>9,} events/s")
    click.echo(f"  ship, one segment              {result['ship_events_per_s']:>9,} events/s  "
               f"({result['ship_vs_ingest']:.0%} of ingest)")
    click.echo(f"  ship, {writers} segments at once       {result['ship_concurrent_events_per_s']:>9,} events/s  "
               f"({result['ship_concurrent_vs_ingest']:.0%} of ingest)")
    click.echo(f"  replica pull                   {result['replica_events_per_s']:>9,} events/s  "
               f"({result['replica_vs_ingest']:.0%} of ingest)")
    click.echo(f"  replica verify: {result['replica_verify']}")
