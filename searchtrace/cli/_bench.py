"""`searchtrace bench <name>`: throughput benchmarks, each in its own module under `benchmarks/`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from searchtrace.benchmarks import COMMANDS
from searchtrace.cli import LazyGroup

if TYPE_CHECKING:  # the table's modules named for mypy, which else would pass over a benchmarks/ it cannot find
    from searchtrace.benchmarks import (  # noqa: F401
        chaos,
        coverage,
        fanout,
        http,
        ingest,
        judge,
        live,
        proxy,
        replay,
        ship,
        view,
    )


@click.group(cls=LazyGroup, lazy=COMMANDS)
def bench() -> None:
    """Throughput benchmarks (ingest, replay, fan-out, judge, http), the explorer's API latency (view) the chaos suite and the interval coverage simulation."""
