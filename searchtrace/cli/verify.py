"""`searchtrace verify`: checks the hash chain, positions, stream sequences, the recorded head and the blobs; exit 1
at the first break. Projections that do not match the log are rebuilt (they are caches)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace.analytics.projections import catch_up, mismatched
from searchtrace.store.errors import StoreError
from searchtrace.store.interrupt import close_when_free, interruptible
from searchtrace.store.log import EventLog
from searchtrace.store.readonly import open_read_only
from searchtrace.store.verify import verify as verify_log


@click.command("verify")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=Path("searchtrace.duckdb"),
              show_default=True, help="The store to check.")
def verify(db: Path) -> None:
    """Walk every event: positions gap-free from 1, stream_seq 0,1,2… per stream, each hash recomputed, the last
    event the one appended last, every blob's bytes against its digest; rebuild projections that do not match."""
    con = open_read_only(db)
    try:
        report, stale = interruptible(con, lambda: (verify_log(con), mismatched(con)))
    finally:
        close_when_free(con)
    if not report.ok:
        click.echo(f"{db}: {report.line()}", err=True)
        sys.exit(1)
    line = f"{db}: {report.line()}"
    if stale:
        try:
            with EventLog(db) as log:
                cur = log.cursor()
                try:
                    catch_up(cur, rebuild=True)
                finally:
                    cur.close()
        except StoreError as exc:
            click.echo(f"{db}: the log is intact but projections {', '.join(stale)} do not match it and could not "
                       f"be rebuilt ({exc})", err=True)
            sys.exit(1)
        line += f"; projections {', '.join(stale)} did not match the log and were rebuilt"
    click.echo(line)
