"""`searchtrace report`: SPEC §8 as a terminal table, `--json` the contract, `--html FILE` a page with plots."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace.store.errors import BadInput, NotAStore
from searchtrace.store.log import EventLog


def open_for_report(db: Path) -> tuple[EventLog, bool]:
    """Read-write when possible (to catch the projections up), else read-only (raw views); never creates a file."""
    if not db.exists():
        raise BadInput(f"{db}: no such database; record, demo or import something first")
    try:
        return EventLog(db), True
    except NotAStore:
        # e.g. a read-only file or folder: read it as it is
        return EventLog(db, read_only=True), False


@click.command("report")
@click.option("--db", "db", default="searchtrace.duckdb", show_default=True, type=click.Path(path_type=Path))
@click.option("--judge-run-id", default=None, help="Judge run to report (default: the latest started).")
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
    from searchtrace.analytics import html as html_mod
    from searchtrace.analytics.report import build_report, to_json

    log, writable = open_for_report(db)
    with log:
        con = log.cursor()
        try:
            data = build_report(con, judge_run_id=judge_run_id, writable=writable, metric_files=list(metrics))
            extra = None
            if html is not None:
                extra = html_mod.extras_from_db(log, data["judge_run_id"])
        finally:
            con.close()
    if html is not None:
        try:
            html.write_text(html_mod.render(data, extra=extra), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"{html}: cannot write ({exc.strerror})") from None
    if as_json:
        sys.stdout.write(to_json(data))
        sys.stdout.flush()
        return
    from rich.console import Console

    from searchtrace.analytics.table import render_table

    render_table(data, Console())
    if html is not None:
        click.echo(f"wrote {html}")
