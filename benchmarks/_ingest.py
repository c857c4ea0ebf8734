"""`searchtrace bench ingest`: the store's public append path against raw DuckDB bulk and naive inserts, same rows.

The headline store figure is the async Writer (what the engine and the judge append through), fed by many
producers; EventLog.append (one synchronous transaction per call) is reported next to it. The raw figure inserts
the store's own rows, exported losslessly, as Arrow tables in the fastest batch size tried.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import click
import duckdb
import pyarrow as pa

from searchtrace.benchmarks._synthetic import batches
from searchtrace.store import DDL, MAX_FLUSH_EVENTS, OFFLINE, EventLog, bulk_appends, open_writer

RAW_BATCHES = (50_000, 122_880)  # rows per INSERT tried for the raw bulk path; the fastest is reported


def _fresh(path: Path) -> Path:
    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)
    return path


def bench_store(path: Path, n: int, batch: int) -> dict[str, float]:
    """EventLog.append in batches of `batch`; the clock runs only inside append (generation is excluded)."""
    log = EventLog(_fresh(path))
    spent = 0.0
    try:
        with bulk_appends(log):
            for events in batches(n, batch):
                t0 = time.perf_counter()
                log.append(events)
                spent += time.perf_counter() - t0
    finally:
        t0 = time.perf_counter()
        log.close()  # final CHECKPOINT
        closing = time.perf_counter() - t0
    return {"append_s": spent, "checkpoint_s": closing}


def bench_writer(
    path: Path, n: int, producers: int, per_call: int, *, seed: int = 42, tuning: bool = True
) -> dict[str, float]:
    """`producers` anyio tasks each awaiting Writer.append of `per_call` events; group commit does the batching.

    The events are made before the clock starts; the clock stops when the last append is acknowledged (committed).
    `tuning`: inside `bulk_appends` (as an import is); off, the Writer as recording and judging use it.
    """
    log = EventLog(_fresh(path))
    work = list(batches(n, per_call, seed=seed))
    commits = 0

    async def main() -> float:
        nonlocal commits
        async with open_writer(log) as writer:
            async def producer(k: int) -> None:
                for events in work[k::producers]:
                    await writer.append(events)

            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for k in range(producers):
                    tg.start_soon(producer, k)
            spent = time.perf_counter() - t0
            commits = writer.commits
        return spent

    try:
        if tuning:
            with bulk_appends(log):
                spent = anyio.run(main)
        else:
            spent = anyio.run(main)
    finally:
        t0 = time.perf_counter()
        log.close()  # final CHECKPOINT
        closing = time.perf_counter() - t0
    return {"append_s": spent, "commits": commits, "checkpoint_s": closing}


def bench_prepare(path: Path, n: int, per_flush: int, *, seed: int = 42) -> dict[str, Any]:
    """The Writer's preparing step alone, no database work: positions, ids checked against those stored, encoding,
    the hash chain and the Arrow columns of flushes of `per_flush` events, each prepared on an empty store and
    discarded. A writer that prepares in Python cannot append faster than this (a lower bound of its cost: on a
    store that holds rows, the id check looks through more)."""
    log = EventLog(_fresh(path))
    spent = 0.0
    last: Any = None
    try:
        for events in batches(n, per_flush, seed=seed):
            t0 = time.perf_counter()
            last = log.prepare_groups([(events, None)])
            spent += time.perf_counter() - t0
            log.discard_prepared(last)
    finally:
        log.close()
    stamp = last.tables[-1].column("recorded_at")[0].value  # the last flush's recorded_at (µs), for a check
    return {"append_s": spent, "position": last.delta.position, "hash": last.delta.hash, "recorded_at_us": stamp}


def _rows(store_path: Path, size: int) -> Iterator[pa.Table]:
    """The stored rows as DuckDB exports them losslessly (UUID as arrow.uuid, JSON as arrow.json): the Arrow
    types DuckDB inserts fastest (plain strings would be parsed as UUIDs and validated as JSON again)."""
    con = duckdb.connect(str(store_path), read_only=True, config=OFFLINE)
    try:
        con.execute("SET arrow_lossless_conversion = true")
        reader = con.sql("SELECT * FROM events ORDER BY position").to_arrow_reader(size)
        for rb in reader:
            yield pa.Table.from_batches([rb])
    finally:
        con.close()


def bench_raw(store_path: Path, path: Path, batch: int) -> dict[str, float]:
    """Arrow table -> `INSERT INTO events SELECT * FROM t`, one transaction per batch, checkpoint threshold 1 GB."""
    tables = list(_rows(store_path, batch))  # the store's own rows, read before the clock starts
    con = duckdb.connect(str(_fresh(path)), config=OFFLINE)
    try:
        con.execute(DDL)
        con.execute("SET checkpoint_threshold = '1GB'")
        spent = 0.0
        for table in tables:
            t0 = time.perf_counter()
            con.execute("BEGIN")
            con.register("__t", table)
            con.execute("INSERT INTO events SELECT * FROM __t")
            con.unregister("__t")
            con.execute("COMMIT")
            spent += time.perf_counter() - t0
        t0 = time.perf_counter()
        con.execute("CHECKPOINT")
        closing = time.perf_counter() - t0
    finally:
        con.close()
    return {"append_s": spent, "checkpoint_s": closing}


def bench_naive(store_path: Path, path: Path, n: int) -> dict[str, float]:
    """One `INSERT … VALUES` statement (and so one transaction) per row, on the first n stored rows."""
    rows = next(_rows(store_path, n)).to_pylist()
    con = duckdb.connect(str(_fresh(path)), config=OFFLINE)
    try:
        con.execute(DDL)
        sql = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        t0 = time.perf_counter()
        for r in rows:
            con.execute(sql, list(r.values()))
        spent = time.perf_counter() - t0
    finally:
        con.close()
    return {"append_s": spent, "rows": len(rows)}


def run(
    n: int, *, batch: int, naive_n: int, writer_n: int, folder: Path, producers: int = 50, per_call: int = 1_000
) -> dict[str, Any]:
    store_db = folder / "store.duckdb"
    store = bench_writer(store_db, n, producers, per_call)  # the public append path the engine and judge use
    prepared = bench_prepare(folder / "prepare.duckdb", n, MAX_FLUSH_EVENTS)
    untuned = bench_writer(folder / "untuned.duckdb", n, producers, per_call, tuning=False)
    sync = bench_store(folder / "sync.duckdb", n, batch)
    raw = {size: bench_raw(store_db, folder / "raw.duckdb", size) for size in RAW_BATCHES}
    best = min(raw, key=lambda size: raw[size]["append_s"])
    naive = bench_naive(store_db, folder / "naive.duckdb", naive_n)
    small = bench_writer(folder / "writer.duckdb", writer_n, 50, 100, seed=7) if writer_n else None
    store_eps = n / store["append_s"]
    sync_eps = n / sync["append_s"]
    raw_eps = n / raw[best]["append_s"]
    out: dict[str, Any] = {
        "events": n,
        "store_events_per_s": round(store_eps),
        "raw_bulk_events_per_s": round(raw_eps),
        "naive_events_per_s": round(naive["rows"] / naive["append_s"]),
        "store_vs_raw": round(store_eps / raw_eps, 3),
        "prepare_events_per_s": round(n / prepared["append_s"]),
        "prepare_vs_raw": round(n / prepared["append_s"] / raw_eps, 3),
        "prepare_note": f"the Writer's preparing step alone in flushes of {MAX_FLUSH_EVENTS:,} (ids, encoding, hash chain, "
        "Arrow columns; no database work): the most a writer preparing in Python reaches",
        "store_path": f"async Writer (group commit, pipelined flushes): {producers} anyio producers x "
        f"Writer.append of {per_call} events, acknowledged after commit",
        "store_commits": store["commits"],
        "store_untuned_events_per_s": round(n / untuned["append_s"]),
        "store_untuned_vs_raw": round(n / untuned["append_s"] / raw_eps, 3),
        "sync_append_events_per_s": round(sync_eps),
        "sync_append_vs_raw": round(sync_eps / raw_eps, 3),
        "store_batch": batch,
        "raw_bulk_method": f"Arrow table INSERT, {best} rows per transaction, checkpoint_threshold 1GB",
        "raw_bulk_by_batch": {str(s): round(n / r["append_s"]) for s, r in raw.items()},
        "store_with_checkpoint_events_per_s": round(n / (store["append_s"] + store["checkpoint_s"])),
        "sync_append_with_checkpoint_events_per_s": round(n / (sync["append_s"] + sync["checkpoint_s"])),
        "raw_bulk_with_checkpoint_events_per_s": round(n / (raw[best]["append_s"] + raw[best]["checkpoint_s"])),
        "naive_measured_rows": naive["rows"],
        "naive_note": f"one INSERT per row (autocommit) on the first {naive['rows']} rows; rate extrapolated",
    }
    if small is not None:
        out["writer_events"] = writer_n
        out["writer_events_per_s"] = round(writer_n / small["append_s"])
        out["writer_commits"] = small["commits"]
        out["writer_note"] = "50 anyio producers x Writer.append of 100 events each: every flush holds all that is in flight"
    return out


def _print_table(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"ingest of {result['events']:,} search-result events (~600 B payload)")
    table.add_column("path")
    table.add_column("events/s", justify="right")
    table.add_column("note")
    table.add_row("store: async Writer", f"{result['store_events_per_s']:,}", result["store_path"] + ", bulk tuning")
    table.add_row("store: async Writer, untuned", f"{result['store_untuned_events_per_s']:,}",
                  "the same without bulk_appends (as record and judge append)")
    table.add_row(
        "store: EventLog.append (sync)", f"{result['sync_append_events_per_s']:,}", f"{result['store_batch']:,} per append"
    )
    if "writer_events_per_s" in result:
        table.add_row("store: async Writer, small calls", f"{result['writer_events_per_s']:,}", result["writer_note"])
    table.add_row("store: preparing alone", f"{result['prepare_events_per_s']:,}", result["prepare_note"])
    table.add_row("raw DuckDB bulk", f"{result['raw_bulk_events_per_s']:,}", result["raw_bulk_method"])
    table.add_row("naive one row per statement", f"{result['naive_events_per_s']:,}", result["naive_note"])
    table.add_row("store incl. final checkpoint", f"{result['store_with_checkpoint_events_per_s']:,}", "")
    table.add_row("raw incl. final checkpoint", f"{result['raw_bulk_with_checkpoint_events_per_s']:,}", "")
    Console().print(table)
    Console().print(
        f"store / raw bulk = {result['store_vs_raw']:.0%} (EventLog.append alone: {result['sync_append_vs_raw']:.0%}); "
        f"preparing alone / raw bulk = {result['prepare_vs_raw']:.0%}"
    )


@click.command("ingest")
@click.option("--events", "n", type=click.IntRange(1), default=500_000, show_default=True)
@click.option("--batch", type=click.IntRange(1), default=50_000, show_default=True, help="Events per EventLog.append.")
@click.option("--producers", type=click.IntRange(1), default=50, show_default=True, help="anyio tasks appending.")
@click.option("--per-call", type=click.IntRange(1), default=1_000, show_default=True, help="Events per Writer.append.")
@click.option("--naive-events", type=click.IntRange(1), default=1_000, show_default=True)
@click.option(
    "--writer-events",
    type=click.IntRange(0),
    default=100_000,
    show_default=True,
    help="Events for a second Writer run with small calls (50 producers x 100 events); 0 skips it.",
)
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), help="Where the scratch databases go.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def command(
    n: int,
    batch: int,
    producers: int,
    per_call: int,
    naive_events: int,
    writer_events: int,
    folder: Path | None,
    as_json: bool,
) -> None:
    """Append N synthetic events through the store's Writer (and EventLog.append); compare raw and naive inserts."""
    with tempfile.TemporaryDirectory(prefix="searchtrace-bench-", dir=folder) as tmp:
        result = run(
            n,
            batch=batch,
            naive_n=min(naive_events, n),
            writer_n=min(writer_events, n),
            folder=Path(tmp),
            producers=producers,
            per_call=per_call,
        )
    if as_json:
        click.echo(json.dumps(result))
    else:
        _print_table(result)
