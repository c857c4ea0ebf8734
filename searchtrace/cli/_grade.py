"""`searchtrace grade`: propose semantic_match for every trajectory when no audited TSV exists."""

from __future__ import annotations

from pathlib import Path

import click

from searchtrace import pipeline, replay


@click.command("grade")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"),
              show_default=True)
def grade(db: Path) -> None:
    """Record a deterministic grader's audit.answer proposals (exact or contained normalised match).

    An imported audit (`searchtrace import --audit`) always wins over these proposals in the report.
    """
    grades = pipeline.grade(db)
    n_match = sum(g.semantic_match for g in grades)
    click.echo(f"{len(grades)} trajectories graded by {replay.SOURCE}: {n_match} proposed as matching")
