"""`searchtrace collect`: record OpenTelemetry-instrumented agents from the spans they export (docs/how-to/otel.md)."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from searchtrace.cli._proxy import _ID_CHARS, _size
from searchtrace.store import BadInput


def tool_names(search_tools: str | None, fetch_tools: str | None) -> tuple[list[str], list[str]]:
    """The comma-separated tool-name options as lists (empty: the defaults)."""
    return ([t.strip() for t in (search_tools or "").split(",") if t.strip()],
            [t.strip() for t in (fetch_tools or "").split(",") if t.strip()])


@click.command("collect")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--questions", "questions", required=True,
              help="Question file (JSONL / CSV / Parquet with qid, question, answer) or `sandbox`; a trace's "
                   "question is its searchtrace.qid attribute or its exact question text.")
@click.option("--run-id", required=True, help="Run the collected trajectories belong to (<run>:<provider>:<qid>).")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535))
@click.option("--provider", default=None, help="The search API, for traces without a searchtrace.provider attribute.")
@click.option("--search-tools", default=None, metavar="A,B",
              help="Tool names that search (default: search_web, web_search and <provider>_search for each provider).")
@click.option("--fetch-tools", default=None, metavar="A,B",
              help="Tool names that fetch a page (default: fetch_page, read_url, fetch_url, open_url, read_page, fetch).")
@click.option("--max-body", default="16MiB", show_default=True, metavar="SIZE",
              help="Largest export request (bytes, or KiB / MiB / GiB; gzip bodies inflated to at most this); "
                   "larger ones get a 413.")
def collect(db: Path, questions: str, run_id: str, port: int, provider: str | None, search_tools: str | None,
            fetch_tools: str | None, max_body: str) -> None:
    """An OTLP/HTTP receiver on 127.0.0.1 (POST /v1/traces, protobuf or JSON): each trace an agent exports becomes
    a trajectory, recorded as its spans arrive; reads (sql, report, view) work meanwhile. Point the agent's
    exporter at http://127.0.0.1:PORT/v1/traces (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)."""
    from searchtrace.adapters import SEARCH_PROVIDERS
    from searchtrace.pipeline import collect as serve
    from searchtrace.replay.interchange import ToolNames, default_search_tools

    if not run_id or not set(run_id) <= _ID_CHARS:
        raise BadInput(f"--run-id {run_id!r}: may only hold letters, digits, '.', '_' and '-'")
    if provider is not None and provider not in SEARCH_PROVIDERS:
        raise BadInput(f"--provider {provider[:80]!r}: not a search provider (one of: {', '.join(sorted(SEARCH_PROVIDERS))})")
    if questions != "sandbox" and not Path(questions).is_file():
        raise BadInput(f"--questions {questions}: no such file")
    search, fetch = tool_names(search_tools, fetch_tools)
    tools = ToolNames(search=frozenset(search or default_search_tools()), fetch=frozenset(fetch or ToolNames().fetch))
    cap = _size(max_body)

    def ready(host: str, bound: int) -> None:
        click.echo(f"searchtrace collect: recording run {run_id} into {db}; "
                   f"OTLP/HTTP endpoint http://{host}:{bound}/v1/traces", err=True)

    spans, abandoned, requests, dropped, refused = anyio.run(
        lambda: serve(db, questions, run_id, port=port, provider=provider, tools=tools, max_body=cap, ready=ready),
        backend="asyncio")
    click.echo(f"searchtrace collect: stopped; {spans} spans from {requests} requests recorded, "
               f"{abandoned} open trajectories abandoned"
               + (f", {dropped} acknowledged spans of traces that never named their question dropped" if dropped else "")
               + (f", {refused} spans refused (partial success; their reasons went to the exporter)" if refused else ""),
               err=True)
