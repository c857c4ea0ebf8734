"""`searchtrace bench <name>`: throughput benchmarks, each in its own module under `benchmarks/`."""

from __future__ import annotations

import click

from searchtrace.benchmarks import COMMANDS
from searchtrace.cli._main import LazyGroup


@click.group(cls=LazyGroup, lazy=COMMANDS)
def bench() -> None:
    """Throughput benchmarks (ingest, replay, fan-out, judge, http), the explorer's API latency (view) the chaos suite and the interval coverage simulation."""
