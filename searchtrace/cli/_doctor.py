"""`searchtrace doctor --config run.toml [--sandbox | --sandbox-url URL]`: check a run's set-up before paying for it."""

from __future__ import annotations

from pathlib import Path

import anyio
import click
import msgspec

from searchtrace import pipeline
from searchtrace.engine import load_config


@click.command("doctor")
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="TOML run config (as for `record`).")
@click.option("--sandbox", is_flag=True, help="Check against the in-process sandbox world.")
@click.option("--sandbox-url", default=None, help="Check against a running `searchtrace sandbox serve`.")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor(config_path: Path, sandbox: bool, sandbox_url: str | None, as_json: bool) -> None:
    """Dataset readable, every key set, each endpoint reachable and accepting its key (one cheap call each)."""
    if sandbox and sandbox_url:
        raise click.UsageError("use either --sandbox or --sandbox-url, not both")
    cfg = load_config(config_path)
    transport = pipeline.aim(cfg, sandbox=sandbox, sandbox_url=sandbox_url)
    checks = anyio.run(lambda: pipeline.doctor(cfg, transport), backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(checks).decode())
    else:
        for c in checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'}  {c.what}: {c.detail}")
    failed = [c.what for c in checks if not c.ok]
    if failed:
        click.echo(f"searchtrace: doctor: {len(failed)} check(s) failed ({', '.join(failed)}); fix them before `record`",
                   err=True)
        raise SystemExit(1)
