"""`searchtrace verify`: checks the hash chain, positions and stream sequences; exit 1 at the first break."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace.store.readonly import open_read_only
from searchtrace.store.verify import verify as verify_log


@click.command("verify")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"),
              show_default=True, help="The store to check.")
def verify(db: Path) -> None:
    """Walk every event: positions gap-free from 1, stream_seq 0,1,2… per stream, each hash recomputed."""
    con = open_read_only(db)
    try:
        report = verify_log(con)
    finally:
        con.close()
    if report.ok:
        click.echo(f"{db}: {report.line()}")
        return
    click.echo(f"{db}: {report.line()}", err=True)
    sys.exit(1)
