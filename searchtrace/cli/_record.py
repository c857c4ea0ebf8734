"""`searchtrace record --config run.toml [--sandbox | --sandbox-url URL] [--db PATH]`: a resumable live run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click
import msgspec

from searchtrace import pipeline
from searchtrace.cli._ship import ship_to_option, shipped_line
from searchtrace.engine import EXAMPLE_CONFIG, MAX_EPOCHS, load_config, parse_columns

if TYPE_CHECKING:  # the summary's type only: importing the recorder would load DuckDB and Arrow for --help
    from searchtrace.engine import RunConfig, RunSummary


def summary_text(s: RunSummary) -> str:
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s.reasons.items())) or "none"
    return (
        f"run {s.run_id}: {s.trajectories} trajectories ({s.already} already recorded, {s.recorded} recorded now: "
        f"{reasons}); {s.model_calls} model / {s.search_calls} search / {s.fetch_calls} fetch calls, "
        f"{s.retries} retries, {s.input_tokens:,} input / {s.output_tokens:,} output tokens in {s.elapsed_s:.1f} s"
        + (f"; {s.retried} cells that had ended in error recorded again" if s.retried else "")
        + (f"; {s.errored_final} cells ended in error on every attempt (final)" if s.errored_final else "")
        + (f"; {s.to_retry} cells ended in error (attempts left)" if s.to_retry else "")
        + ("" if s.finished else "; unfinished: run the same command again to resume")
    )


@click.command("record")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), help="TOML run config.")
@click.option("--example", is_flag=True, help="Print an example run config (TOML) and exit.")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--sandbox", is_flag=True, help="Point every endpoint at the in-process sandbox world (no key, no network; rates and concurrency as configured).")
@click.option("--sandbox-url", default=None, help="Point every endpoint at a running `searchtrace sandbox serve` (e.g. http://127.0.0.1:8765).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar even on a terminal.")
@click.option("--epochs", type=click.IntRange(1, MAX_EPOCHS), default=None,
              help="Record every cell this many times (overrides [run] epochs; docs/concepts/statistics.md).")
@click.option("--dataset-columns", default=None, metavar="ROLE=COLUMN,...",
              help="Which question-file columns hold qid, question and answer, e.g. qid=id,question=problem,"
                   "answer=answers (over [dataset] columns; docs/how-to/compare.md).")
@click.option("--shard", default=None, metavar="I/N",
              help="Record only shard I of N of the run's cells (a stable hash of provider, qid, epoch) into this "
                   "store, a segment to `merge` with the others (docs/how-to/scale.md); it never appends run.finished.")
@click.option("--ray", "ray_address", default=None, metavar="auto|ADDRESS",
              help="Fan the run out on a Ray cluster (`auto`: the one this machine runs, else a local one), --shards "
                   "segments next to --db, merged into it; needs the ray extra (docs/how-to/scale.md).")
@click.option("--shards", type=click.IntRange(1, 4096), default=None, help="How many shards --ray records (one actor each).")
@click.option("--segment-dir", default=None, metavar="DIR",
              help="With --ray: each actor writes its segment in DIR on its own node (no shared filesystem); the "
                   "driver fetches it through Ray, checked by size and sha256 [default: next to --db on every node].")
@ship_to_option
def record(
    config_path: Path | None, example: bool, db: Path, sandbox: bool, sandbox_url: str | None, as_json: bool,
    no_progress: bool, epochs: int | None, dataset_columns: str | None, ship_to: str | None, shard: str | None,
    ray_address: str | None, shards: int | None, segment_dir: str | None,
) -> None:
    """Record every (question, provider) trajectory of a run; re-running resumes where it stopped."""
    if example:
        click.echo(EXAMPLE_CONFIG, nl=False)
        return
    if config_path is None:
        raise click.UsageError("--config is required (`searchtrace record --example` prints a template)")
    part = _shard(shard)
    cfg = load_config(config_path)
    if epochs is not None:
        cfg.run.epochs = epochs
    if dataset_columns is not None:
        cfg.dataset.columns = {**cfg.dataset.columns, **parse_columns(dataset_columns, "--dataset-columns")}
    if sandbox and sandbox_url:
        raise click.UsageError("use either --sandbox or --sandbox-url, not both")
    if ray_address is not None or shards is not None or segment_dir is not None:
        _on_ray(cfg, db, ray_address, shards, sandbox=sandbox, sandbox_url=sandbox_url, shard=shard, ship_to=ship_to,
                as_json=as_json, segment_dir=segment_dir)
        return
    named = cfg.agent.model
    transport = pipeline.aim(cfg, sandbox=sandbox, sandbox_url=sandbox_url)
    if cfg.agent.model != named:  # the sandbox answers with its own model: said once, never silently
        click.echo(f"searchtrace: the config names model {named!r}; in the sandbox {cfg.agent.model!r} answers "
                   f"(over the {cfg.agent.api} API) and is recorded as the model", err=True)
    shipped: list[str] = []
    try:
        summary = anyio.run(
            lambda: pipeline.record(cfg, db, transport, progress=False if no_progress else None, ship_to=ship_to,
                                    on_shipped=lambda s: shipped.append(shipped_line(s, ship_to or "")),
                                    shard=part),
            backend="asyncio",
        )
    except KeyboardInterrupt:
        click.echo(
            f"searchtrace: interrupted; finished trajectories are in {db}, run the same command again to record the rest",
            err=True,
        )
        raise SystemExit(130) from None
    if as_json:
        click.echo(msgspec.json.encode(summary).decode())
    else:
        click.echo(summary_text(summary))
    for line in shipped:
        click.echo(f"shipped: {line}", err=as_json)
    if summary.failed:  # a run that failed never exits 0
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(summary.error_kinds.items())) or "unknown"
        click.echo(f"searchtrace: record: {summary.failed} of {summary.recorded} trajectories recorded now ended in "
                   f"error ({kinds}); run the same command again to record them again", err=True)
        raise SystemExit(1)


def _on_ray(cfg: RunConfig, db: Path, address: str | None, shards: int | None, *, sandbox: bool,
            sandbox_url: str | None, shard: str | None, ship_to: str | None, as_json: bool,
            segment_dir: str | None) -> None:
    """`record --ray ADDRESS --shards N`: the shards on Ray, merged into --db; exit 1 while a shard failed."""
    if address is None or shards is None:
        raise click.UsageError("--ray and --shards go together (e.g. --ray auto --shards 4); --segment-dir needs them")
    if shard is not None or ship_to is not None:
        raise click.UsageError(f"--ray records every shard itself and merges them into --db; drop "
                               f"{'--shard' if shard is not None else '--ship-to'}")
    from searchtrace.pipeline import record_on_ray

    done = record_on_ray(cfg, db, shards=shards, address=address, sandbox=sandbox, sandbox_url=sandbox_url,
                         segment_dir=segment_dir)
    if as_json:
        click.echo(msgspec.json.encode(done).decode())
    else:
        for d in done.done:
            what = summary_text(d.summary) if d.summary is not None else f"stopped: {d.error}"
            click.echo(f"shard {d.shard}/{done.shards} on {d.host or 'a lost node'}: {what}")
        n_segs, n_shards = (len(done.merged.segments) if done.merged else 0), len(done.done)
        merged = (f"{done.merged.appended} events merged from {n_segs} segment{'s' if n_segs != 1 else ''}"
                  if done.merged else "nothing to merge")
        click.echo(f"run {done.run_id}: {done.trajectories} trajectories ({done.already} already in {db}, "
                   f"{done.recorded} recorded now by {n_shards} shard{'s' if n_shards != 1 else ''}); {merged} in {done.elapsed_s:.1f} s"
                   + ("" if done.finished else f"; unfinished: {done.to_record} cells to record, run the same command again"))
    failed = [d for d in done.done if d.summary is None or d.summary.failed]
    if failed:
        click.echo(f"searchtrace: record: shard{'s' if len(failed) > 1 else ''} "
                   f"{', '.join(str(d.shard) for d in failed)} of {done.shards} did not record every cell; run the "
                   "same command again to resume them", err=True)
        raise SystemExit(1)


def _shard(text: str | None) -> tuple[int, int] | None:
    """`I/N` as (i, n) with 0 <= i < n; a bad value is a usage error naming it."""
    if text is None:
        return None
    i, sep, n = text.partition("/")
    if not (sep and i.isdigit() and n.isdigit() and 0 <= int(i) < int(n)):
        raise click.BadParameter(f"{text!r}: expected I/N with 0 <= I < N (e.g. 0/2)", param_hint="--shard")
    return int(i), int(n)
