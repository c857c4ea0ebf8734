"""`searchtrace report`: docs/reference/report.md as a terminal table, `--json` the contract, `--html FILE` a page with plots."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace import analytics, pipeline


@click.command("report")
@click.option("--db", "db", default="searchtrace.duckdb", show_default=True, type=click.Path(path_type=Path))
@click.option("--judge-run-id", default=None, help="Judge run to report (default: the latest one with a valid verdict).")
@click.option(
    "--run-id",
    "run_ids",
    multiple=True,
    help="Report this run's trajectories (repeatable); required when the store holds several runs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the docs/reference/report.md JSON contract.")
@click.option("--html", "html", default=None, type=click.Path(dir_okay=False, path_type=Path), help="Write a page with plots.")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A custom metric file (.py with metric(con, judge_run_id), or .sql returning provider, value); repeatable.",
)
@click.option("--bootstrap", "bootstrap", type=click.IntRange(min=0), default=analytics.DEFAULT_BOOTSTRAP, show_default=True,
              help="Bootstrap replicates for the 95% intervals and paired tests (docs/concepts/statistics.md); 0 turns them off.")
@click.option("--seed", default=analytics.DEFAULT_SEED, show_default=True, help="Seed of the bootstrap draws.")
@click.option("--prices", "prices", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Price file (TOML, docs/reference/prices.md) for USD per provider; default: a run config's [prices], else none.")
@click.option("--by", "by", default="provider", show_default=True,
              help="The arms to compare (docs/how-to/compare.md): provider, run, model (agent.model), prompt (its sha256) or "
                   "config:<dotted.key> of the run config; another axis than provider reads every run unless "
                   "--run-id names some.")
def report(
    db: Path,
    judge_run_id: str | None,
    run_ids: tuple[str, ...],
    as_json: bool,
    html: Path | None,
    metrics: tuple[Path, ...],
    bootstrap: int,
    seed: str,
    prices: Path | None,
    by: str,
) -> None:
    """Evidence metrics per provider (or per arm of --by, docs/how-to/compare.md) for one judge run (docs/concepts/metrics.md), with 95% intervals
    and paired tests (docs/concepts/statistics.md)."""
    result = pipeline.report(
        db, judge_run_id=judge_run_id, metrics=metrics, html=html, bootstrap=bootstrap, seed=seed, prices=prices,
        run_ids=run_ids, by=by,
    )
    data = result.data
    for note in result.notes:  # on stderr: stdout keeps exactly the table or the JSON
        click.echo(note, err=True)
    if as_json:
        sys.stdout.write(analytics.to_json(data))
        sys.stdout.flush()
        return
    from rich.console import Console

    analytics.render_table(data, Console())
    if html is not None:
        click.echo(f"wrote {html}")
