"""`searchtrace verify`: checks the hash chain, positions, stream sequences, the recorded head and the blobs; exit 1
at the first break. Projections that do not match the log are rebuilt (they are caches)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace import pipeline


@click.command("verify")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"),
              show_default=True, help="The store to check.")
def verify(db: Path) -> None:
    """Walk every event: positions gap-free from 1, stream_seq 0,1,2… per stream, each hash recomputed, the last
    event the one appended last, every blob's bytes against its digest; rebuild projections that do not match."""
    result = pipeline.verify(db)
    if not result.ok:
        click.echo(f"{db}: {result.log_line}; {result.segment}", err=True)
        sys.exit(1)
    stale = ", ".join(result.stale)
    if result.rebuild_error is not None:
        click.echo(f"{db}: the log is intact but projections {stale} do not match it and could not "
                   f"be rebuilt ({result.rebuild_error})", err=True)
        sys.exit(1)
    line = f"{db}: {result.log_line}; {result.segment}"
    if result.stale:
        line += f"; projections {stale} did not match the log and were rebuilt"
    click.echo(line)
