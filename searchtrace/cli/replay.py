"""`searchtrace replay`: re-execute recorded trajectories from their events (no live call); exit 1 on divergence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
import msgspec

from searchtrace.store.errors import BadInput


async def _run(db: Path, trajectories: tuple[str, ...], prompt_version: str | None, concurrency: int) -> Any:
    from searchtrace.replay.rerun import load_recorded, replay_trajectories
    from searchtrace.store.log import EventLog

    log = await anyio.to_thread.run_sync(lambda: EventLog(db, read_only=True))
    try:
        recorded = await anyio.to_thread.run_sync(lambda: load_recorded(log, list(trajectories) or None))
        if not recorded:
            raise BadInput(f"{db}: no recorded trajectory to replay")
        return await replay_trajectories(log, recorded, prompt_version=prompt_version, concurrency=concurrency)
    finally:
        await anyio.to_thread.run_sync(log.close)


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
    if concurrency < 1:
        raise BadInput(f"--concurrency must be at least 1, got {concurrency}")
    if not db.exists():
        raise BadInput(f"{db}: no such database; record something first")
    report = anyio.run(lambda: _run(db, trajectories, prompt_version, concurrency), backend="asyncio")
    if report.skipped == report.trajectories:
        raise BadInput(f"{db}: nothing to replay: {report.outcomes[0].skipped}")
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
