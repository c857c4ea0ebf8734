"""`searchtrace bench <name>`: throughput benchmarks, each in its own module under `benchmarks/`."""

from __future__ import annotations

import click

from engine.cli import LazyGroup

BENCHMARKS: dict[str, str] = {
    "ingest": "benchmarks.ingest:command",
    "replay": "benchmarks.replay:command",
    "fanout": "benchmarks.fanout:command",
    "judge": "benchmarks.judge:command",
    "http": "benchmarks.http:command",
    "chaos": "benchmarks.chaos:command",
}


@click.group(cls=LazyGroup, lazy=BENCHMARKS)
def bench() -> None:
    """Throughput benchmarks (ingest, replay, fan-out, judge, http) and the chaos suite."""
