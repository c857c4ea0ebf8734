"""`searchtrace import` / `searchtrace export`: the interchange formats of SPEC §9."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console

from searchtrace import pipeline


@contextmanager
def _status() -> Iterator[Callable[[str], None]]:
    """A live one-line status of the import stage on an interactive stderr; silent otherwise."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda _stage: None
        return
    with console.status("import") as status:
        yield lambda stage: status.update(f"import: {stage}")


_file = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("import")
@click.option("--db", "db", default="searchtrace.duckdb", show_default=True, type=click.Path(path_type=Path))
@click.argument("traces", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--from", "source", type=click.Choice(["traces", "inspect"]), default="traces", show_default=True,
              help="traces: SPEC §9 traces JSONL; inspect: Inspect AI eval logs (.eval / .json files or folders).")
@click.option("--provider", default=None, help="--from inspect: the search API the logs searched with "
              "(default: the task's `provider` argument or the sample's `provider` metadata).")
@click.option("--run-id", default=None, help="--from inspect: run id of the trajectories (default inspect-<eval id>).")
@click.option("--judgments", "judgments", multiple=True, type=_file, help="Judgments JSONL (repeatable).")
@click.option("--audit", "audits", multiple=True, type=_file, help="Audit TSV provider/qid/semantic_match, optionally epoch or trajectory_id (repeatable).")
@click.option("--blobs", "blobs", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The folder of raw bodies `export --blobs` wrote (the traces name them by digest).")
def import_cmd(db: Path, traces: tuple[Path, ...], source: str, provider: str | None, run_id: str | None,
               judgments: tuple[Path, ...], audits: tuple[Path, ...], blobs: Path | None) -> None:
    """Import traces (with the run.jsonl beside them), judgments and audits, or Inspect AI logs; strict: a bad line
    stops it (exit 2) and nothing of that file is written."""
    if source == "inspect":
        if not traces or judgments or audits or blobs:
            raise click.UsageError("--from inspect takes Inspect logs (files or folders) and no --judgments / --audit "
                                   "/ --blobs")
        with _status() as show:
            res = pipeline.import_inspect(db, traces, provider=provider, run_id=run_id, on_stage=show)
        click.echo(f"{db}: {res.trajectories} new trajectories from {len(traces)} Inspect log path(s); "
                   f"{res.events_written} new events")
        return
    if provider or run_id:
        raise click.UsageError("--provider and --run-id apply to --from inspect only")
    for t in traces:
        if t.is_dir():
            raise click.UsageError(f"{t}: a folder; traces are JSONL files (folders only with --from inspect)")
    if not (traces or judgments or audits):
        raise click.UsageError("nothing to import: give TRACES.jsonl and/or --judgments / --audit files")
    with _status() as show:
        res = pipeline.import_files(db, traces, judgments, audits, blobs=blobs, on_stage=show)
    click.echo(
        f"{db}: {res.trajectories} new trajectories; {res.verdicts} verdicts and {res.audits} audit rows read; "
        f"{res.events_written} new events"
    )


@click.command("export")
@click.option("--db", "db", default="searchtrace.duckdb", show_default=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--blobs", "blobs", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Also write the raw model and search replies and the pages, one file per sha256, into this folder.")
def export_cmd(db: Path, out: Path, blobs: Path | None) -> None:
    """Write traces.jsonl, run.jsonl, judgments.jsonl, audit.tsv (SPEC §9, §17), events.parquet and, for notebooks,
    trajectories.parquet, judge_items.parquet and verdicts.parquet (the v_* views, typed) into a folder."""
    written = pipeline.export(db, out, blobs)
    for name, count in written.items():
        click.echo(f"{out / name}: {count}")
