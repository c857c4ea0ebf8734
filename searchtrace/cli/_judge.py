"""`searchtrace judge`: a resumable judge run over every recorded judge item (docs/concepts/judge.md).

The judge run id defaults to `<model>@<prompt version>` (e.g. `kimi-k2.6@judge/1`), so running the same command
again resumes the same judge run (only items without a verdict are called); another model or prompt version is
another judge run, and `--judge-run-id` names one explicitly. Exit 0 when every item has a verdict, 1 when some
calls failed for good on transient errors (run again to judge them), 2 on bad input or a rejected key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click
import msgspec

from searchtrace import pipeline
from searchtrace.adapters import CHAT_APIS
from searchtrace.cli._ship import ship_to_option, shipped_line
from searchtrace.replay import DEFAULT_VERSION, versions

if TYPE_CHECKING:  # the stats' type only: importing the judge would load DuckDB and Arrow for --help
    from searchtrace.analytics import JudgeComparison, VerdictLabels
    from searchtrace.replay import JudgeStats


def summary_text(s: JudgeStats) -> str:
    text = (
        f"judge run {s.judge_run_id}: {s.items} items ({s.already} already judged, {s.done} judged now: "
        f"{s.valid} valid, {s.invalid} invalid); {s.retried} retries; "
        f"{s.usage.input_tokens:,} input / {s.usage.output_tokens:,} output tokens in {s.elapsed_s:.1f} s"
    )
    if s.failed:
        text += f"; {s.failed} calls failed: run the same command again to judge them"
    if not isinstance(s.backfill, msgspec.UnsetType):
        f = s.backfill
        text += (f"\nbackfill: {f.items} items whose text the caller never received ({f.already} already "
                 f"backfilled); {f.fetched} pages fetched now, {f.valid} valid, {f.invalid} invalid or unfetchable, "
                 f"{f.failed} failed")
    if not isinstance(s.batch, msgspec.UnsetType):
        b = s.batch
        text += (f"\nbatches: {b.batches} submitted now ({b.submitted} items, {b.resubmitted} of them resubmitted), "
                 f"{b.resumed} resumed; results: {b.succeeded} succeeded, {b.errored} errored, {b.expired} expired, "
                 f"{b.canceled} canceled; {b.online} judged online after two batches, {b.left} left")
        if b.left:
            text += ": run the same command again (or add --batch-fallback online) to judge them"
    return text


def progress_line(s: JudgeStats) -> str:
    return f"done {s.done}/{s.pending} · invalid {s.invalid} · retried {s.retried} · failed {s.failed}"


@contextmanager
def judge_progress(enabled: bool | None) -> Iterator[Callable[[JudgeStats], None]]:
    """A rich progress bar on an interactive stderr (done / invalid / retried / failed); silent otherwise."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not (console.is_terminal if enabled is None else enabled):
        yield lambda s: None
        return
    bar = Progress(
        TextColumn("[bold]judge"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
        console=console, refresh_per_second=4,
    )
    task = bar.add_task("", total=None)

    def tick(s: JudgeStats) -> None:
        bar.update(task, total=s.pending, completed=s.done + s.failed, description=progress_line(s))

    with bar:
        yield tick


@click.group("judge", invoke_without_command=True)
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--model", default=None, help="Judge model (default with --sandbox: sandbox-judge).")
@click.option("--base-url", default=None, help="The model API's endpoint (default: $OPENAI_BASE_URL or OpenAI; "
              "with --api anthropic $ANTHROPIC_BASE_URL, with --api gemini $GOOGLE_GEMINI_BASE_URL).")
@click.option("--key-env", default=None, help="Environment variable holding the key (default OPENAI_API_KEY; "
              "ANTHROPIC_API_KEY, GEMINI_API_KEY).")
@click.option("--api", type=click.Choice(CHAT_APIS), default="chat", show_default=True,
              help="The model API the judge is asked over (docs/how-to/claude-gemini.md).")
@click.option("--prompt-version", default=None,
              help=f"Built-in ({', '.join(versions())}; default {DEFAULT_VERSION}) or a prompt file's recorded name@hash.")
@click.option("--prompt-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="TOML prompt file (name, system, user template, schema_version); recorded as name@<sha256[:12]>.")
@click.option("--judge-run-id", default=None, help="Default: <model>@<prompt version>, so the same command resumes.")
@click.option("--rps", default=None, type=float,
              help="Judge requests per second, 0 for unlimited [default: 5; unlimited with --sandbox/--sandbox-url].")
@click.option("--concurrency", default=8, show_default=True, type=int, help="Judge calls in flight.")
@click.option("--timeout", "timeout_s", default=120.0, show_default=True, type=float, help="Seconds per attempt.")
@click.option("--max-retries", default=4, show_default=True, type=int, help="Retries on 429 / 5xx / timeouts.")
@click.option("--sandbox", is_flag=True, help="Use the in-process sandbox judge (no key, no network).")
@click.option("--sandbox-url", default=None, help="Use a running `searchtrace sandbox serve` (http://127.0.0.1:PORT).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-progress", is_flag=True, help="No progress bar even on a terminal.")
@click.option("--default", "make_default", is_flag=True,
              help="Make this judge run the one report, view and export use when no --judge-run-id names one "
                   "(docs/how-to/judge-runs.md); with only --judge-run-id, mark that recorded run and judge nothing.")
@click.option("--batch", "batch", is_flag=True,
              help="Judge through the model API's batch endpoint (OpenAI Batch with --api chat or responses, "
                   "Anthropic Message Batches with --api anthropic), priced at the batch rate; re-running resumes "
                   "the recorded batches (docs/how-to/batch.md).")
@click.option("--batch-size", type=int, default=None, help="Items per batch [default: 1000].")
@click.option("--poll-s", type=float, default=None, help="Seconds between polls of a batch [default: 30].")
@click.option("--batch-fallback", type=click.Choice(["online"]), default=None,
              help="Judge online the items two batches did not answer (errored, expired, cancelled); "
                   "without it they are left, counted, for the next run.")
@click.option("--backfill-pages", "backfill_pages", is_flag=True,
              help="Then fetch, through the fetch backend, the page of every item whose text the caller never "
                   "received (a hosted layer's bare URLs) and judge it as surface `backfill`, reported apart "
                   "(docs/how-to/hosted.md).")
@ship_to_option
@click.option("--ray", "ray_address", default=None, metavar="auto|ADDRESS",
              help="Fan the judge calls out on a Ray cluster (`auto`: the one this machine runs, else a local one): "
                   "--shards segments (items by their trajectory's cell), merged into --db; rate, concurrency and "
                   "key apply per shard; needs the ray extra (docs/how-to/scale.md).")
@click.option("--shards", type=click.IntRange(1, 4096), default=None, help="How many shards --ray judges (one actor each).")
@click.option("--segment-dir", default=None, metavar="DIR",
              help="With --ray: each actor writes its segment in DIR on its own node (no shared filesystem); the "
                   "driver fetches it through Ray, checked by size and sha256 [default: next to --db on every node].")
@click.pass_context
def judge(
    ctx: click.Context, db: Path, model: str | None, base_url: str | None, key_env: str | None, api: str,
    prompt_version: str | None, prompt_file: Path | None, judge_run_id: str | None, rps: float | None,
    concurrency: int, timeout_s: float, max_retries: int,
    sandbox: bool, sandbox_url: str | None, as_json: bool, no_progress: bool, make_default: bool, ship_to: str | None,
    ray_address: str | None, shards: int | None, segment_dir: str | None, batch: bool, batch_size: int | None,
    poll_s: float | None, batch_fallback: str | None, backfill_pages: bool,
) -> None:
    """Judge every URL the agent saw (one call per item); re-running the same judge run resumes it.

    `searchtrace judge compare A B` compares two judge runs instead (docs/concepts/statistics.md)."""
    if ctx.invoked_subcommand is not None:
        return
    if make_default and judge_run_id and not (model or sandbox or sandbox_url or ray_address or prompt_file
                                              or prompt_version):
        _mark_default(db, judge_run_id)  # nothing to judge: only the choice is recorded
        return
    if not batch and (batch_size is not None or poll_s is not None or batch_fallback is not None):
        raise click.UsageError("--batch-size, --poll-s and --batch-fallback go with --batch")
    if backfill_pages and (batch or ray_address is not None or shards is not None):
        raise click.UsageError("--backfill-pages judges online in this process: drop --batch and --ray (judge the "
                               "run with them first, then run the same judge run with --backfill-pages)")
    batched = None
    if batch:
        from searchtrace.replay import DEFAULT_BATCH_SIZE, DEFAULT_POLL_S

        batched = pipeline.BatchPlan(size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
                                     poll_s=DEFAULT_POLL_S if poll_s is None else poll_s,
                                     fallback="online" if batch_fallback == "online" else None)
    plan = pipeline.plan_judge(
        db, model=model, base_url=base_url, key_env=key_env, prompt_version=prompt_version, prompt_file=prompt_file,
        judge_run_id=judge_run_id, rps=rps, concurrency=concurrency, timeout_s=timeout_s, max_retries=max_retries,
        sandbox=sandbox, sandbox_url=sandbox_url, api=api, batch=batched,
    )
    if batch and (ray_address is not None or shards is not None):
        raise click.UsageError("--batch and --ray do not go together: a batch is one request per batch of items")
    if ray_address is not None or shards is not None or segment_dir is not None:
        _on_ray(plan, db, ray_address, shards, segment_dir=segment_dir, ship_to=ship_to, as_json=as_json,
                make_default=make_default)
        return
    chat = pipeline.judge_chat(model=plan.model, base_url=plan.base_url, key_env=plan.key_env, rps=plan.rps, api=plan.api,
                               concurrency=plan.concurrency, timeout_s=plan.timeout_s, max_retries=plan.max_retries,
                               sandbox=plan.sandbox, sandbox_url=plan.sandbox_url)
    shipped: list[str] = []
    with judge_progress(False if no_progress or as_json else None) as tick:
        # calls are paced by the adapter's endpoint limiter (rps/10 per 0.1 s)
        stats = anyio.run(lambda: pipeline.judge(db, chat, plan.options(), progress=tick, ship_to=ship_to, batch=plan.batch,
                                                 backfill=pipeline.backfill_fetcher(sandbox=plan.sandbox,
                                                                                    sandbox_url=plan.sandbox_url)
                                                 if backfill_pages else None,
                                                 on_shipped=lambda s: shipped.append(shipped_line(s, ship_to or ""))),
                          backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(stats).decode())
    else:
        click.echo(summary_text(stats))
    for line in shipped:
        click.echo(f"shipped: {line}", err=as_json)
    if make_default:
        _mark_default(db, stats.judge_run_id, err=as_json)
    if not isinstance(stats.backfill, msgspec.UnsetType) and stats.backfill.failed:
        for err in stats.backfill.errors:
            click.echo(f"searchtrace: backfill failed: {err}", err=True)
        click.echo(f"searchtrace: judge: {stats.backfill.failed} backfill pages failed on a transient error; run the "
                   "same command again to backfill them", err=True)
        raise SystemExit(1)
    if stats.failed:
        for err in stats.errors:
            click.echo(f"searchtrace: judge call failed: {err}", err=True)
        if stats.stopped:
            click.echo(f"searchtrace: judge {stats.stopped}; check the endpoint, then run the same command "
                       "again to resume", err=True)
        raise SystemExit(1)
    if not isinstance(stats.batch, msgspec.UnsetType) and stats.batch.left:
        click.echo(f"searchtrace: judge: {stats.batch.left} items have no verdict after two batches; run the same "
                   "command again, or add --batch-fallback online", err=True)
        raise SystemExit(1)


def _mark_default(db: Path, judge_run_id: str, *, err: bool = False) -> None:
    """`judge --default`: record the choice and say it in one line."""
    if pipeline.make_default(db, judge_run_id):
        click.echo(f"judge run {judge_run_id} is now the default of {db}: report, view and export use it unless "
                   "--judge-run-id names another", err=err)
    else:
        click.echo(f"judge run {judge_run_id} already is the default of {db}", err=err)


def _on_ray(plan: pipeline.JudgePlan, db: Path, address: str | None, shards: int | None, *, segment_dir: str | None,
            ship_to: str | None, as_json: bool, make_default: bool = False) -> None:
    """`judge --ray ADDRESS --shards N`: the shards on Ray, merged into --db; exit 1 while items lack a verdict."""
    if address is None or shards is None:
        raise click.UsageError("--ray and --shards go together (e.g. --ray auto --shards 4); --segment-dir needs them")
    if ship_to is not None:
        raise click.UsageError("--ray judges every shard itself and merges them into --db; drop --ship-to "
                               "(ship --db afterwards)")
    from searchtrace.pipeline import judge_on_ray

    done = judge_on_ray(plan, db, shards=shards, address=address, segment_dir=segment_dir)
    if as_json:
        click.echo(msgspec.json.encode(done).decode())
    else:
        for d in done.done:
            what = summary_text(d.judged) if d.judged is not None else f"stopped: {d.error}"
            fetched = f" ({d.fetched_bytes:,} segment bytes fetched)" if d.fetched_bytes else ""
            click.echo(f"shard {d.shard}/{done.shards} on {d.host or 'a lost node'}: {what}{fetched}")
        merged = (f"{done.merged.appended} events merged from {len(done.merged.segments)} segments" if done.merged
                  else "nothing to merge")
        click.echo(f"judge run {done.judge_run_id}: {done.items} items ({done.already} already judged in {db}, "
                   f"{done.judged} judged now by {len(done.done)} shards); {merged} in {done.elapsed_s:.1f} s"
                   + (f"; unfinished: {done.pending} items without a verdict, run the same command again"
                      if done.pending else ""))
    if make_default:
        _mark_default(db, done.judge_run_id, err=as_json)
    if done.pending:
        stopped = [d for d in done.done if d.error]
        for d in stopped:
            click.echo(f"searchtrace: judge shard {d.shard}/{done.shards}: {d.error}", err=True)
        click.echo(f"searchtrace: judge: {done.pending} items have no verdict yet; run the same command again to "
                   "judge them", err=True)
        raise SystemExit(1)


@judge.command("compare")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--tsv", "as_tsv", is_flag=True, help="Print every disagreeing item as TSV.")
def compare(db: Path, run_a: str, run_b: str, as_json: bool, as_tsv: bool) -> None:
    """Agreement of two judge runs over the items both judged validly: per label n, agreement, Cohen's kappa and
    the 2x2 table; each provider's partition and surface support rate under A and B over those same items; every
    disagreeing item."""
    if as_json and as_tsv:
        raise click.UsageError("use either --json or --tsv, not both")
    result = pipeline.judge_compare(db, run_a, run_b)
    if as_json:
        click.echo(json.dumps(msgspec.to_builtins(result), indent=1, sort_keys=True, ensure_ascii=False))
    elif as_tsv:
        click.echo(compare_tsv(result), nl=False)
    else:
        click.echo(compare_text(result))


def _labels_text(labels: VerdictLabels) -> str:
    parts = []
    for surface, got in (("snippet", labels.snippet), ("page", labels.page)):
        if got is not None:
            values = sorted(msgspec.structs.asdict(got).items())
            parts.append(surface + ":" + ",".join(f"{k}={'T' if v else 'F'}" for k, v in values))
    return " ".join(parts)


def _cell(text: str | None) -> str:
    return (text or "").replace("\t", " ").replace("\r", " ").replace("\n", " ")


def compare_tsv(result: JudgeComparison) -> str:
    """One line per disagreeing item: trajectory, url, provider, differing labels, both labels and rationales."""
    head = ("trajectory_id", "url", "provider", "differs", "labels_a", "labels_b", "rationale_a", "rationale_b")
    lines = ["\t".join(head)]
    for d in result.disagreements:
        lines.append("\t".join(_cell(x) for x in (
            d.trajectory_id, d.url, d.provider, ",".join(d.differs), _labels_text(d.a), _labels_text(d.b),
            d.a_rationale, d.b_rationale)))
    return "\n".join(lines) + "\n"


def compare_text(result: JudgeComparison) -> str:
    from searchtrace.analytics import OBSERVED_CELLS

    def num(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    lines = [f"judge runs A = {result.a}, B = {result.b}: {result.items_valid_in_both:,} items with a valid "
             "verdict in both",
             f"{'label':<26} {'n':>7} {'agreement':>9} {'kappa':>6} {'TT':>6} {'TF':>6} {'FT':>6} {'FF':>6}"]
    for name, s in result.labels.items():
        t = s.table
        lines.append(f"{name:<26} {s.n:>7,} {num(s.agreement, '.1%'):>9} {num(s.kappa, '.3f'):>6} "
                     f"{t.a_true_b_true:>6,} {t.a_true_b_false:>6,} {t.a_false_b_true:>6,} {t.a_false_b_false:>6,}")
    lines.append("each provider over its items valid in both runs:")
    lines.append(f"{'provider':<16} {'run':<3} {'items':>7} " + " ".join(f"{c.name:>6}" for c in OBSERVED_CELLS)
                 + f" {'S rate':>7}")
    for name, sides in result.providers.items():
        for label, side in (("A", sides.a), ("B", sides.b)):
            counts = " ".join(f"{side.partition.count(c):>6,}" for c in OBSERVED_CELLS)
            lines.append(f"{name:<16} {label:<3} {sides.items_valid_in_both:>7,} {counts} "
                         f"{num(side.surface_support_rate, '.3f'):>7}")
    lines.append(f"{len(result.disagreements):,} disagreeing items (--tsv lists them with both rationales)")
    return "\n".join(lines)
