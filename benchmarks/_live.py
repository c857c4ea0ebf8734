"""`searchtrace bench live`: what readers on `<db>.sock` cost a run that records (docs/concepts/security.md: at most 1.2× slower).

The writer appends synthetic events (the store's append path, one transaction a batch) while serving reads, as
`record` does. N reader processes hammer the socket during every other segment of the appends and are stopped
(SIGSTOP, then a pause for what they had sent to be answered) during the segments between, so each slice of time
with readers has slices without them beside it: the same store, the same size, the same moment's load on the
machine. Comparing two fresh stores run one after the other does not measure this on a shared machine: with no
readers at all, the second of two identical runs took 1.07-1.41x the first. Then one reader pulls many rows
through a session while the writer's RSS is sampled: streamed batches keep it flat.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import click

from searchtrace.benchmarks._synthetic import batches
from searchtrace.pipeline import serving_reads
from searchtrace.store import EventLog

TARGET = 1.2  # readers may slow the run by at most this factor
TIMEOUT_VAR = "SEARCHTRACE_READ_TIMEOUT_S"
SEGMENT = 20  # transactions a segment; segments alternate without and with readers
READY_S = 60.0  # for each reader's first answer
SETTLE_S = 0.3  # after stopping the readers: the statements they had sent are answered (with their pauses)

_HAMMER = """
import sys, time
from searchtrace.store._readserver import RemoteCursor
qs = ["SELECT count(*) FROM events", "SELECT type, count(*) FROM events GROUP BY 1",
      "SELECT max(position) FROM events", "SELECT * FROM events ORDER BY position DESC LIMIT 50"]
n = 0
while True:
    try:
        with RemoteCursor(sys.argv[1]) as cur:
            for q in qs:
                cur.execute(q).fetchall()
                n += 1
                if n == 1:
                    print("reading", flush=True)
    except Exception:
        time.sleep(0.05)
"""

_PULL = """
import sys
from searchtrace.store._readserver import RemoteCursor
n = 0
with RemoteCursor(sys.argv[1]) as cur:
    cur.execute(f"SELECT i, 'row ' || i AS label FROM range({int(sys.argv[2])}) t(i)")
    while rows := cur.fetchmany(10000):
        n += len(rows)
