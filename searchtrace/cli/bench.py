"""`searchtrace bench <name>`: throughput benchmarks, each in its own module under `benchmarks/`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from searchtrace.cli import LazyGroup

BENCHMARKS: dict[str, str] = {
    "ingest": "searchtrace.benchmarks.ingest:command",
    "replay": "searchtrace.benchmarks.replay:command",
    "fanout": "searchtrace.benchmarks.fanout:command",
    "judge": "searchtrace.benchmarks.judge:command",
    "http": "searchtrace.benchmarks.http:command",
    "chaos": "searchtrace.benchmarks.chaos:command",
    "view": "searchtrace.benchmarks.view:command",
    "proxy": "searchtrace.benchmarks.proxy:command",
    "live": "searchtrace.benchmarks.live:command",
}

if TYPE_CHECKING:  # the table's modules named for mypy, which else would pass over a benchmarks/ it cannot find
    from searchtrace.benchmarks import chaos, fanout, http, ingest, judge, live, proxy, replay, view  # noqa: F401


@click.group(cls=LazyGroup, lazy=BENCHMARKS)
def bench() -> None:
    """Throughput benchmarks (ingest, replay, fan-out, judge, http), the explorer's API latency (view) and the chaos suite."""
