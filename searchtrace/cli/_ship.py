"""`searchtrace ship --db SEG --to postgresql://…` and `searchtrace replica --from postgresql://… --db LOCAL
[--follow]`: one log for many writers (docs/how-to/scale.md). URLs are shown with their password replaced by ***."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from searchtrace import pipeline
from searchtrace.store import redacted

if TYPE_CHECKING:  # types only: the shipping module loads DuckDB, which `--help` does not need
    from searchtrace.store import Pulled, Shipped

_URL_HELP = "The central log, postgresql://user[:password]@host/db or postgresql:///db?host=/socket/dir."


# `record | judge | proxy --ship-to URL`: the one definition of the option the three share
ship_to_option = click.option(
    "--ship-to", "ship_to", default=None, metavar="URL",
    help="Ship committed events to this PostgreSQL log every second and at the end (docs/how-to/scale.md; the postgres extra).")


def shipped_line(s: Shipped, url: str) -> str:
    return (f"segment {s.segment_id} ({s.host}): {s.batches} batches, {s.events} events shipped, {s.skipped} "
            f"already in the log; through local position {s.through}; {redacted(url)} at position {s.central_head}")


@click.command("ship")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"),
              show_default=True, help="The segment (an ordinary store) to ship.")
@click.option("--to", "url", required=True, help=_URL_HELP)
@click.option("--batch", type=click.IntRange(1, 1_000_000), default=None, help="Events per transaction (default 5000).")
def ship(db: Path, url: str, batch: int | None) -> None:
    """Append the segment's committed events to the central log, a batch per transaction with its
    `segment.shipped` marker; idempotent by event_id, and a rerun resumes after the last marker."""
    click.echo(shipped_line(pipeline.ship_segment(db, url, batch=batch), url))


@click.command("replica")
@click.option("--from", "url", required=True, help=_URL_HELP)
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"),
              show_default=True, help="The local replica (made when missing).")
@click.option("--follow", "keep_following", is_flag=True,
              help="Keep pulling (every second) until Ctrl-C; other commands read the replica meanwhile.")
def replica(url: str, db: Path, keep_following: bool) -> None:
    """Pull the central log by position into an ordinary store, positions and hashes as in the log: every read
    command and `verify` run on it."""
    stop = threading.Event()

    def on_pull(p: Pulled) -> None:
        click.echo(f"{db}: +{p.events} events, +{p.blobs} blobs, at position {p.head}", err=True)

    def stop_following(signum: int, frame: FrameType | None) -> None:
        stop.set()

    if keep_following:
        signal.signal(signal.SIGINT, stop_following)
        signal.signal(signal.SIGTERM, stop_following)
    got = pipeline.replicate(url, db, keep_following=keep_following, on_pull=on_pull, stop=stop)
    click.echo(f"{db}: {got.events} events and {got.blobs} blobs pulled from {redacted(url)}; "
               f"the replica is at position {got.head}")