print(n)
"""


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _spawn(code: str, *args: str, output: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE if output else subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)


def _append_seconds(db: Path, events: int, batch: int, readers: int, seed: int, segment: int = SEGMENT
                    ) -> tuple[float, float]:
    """Seconds of the writer's appends (events made before the clock) without and with `readers` processes
    reading, in alternate segments of `segment` transactions."""
    work = list(batches(events, batch, seed=seed))
    segment = max(1, min(segment, len(work) // 2))  # at least one segment each way
    spent = {False: 0.0, True: 0.0}
    with EventLog(db) as log, serving_reads(log):
        procs = [_spawn(_HAMMER, str(db), output=True) for _ in range(readers)]
        try:
            for p in procs:  # each has had a statement answered: connected and reading
                assert p.stdout is not None
                ready, _, _ = select.select([p.stdout], [], [], READY_S)
                if not ready or not p.stdout.readline():
                    raise click.ClickException(f"a reader got no answer from {db}.sock within {READY_S:g} s")
            reading = True
            for k in range(0, len(work), segment):
                reading = not reading  # without readers too: then both sides are alone (a check of the method)
                for p in procs:
                    os.kill(p.pid, signal.SIGCONT if reading else signal.SIGSTOP)
                # stopped, what they had asked is answered; running, they are at it (both sides wait alike: the
                # first appends after a pause are not like the rest)
                time.sleep(SETTLE_S)
                for evs in work[k : k + segment]:
                    t0 = time.perf_counter()
                    log.append(evs)
                    spent[reading] += time.perf_counter() - t0
        finally:
            for p in procs:
                p.kill()  # a stopped process is killed too
                p.communicate()
    return spent[False], spent[True]


def _pull_rss(db: Path, rows: int) -> dict[str, float]:
    """The writer's RSS before and at most while one reader pulls `rows` rows through its session (the statement
    limit raised for it: 10M rows take longer than the default 30 s)."""
    old = os.environ.get(TIMEOUT_VAR)
    os.environ[TIMEOUT_VAR] = "3600"
    try:
        return _pull(db, rows)
    finally:
        if old is None:
            os.environ.pop(TIMEOUT_VAR, None)
        else:
            os.environ[TIMEOUT_VAR] = old


def _pull(db: Path, rows: int) -> dict[str, float]:
    with EventLog(db) as log, serving_reads(log):
        base = peak = _rss_mb()
        proc = _spawn(_PULL, str(db), str(rows), output=True)
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.wait(0.05):
                peak = max(peak, _rss_mb())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        out, _ = proc.communicate()
        spent = time.perf_counter() - t0
        stop.set()
        sampler.join()
    return {"rows": float(int(out.strip() or 0)), "pull_s": round(spent, 2), "rss_base_mb": round(base, 1),
            "rss_peak_mb": round(peak, 1), "rss_growth_mb": round(peak - base, 1)}


def measure(events: int, batch: int, readers: int, rows: int, rounds: int = 3, seed: int = 1) -> dict[str, object]:
    """Append time without and with readers, in alternate segments of one store, `rounds` times (fresh stores;
    the median ratio is the figure), and the pull's RSS growth."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pairs = [_append_seconds(folder / f"live{k}.duckdb", events, batch, readers, seed) for k in range(rounds)]
        pull = _pull_rss(folder / "live0.duckdb", rows)
    ratios = sorted(r / a for a, r in pairs if a > 0)
    ratio = ratios[len(ratios) // 2] if ratios else 0.0
    return {"events": events, "batch": batch, "readers": readers, "rounds": rounds, "segment": SEGMENT,
            "alone_s": [round(a, 3) for a, _ in pairs], "with_readers_s": [round(r, 3) for _, r in pairs],
            "ratios": [round(r / a, 3) for a, r in pairs if a > 0],
            "slowdown": round(ratio, 2), "pull": pull, "cpus": os.cpu_count(),
            "targets": {f"slowdown_at_most_{TARGET:g}x": ratio <= TARGET}}


@click.command("live")
@click.option("--events", type=click.IntRange(100, 10_000_000), default=50_000, show_default=True)
@click.option("--batch", type=click.IntRange(1, 100_000), default=50, show_default=True,
              help="Events a transaction (a run commits small batches).")
@click.option("--readers", type=click.IntRange(0, 64), default=4, show_default=True, help="Reader processes.")
@click.option("--rows", type=click.IntRange(1, 1_000_000_000), default=10_000_000, show_default=True,
              help="Rows one reader pulls through a session while the writer's RSS is sampled.")
@click.option("--rounds", type=click.IntRange(1, 50), default=3, show_default=True,
              help="Fresh stores, each appended in alternate segments alone / with readers (median ratio).")
@click.option("--json", "as_json", is_flag=True)
def command(events: int, batch: int, readers: int, rows: int, rounds: int, as_json: bool) -> None:
    """A run's append throughput with N readers hammering `<db>.sock` against none (target ≤ 1.2×), and the
    writer's RSS while a reader pulls many rows."""
    m = measure(events, batch, readers, rows, rounds)
    if as_json:
        click.echo(json.dumps(m, indent=1))
        return
    pull = m["pull"]
    assert isinstance(pull, dict)
    click.echo(
        f"{events:,} events in batches of {batch}, segments of {SEGMENT} alternating: alone {m['alone_s']} s, "
        f"with {readers} readers {m['with_readers_s']} s -> {m['ratios']}, median {m['slowdown']}x "
        f"(target <= {TARGET:g}x)\n"
        f"  one reader pulled {int(pull['rows']):,} rows in {pull['pull_s']} s; writer RSS {pull['rss_base_mb']} MB "
        f"-> peak {pull['rss_peak_mb']} MB (+{pull['rss_growth_mb']} MB)"
    )
