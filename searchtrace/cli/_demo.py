"""`searchtrace demo`: the whole pipeline on the embedded sandbox world; no key, no network, about a minute.

Starts the sandbox in-process (httpx ASGI transport), samples its questions, records the paper's three personas
(the production Brave / Tavily / Firecrawl adapters against it; `--providers all` adds the eight of docs/how-to/providers.md), judges every item with `sandbox-judge`,
prints the report and says where the database and the HTML report are. Running it again resumes: recorded
trajectories and judged items are not called again.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import click
import msgspec
from rich.console import Console

from searchtrace import analytics, pipeline
from searchtrace.adapters import CHAT_APIS
from searchtrace.cli._record import summary_text
from searchtrace.engine import MAX_EPOCHS


@click.command("demo")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Database file (default: <out>/demo.duckdb).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("searchtrace-demo"),
              show_default=True, help="Folder for the database, the fetch cache and report.html (report.html goes next to --db).")
@click.option("--n", type=int, default=30, show_default=True, help="Questions sampled from the sandbox world.")
@click.option("--epochs", type=click.IntRange(1, MAX_EPOCHS), default=1, show_default=True,
              help="Record every (provider, question) cell this many times (docs/concepts/statistics.md).")
@click.option("--providers", "providers_spec", default="paper", show_default=True,
              help="Sandbox personas: paper (the paper's three), hosted (the paper's three and the five hosted search "
                   "layers, docs/how-to/hosted.md), all (every search provider and hosted layer), or names separated "
                   "by commas.")
@click.option("--agent-api", type=click.Choice(CHAT_APIS), default="chat", show_default=True,
              help="The model API the scripted agent is asked over (docs/how-to/claude-gemini.md).")
@click.option("--json", "as_json", is_flag=True, help="Print the record / judge summary and report as JSON.")
def demo(db: Path | None, out: Path, n: int, epochs: int, providers_spec: str, agent_api: str, as_json: bool) -> None:
    """Record sandbox personas (the paper's three by default), judge every item, print the report (no key, no network)."""
    providers = pipeline.demo_providers(providers_spec)
    db = db or out / "demo.duckdb"
    result = anyio.run(lambda: pipeline.demo(db, out, n, epochs=epochs, providers=providers,
                                                   agent_api=agent_api), backend="asyncio")
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    click.echo(summary_text(result.record))
    j = result.judge
    click.echo(f"judge run {j['judge_run_id']}: {j['items']} items, {j['already']} already judged, "
               f"{j['valid']} valid / {j['invalid']} invalid verdicts now, {j['failed']} failed")
    analytics.render_table(result.report, Console())
    click.echo(f"database: {result.db}")
    click.echo(f"HTML report: {result.html}")
    click.echo(f"demo finished in {result.elapsed_s:.1f} s; try `searchtrace sql --db {result.db} \"SELECT type, count(*) "
               "FROM events GROUP BY 1\"`")
