"""`searchtrace replay`: re-execute recorded trajectories from their events (no live call); exit 1 on divergence."""

from __future__ import annotations

from pathlib import Path

import anyio
import click
import msgspec

from searchtrace import pipeline


@click.command("replay")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--trajectory", "trajectories", multiple=True, help="Replay only this trajectory id (repeatable).")
@click.option("--prompt-version", default=None, help="Replay with another agent prompt version than recorded.")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Trajectories replayed at once.")
@click.option("--full-diffs", default=3, show_default=True, type=click.IntRange(0),
              help="Diverged trajectories shown with their full diff (the others in one line each).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def replay(
    db: Path, trajectories: tuple[str, ...], prompt_version: str | None, concurrency: int, full_diffs: int, as_json: bool
) -> None:
    """Re-run the agent loop over recorded answers; exit 0 when every step matches, 1 at the first divergence."""
    report = anyio.run(lambda: pipeline.replay(db, trajectories, prompt_version=prompt_version, concurrency=concurrency),
                       backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(report).decode())
    else:
        diverged = [o for o in report.outcomes if not o.ok and o.divergence]
        for i, o in enumerate(diverged):
            assert o.divergence is not None
            click.echo(o.divergence if i < full_diffs else o.divergence.splitlines()[0])
        if report.skipped:
            first = next(o for o in report.outcomes if o.skipped)
            click.echo(f"skipped {report.skipped} trajectories: {first.skipped}")
        click.echo(
            f"replay: {report.trajectories} trajectories, {report.matched} match, {report.diverged} diverge "
            f"({report.requests_served} requests answered from events, none live)"
        )
    if not report.ok:
        raise SystemExit(1)
