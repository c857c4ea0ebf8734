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

from engine.agent import Stats
from engine.commands.record import first_bad_input, summary_text
from engine.config import point_at_sandbox, sandbox_config
from engine.progress import progress_display
from engine.record import RunSummary, endpoint_factory, record_run
from store.log import EventLog

ROOT = "http://sandbox"
JUDGE_MODEL = "sandbox-judge"


class DemoResult(msgspec.Struct, kw_only=True):
    record: RunSummary
    judge: dict[str, Any] | None
    judge_note: str | None
    db: str
    html: str | None
    report: dict[str, Any] | None
    elapsed_s: float


async def _judge(log: EventLog, transport: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Runs H7's judge over every recorded item with the sandbox judge model (skipped with a note if absent)."""
    try:
        from replay.judge import run_judge
    except ImportError as exc:
        return None, f"judge skipped: replay.judge is not available ({exc})"
    from adapters.registry import SANDBOX_KEY, build_chat, sandbox_endpoint

    chat = build_chat(JUDGE_MODEL, sandbox_endpoint("openai", ROOT, concurrency=32), transport=transport,
                      key_fallback=SANDBOX_KEY)
    try:
        stats = await run_judge(log, model=JUDGE_MODEL, chat=chat, concurrency=32)
    finally:
        await chat.aclose()
    out: dict[str, Any] = msgspec.to_builtins(stats)
    return out, None


def _report(log: EventLog, out: Path, judge_run_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The §8 report and its HTML page (H4's analytics), or (None, None) when analytics is not there yet."""
    try:
        from analytics.html import extras_from_db, render
        from analytics.report import build_report
    except ImportError:
        return None, None
    cur = log.cursor()
    try:
        report = build_report(cur, judge_run_id=judge_run_id)
        html = render(report, extra=extras_from_db(cur, report.get("judge_run_id")))
    finally:
        cur.close()
    page = out / "report.html"
    page.write_text(html, encoding="utf-8")
    return report, str(page)


async def run_demo(db: Path, out: Path, n: int | None, *, progress: bool | None = None) -> DemoResult:
    import httpx

    from adapters.sandbox.app import create_app

    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    cfg = sandbox_config(n=n, cache_dir=str(out / "fetch-cache"))
    point_at_sandbox(cfg, ROOT)
    transport = httpx.ASGITransport(app=create_app())
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        stats = Stats()
        with progress_display(stats, label="demo", enabled=progress) as tick:
            try:
                summary = await record_run(cfg, log, endpoint_factory(transport), stats=stats, on_progress=tick)
            except BaseExceptionGroup as eg:
                raise first_bad_input(eg) from None
        judge, note = await _judge(log, transport)
        jrid = judge.get("judge_run_id") if judge else None
        report, html = await anyio.to_thread.run_sync(_report, log, out, jrid)
    finally:
        await anyio.to_thread.run_sync(log.close)
    return DemoResult(record=summary, judge=judge, judge_note=note, db=str(db), html=html, report=report,
                      elapsed_s=time.perf_counter() - t0)


def print_report(report: dict[str, Any]) -> None:
    """The report as a terminal table (H4's renderer when present, else a compact rich table)."""
    from rich.console import Console

    try:
        from analytics.table import render_table
    except ImportError:
        pass
    else:
        render_table(report, Console())
        return
    from rich.table import Table

    cols = [
        ("trajectories", "traj"), ("correct", "correct"), ("exact_match", "EM"), ("token_f1", "F1"),
        ("searches_per_trajectory", "search/t"), ("fetches_per_trajectory", "fetch/t"), ("valid_items", "items"),
        ("surface_support_rate", "surface support"), ("gold_rank1_share", "gold rank-1"),
        ("contradiction_gold_ratio", "contra/gold"),
    ]
    table = Table(title=f"judge run {report.get('judge_run_id')}")
    table.add_column("provider")
    for _, head in cols:
        table.add_column(head, justify="right")
    table.add_column("SMART/MISSED/BLIND/NO-OP", justify="right")
    for name, p in sorted(report.get("providers", {}).items()):
        cells = []
        for key, _ in cols:
            v = p.get(key)
            cells.append("—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v))
        part = p.get("partition", {})
        cells.append("/".join(str(part.get(k, 0)) for k in ("SMART", "MISSED", "BLIND", "NO-OP")))
        table.add_row(name, *cells)
    Console().print(table)


@click.command("demo")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Database file (default: <out>/demo.duckdb).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("searchtrace-demo"),
              show_default=True, help="Folder for the database, the fetch cache and report.html.")
@click.option("--n", type=int, default=30, show_default=True, help="Questions sampled from the sandbox world.")
@click.option("--json", "as_json", is_flag=True, help="Print the record / judge summary and report as JSON.")
def demo(db: Path | None, out: Path, n: int, as_json: bool) -> None:
    """Record the three sandbox personas, judge every item, print the report (no key, no network)."""
    db = db or out / "demo.duckdb"
    result = anyio.run(lambda: run_demo(db, out, n), backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    click.echo(summary_text(result.record))
    if result.judge is not None:
        j = result.judge
        click.echo(f"judge run {j['judge_run_id']}: {j['items']} items, {j['already']} already judged, "
                   f"{j['valid']} valid / {j['invalid']} invalid verdicts now, {j['failed']} failed")
    elif result.judge_note:
        click.echo(result.judge_note)
    if result.report is not None:
        print_report(result.report)
    click.echo(f"database: {result.db}")
    click.echo(f"HTML report: {result.html}" if result.html else "HTML report: not available (analytics not installed)")
    click.echo(f"demo finished in {result.elapsed_s:.1f} s; try `searchtrace sql --db {result.db} \"SELECT type, count(*) "
               "FROM events GROUP BY 1\"`")
