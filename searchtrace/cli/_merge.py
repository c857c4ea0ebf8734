"""`searchtrace merge SEG… --into DB`: append segments' events idempotently by event_id (docs/how-to/scale.md)."""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from searchtrace import pipeline


@click.command("merge")
@click.argument("segments", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--into", "into", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The store to merge into (created when missing).")
@click.option("--json", "as_json", is_flag=True, help="Print what was merged as JSON.")
def merge(segments: tuple[Path, ...], into: Path, as_json: bool) -> None:
    """Append the events of stores recorded apart (segments) that INTO does not hold, each keeping its recorded_at;
    an event id held with other bytes stops the merge (exit 2) before anything is appended; merging again adds
    nothing."""
    result = pipeline.merge(list(segments), into)
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    for s in result.segments:
        name = s.segment_id[:12] or "(unnamed)"
        click.echo(f"{s.path}: segment {name} on {s.host or 'an unnamed host'}: {s.events} events, "
                   f"{s.appended} appended, {s.blobs} blobs copied")
    click.echo(f"{into}: {result.appended} events appended from {len(result.segments)} segment"
               f"{'s' if len(result.segments) != 1 else ''} in {result.elapsed_s:.2f} s, head at position {result.head}")
