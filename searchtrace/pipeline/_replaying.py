"""Re-execute recorded trajectories from their events (docs/reference/cli.md): no live call, divergences reported."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio

from searchtrace.replay import ReplayReport, load_recorded, replay_trajectories
from searchtrace.store import BadInput, EventLog, require_database


async def replay(
    db: Path, trajectories: Sequence[str] = (), *, prompt_version: str | None = None, concurrency: int = 8
) -> ReplayReport:
    """Replays the recorded trajectories (all, or those named); bad input when there is nothing to replay."""
    if concurrency < 1:
        raise BadInput(f"--concurrency must be at least 1, got {concurrency}")
    require_database(db)
    log = await anyio.to_thread.run_sync(lambda: EventLog(db, read_only=True))
    try:
        recorded = await anyio.to_thread.run_sync(lambda: load_recorded(log, list(trajectories) or None))
        if not recorded:
            raise BadInput(f"{db}: no recorded trajectory to replay")
        report = await replay_trajectories(log, recorded, prompt_version=prompt_version, concurrency=concurrency)
    finally:
        await anyio.to_thread.run_sync(log.close)
    if report.skipped == report.trajectories:
        raise BadInput(f"{db}: nothing to replay: {report.outcomes[0].skipped}")
    return report
