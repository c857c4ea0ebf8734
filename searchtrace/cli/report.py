"""`searchtrace report`: SPEC §8 as a terminal table, `--json` the contract, `--html FILE` a page with plots."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace import pipeline
from searchtrace.analytics.report import to_json


@click.command("report")
@click.option("--db", "db", default="searchtrace.duckdb", show_default=True, type=click.Path(path_type=Path))
@click.option("--judge-run-id", default=None, help="Judge run to report (default: the latest one with a valid verdict).")
@click.option("--json", "as_json", is_flag=True, help="Print the SPEC §8 JSON contract.")
@click.option("--html", "html", default=None, type=click.Path(dir_okay=False, path_type=Path), help="Write a page with plots.")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A custom metric file (.py with metric(con, judge_run_id), or .sql returning provider, value); repeatable.",
)
def report(db: Path, judge_run_id: str | None, as_json: bool, html: Path | None, metrics: tuple[Path, ...]) -> None:
    """Evidence metrics per provider for one judge run (SPEC §5, §8)."""
    result = pipeline.report(db, judge_run_id=judge_run_id, metrics=metrics, html=html)
    data = result.data
    for note in result.notes:  # on stderr: stdout keeps exactly the table or the JSON
        click.echo(note, err=True)
    if as_json:
        sys.stdout.write(to_json(data))
        sys.stdout.flush()
        return
    from rich.console import Console

    from searchtrace.analytics.table import render_table

    render_table(data, Console())
    if html is not None:
        click.echo(f"wrote {html}")
