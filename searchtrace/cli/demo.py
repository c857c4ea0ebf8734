"""`searchtrace demo`: the whole pipeline on the embedded sandbox world; no key, no network, about a minute.

Starts the sandbox in-process (httpx ASGI transport), samples its questions, records all three personas
(the production Brave / Tavily / Firecrawl adapters against it), judges every item with `sandbox-judge`,
prints the report and says where the database and the HTML report are. Running it again resumes: recorded
trajectories and judged items are not called again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import click
import msgspec
from rich.console import Console

from searchtrace.analytics.table import render_table
from searchtrace.cli.record import summary_text
from searchtrace.engine.agent import Stats
from searchtrace.engine.config import point_at_sandbox, sandbox_config
from searchtrace.engine.progress import progress_display
from searchtrace.engine.record import RunSummary, endpoint_factory, record_run
from searchtrace.store.log import EventLog

ROOT = "http://sandbox"
JUDGE_MODEL = "sandbox-judge"


class DemoResult(msgspec.Struct, kw_only=True):
    record: RunSummary
    judge: dict[str, Any]
    db: str
    html: str
    report: dict[str, Any]
    elapsed_s: float


async def _judge(log: EventLog, transport: Any) -> dict[str, Any]:
    """Judges every recorded item with the sandbox's deterministic judge model."""
    from searchtrace.adapters.registry import SANDBOX_KEY, build_chat, sandbox_endpoint
    from searchtrace.replay.judge import run_judge

    chat = build_chat(JUDGE_MODEL, sandbox_endpoint("openai", ROOT, concurrency=32), transport=transport,
                      key_fallback=SANDBOX_KEY)
    try:
        stats = await run_judge(log, model=JUDGE_MODEL, chat=chat, concurrency=32)
    finally:
        await chat.aclose()
    out: dict[str, Any] = msgspec.to_builtins(stats)
    return out


def _report(log: EventLog, out: Path, judge_run_id: str | None) -> tuple[dict[str, Any], str]:
    """Grades the answers (a proposal; an imported audit would win), then builds the §8 report and its HTML page."""
    from searchtrace.analytics.html import extras_from_db, render
    from searchtrace.analytics.report import build_report
    from searchtrace.replay.grade import grade_answers

    grade_answers(log)
    cur = log.cursor()
    try:
        report = build_report(cur, judge_run_id=judge_run_id)
        html = render(report, extra=extras_from_db(cur, report.get("judge_run_id")))
    finally:
        cur.close()
    page = out / "report.html"
    page.write_text(html, encoding="utf-8")
    return report, str(page)


async def run_demo(
    db: Path, out: Path, n: int | None, *, progress: bool | None = None, epochs: int = 1
) -> DemoResult:
    import httpx

    from searchtrace.adapters.sandbox.app import create_app

    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    cfg = sandbox_config(n=n, cache_dir=str(out / "fetch-cache"), epochs=epochs)
    point_at_sandbox(cfg, ROOT)
    transport = httpx.ASGITransport(app=create_app())
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        stats = Stats()
        with progress_display(stats, label="demo", enabled=progress) as tick:
            summary = await record_run(cfg, log, endpoint_factory(transport), stats=stats, on_progress=tick)
        judge = await _judge(log, transport)
        report, html = await anyio.to_thread.run_sync(_report, log, db.parent, judge.get("judge_run_id"))
    finally:
        await anyio.to_thread.run_sync(log.close)
    return DemoResult(record=summary, judge=judge, db=str(db), html=html, report=report,
                      elapsed_s=time.perf_counter() - t0)


@click.command("demo")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Database file (default: <out>/demo.duckdb).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("searchtrace-demo"),
              show_default=True, help="Folder for the database, the fetch cache and report.html (report.html goes next to --db).")
@click.option("--n", type=int, default=30, show_default=True, help="Questions sampled from the sandbox world.")
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Record every (provider, question) cell this many times (SPEC §12).")
@click.option("--json", "as_json", is_flag=True, help="Print the record / judge summary and report as JSON.")
def demo(db: Path | None, out: Path, n: int, epochs: int, as_json: bool) -> None:
    """Record the three sandbox personas, judge every item, print the report (no key, no network)."""
    db = db or out / "demo.duckdb"
    result = anyio.run(lambda: run_demo(db, out, n, epochs=epochs), backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    click.echo(summary_text(result.record))
    j = result.judge
    click.echo(f"judge run {j['judge_run_id']}: {j['items']} items, {j['already']} already judged, "
               f"{j['valid']} valid / {j['invalid']} invalid verdicts now, {j['failed']} failed")
    render_table(result.report, Console())
    click.echo(f"database: {result.db}")
    click.echo(f"HTML report: {result.html}")
    click.echo(f"demo finished in {result.elapsed_s:.1f} s; try `searchtrace sql --db {result.db} \"SELECT type, count(*) "
               "FROM events GROUP BY 1\"`")
