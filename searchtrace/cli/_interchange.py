"""`searchtrace import` / `searchtrace export`: the interchange formats of docs/reference/interchange.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from searchtrace import pipeline

if TYPE_CHECKING:  # the choice's type only: analytics loads DuckDB
    from searchtrace.analytics import JudgeChoice


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
@click.option("--from", "source", type=click.Choice(["traces", "inspect", "otel"]), default="traces", show_default=True,
              help="traces: docs/reference/interchange.md traces JSONL; inspect: Inspect AI eval logs (.eval / .json files or folders); "
                   "otel: OTLP trace files (ExportTraceServiceRequest as JSON, JSON lines, or protobuf).")
@click.option("--provider", default=None, help="--from inspect / otel: the search API the logs searched with "
              "(default: the task's `provider` argument or the sample's `provider` metadata; for otel the "
              "searchtrace.provider attribute).")
@click.option("--run-id", default=None, help="--from inspect / otel: run id of the trajectories (default inspect-<eval "
              "id>; otel).")
@click.option("--questions", "questions", default=None,
              help="--from otel: question file (or `sandbox`) giving qid and gold answer by exact question text.")
@click.option("--search-tools", default=None, metavar="A,B", help="--from otel: tool names that search.")
@click.option("--fetch-tools", default=None, metavar="A,B", help="--from otel: tool names that fetch a page.")
@click.option("--judgments", "judgments", multiple=True, type=_file, help="Judgments JSONL (repeatable).")
@click.option("--audit", "audits", multiple=True, type=_file, help="Audit TSV provider/qid/semantic_match, optionally epoch or trajectory_id (repeatable).")
@click.option("--blobs", "blobs", default=None, type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The folder of raw bodies `export --blobs` wrote (the traces name them by digest).")
def import_cmd(db: Path, traces: tuple[Path, ...], source: str, provider: str | None, run_id: str | None,
               questions: str | None, search_tools: str | None, fetch_tools: str | None,
               judgments: tuple[Path, ...], audits: tuple[Path, ...], blobs: Path | None) -> None:
    """Import traces (with the run.jsonl beside them), judgments and audits, Inspect AI logs, or OpenTelemetry
    traces; strict: a bad line stops it (exit 2) and nothing of that file is written."""
    if source == "otel":
        from searchtrace.cli._collect import tool_names

        if not traces or judgments or audits or blobs:
            raise click.UsageError("--from otel takes OTLP trace files and no --judgments / --audit / --blobs")
        for t in traces:
            if t.is_dir():
                raise click.UsageError(f"{t}: a folder; --from otel takes OTLP trace files")
        search, fetch = tool_names(search_tools, fetch_tools)
        got = pipeline.import_otel(db, traces, questions=questions, provider=provider, run_id=run_id or "otel",
                                   search_tools=search, fetch_tools=fetch)
        click.echo(f"{db}: {got.trajectories} trajectories from {len(traces)} OTLP file(s) ({got.skipped} traces "
                   f"without chat or tool spans skipped); {len(got.judgments)} verdicts, {len(got.audits)} audits "
                   f"carried; {got.events_written} new events")
        return
    if questions or search_tools or fetch_tools:
        raise click.UsageError("--questions, --search-tools and --fetch-tools apply to --from otel only")
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
        raise click.UsageError("--provider and --run-id apply to --from otel and --from inspect only")
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
@click.option("--out", "out", default=None, type=click.Path(file_okay=False, path_type=Path))
@click.option("--blobs", "blobs", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Also write the raw model and search replies and the pages, one file per sha256, into this folder.")
@click.option("--otlp", "otlp", default=None, metavar="URL",
              help="Send every trajectory as an OpenTelemetry trace (GenAI conventions, protobuf) to this OTLP/HTTP "
                   "endpoint (e.g. Phoenix or Langfuse; /v1/traces is added to a bare root).")
@click.option("--otlp-file", "otlp_file", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Write those traces to this file: protobuf (one ExportTraceServiceRequest, as Phoenix's /v1/traces "
                   "takes it) when the name ends in .pb, else OTLP JSON, one request per trajectory a line.")
@click.option("--judge-run-id", default=None, help="--otlp / --otlp-file: the judge run whose verdicts the traces "
              "carry (default: the report's).")
@click.option("--project", default=None, help="--otlp / --otlp-file: the project the traces go to (resource "
              "attribute openinference.project.name, read by Phoenix; default: searchtrace).")
@click.option("--annotations/--no-annotations", "annotate", default=True, show_default=True,
              help="--otlp: also send each verdict as a Phoenix span annotation (POST <root>/v1/span_annotations); "
                   "a backend without that route gets the verdicts as span events only.")
def export_cmd(db: Path, out: Path | None, blobs: Path | None, otlp: str | None, otlp_file: Path | None,
               judge_run_id: str | None, project: str | None, annotate: bool) -> None:
    """Write traces.jsonl, run.jsonl, judgments.jsonl, audit.tsv (docs/reference/interchange.md), events.parquet and, for notebooks,
    trajectories.parquet, judge_items.parquet and verdicts.parquet (the v_* views, typed) into a folder (--out), or the trajectories as OpenTelemetry traces with per-result verdicts (--otlp / --otlp-file, docs/how-to/otel.md)."""
    if otlp or otlp_file:
        if out or blobs or (otlp and otlp_file):
            raise click.UsageError("give one of --out [--blobs], --otlp URL, --otlp-file FILE")
        choice = pipeline.judge_choice(db, judge_run_id)
        got = pipeline.export_otlp(db, url=otlp, file=otlp_file, judge_run_id=choice.judge_run_id, project=project,
                                   annotate=annotate)
        for note in choice.notes:
            click.echo(note, err=True)
        click.echo(f"{otlp or otlp_file}: {got.traces} traces" + (
            f", {got.annotations} span annotations" if otlp and annotate else "") + f", {judge_run_line(choice)}")
        if got.note:
            click.echo(f"note: {got.note}", err=True)
        return
    if project is not None:
        raise click.UsageError("--project applies to --otlp / --otlp-file only")
    if out is None:
        raise click.UsageError("give --out DIR (or --otlp URL / --otlp-file FILE)")
    if judge_run_id is not None:
        raise click.UsageError("--judge-run-id applies to --otlp / --otlp-file (--out writes every judge run's verdicts)")
    written = pipeline.export(db, out, blobs)
    for name, count in written.items():
        click.echo(f"{out / name}: {count}")
    choice = pipeline.judge_choice(db)  # judgments.jsonl holds every judge run: say which one is the default
    if choice.others or choice.judge_run_id:
        click.echo(f"{out / 'judgments.jsonl'}: every judge run's verdicts; the default is {judge_run_line(choice)}",
                   err=True)


def judge_run_line(choice: JudgeChoice) -> str:
    """The judge run a reader used, and why (docs/how-to/judge-runs.md), in a few words."""
    if choice.judge_run_id is None:
        return "no judge run (none has a valid verdict)"
    why = {"given": "given by --judge-run-id", "judge --default": "made the default with judge --default"}.get(
        choice.how or "", "the store's first judge run with a valid verdict")
    return f"judge run {choice.judge_run_id} ({why})"
