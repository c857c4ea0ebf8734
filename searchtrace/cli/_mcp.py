"""`searchtrace mcp`: searchtrace as a recording MCP search server, and `mcp wrap`: a recording relay for another MCP
search server (docs/how-to/mcp.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio
import click

from searchtrace.adapters import SEARCH_PROVIDERS
from searchtrace.cli._proxy import _ID_CHARS, _size
from searchtrace.store import BadInput


def _check(run_id: str | None, questions: str | None, provider: str | None) -> tuple[str, str, str]:
    """The options every `mcp` command needs, checked (one line each); and the extra that serves MCP."""
    if importlib.util.find_spec("mcp") is None:
        raise BadInput("searchtrace mcp needs the mcp extra: pip install 'searchtrace[mcp]'")
    for name, value in (("--run-id", run_id), ("--questions", questions), ("--provider", provider)):
        if not value:
            raise BadInput(f"missing option {name}")
    assert run_id and questions and provider
    if not set(run_id) <= _ID_CHARS:
        raise BadInput(f"--run-id {run_id!r}: may only hold letters, digits, '.', '_' and '-'")
    if questions != "sandbox" and not Path(questions).is_file():
        raise BadInput(f"--questions {questions}: no such file")
    if provider not in SEARCH_PROVIDERS:
        raise BadInput(f"--provider: unknown search provider {provider!r} (known: {', '.join(sorted(SEARCH_PROVIDERS))})")
    return run_id, questions, provider


_db = click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"),
                   show_default=True)
_questions = click.option("--questions", "questions", default=None,
                          help="Question file (JSONL / CSV / Parquet with qid, question, answer) or `sandbox`.")
_run_id = click.option("--run-id", default=None, help="Run the trajectories belong to (<run>:<provider>:<qid>).")
_provider = click.option("--provider", "-p", default=None,
                         help=f"The search API under test: {', '.join(sorted(SEARCH_PROVIDERS))}.")
_qid = click.option("--qid", default=None,
                    help="The question this stdio server answers (else the first call's `question` argument names it).")


@click.group("mcp", invoke_without_command=True)
@_db
@_questions
@_run_id
@_provider
@_qid
@click.option("--sandbox", is_flag=True, help="Search and fetch in the in-process sandbox world, not the real API.")
@click.option("--http", "http", is_flag=True,
              help="Serve streamable HTTP on 127.0.0.1 (/t/<provider>/<qid>/mcp) instead of stdio.")
@click.option("--port", default=8791, show_default=True, type=click.IntRange(0, 65535), help="With --http.")
@click.option("--max-body", default="16MiB", show_default=True, metavar="SIZE",
              help="With --http: the largest request body (bytes, or KiB / MiB / GiB); larger ones get a 413.")
@click.pass_context
def mcp(ctx: click.Context, db: Path, questions: str | None, run_id: str | None, provider: str | None,
        qid: str | None, sandbox: bool, http: bool, port: int, max_body: str) -> None:
    """An MCP server offering search_web, fetch_page and final_answer over one provider; every call is recorded
    as a trajectory of run --run-id. Over stdio (the default) it serves one trajectory; with --http, one per
    /t/<provider>/<qid>/mcp (or /mcp with header X-Searchtrace-Trajectory: <provider>/<qid>)."""
    if ctx.invoked_subcommand is not None:
        return
    run, qfile, prov = _check(run_id, questions, provider)
    if http and qid is not None:
        raise BadInput("--qid is for a stdio server; over --http the path or header names each trajectory")
    cap = _size(max_body)
    from searchtrace.pipeline import mcp_serve

    def ready(where: str) -> None:
        if where == "stdio":
            click.echo(f"searchtrace mcp: recording run {run} into {db} ({'sandbox' if sandbox else 'live'} {prov}); "
                       "serving MCP on stdio", err=True)
        else:
            click.echo(f"searchtrace mcp: recording run {run} into {db} ({'sandbox' if sandbox else 'live'} {prov}); "
                       f"MCP endpoint {where}/t/{prov}/<qid>/mcp (or {where}/mcp with header "
                       f"X-Searchtrace-Trajectory: {prov}/<qid>)", err=True)

    abandoned, appended = anyio.run(
        lambda: mcp_serve(db, qfile, run, provider=prov, sandbox=sandbox, qid=qid, http=http, port=port,
                          ready=ready, max_body=cap), backend="asyncio")
    click.echo(f"searchtrace mcp: stopped; {appended} events appended, {abandoned} open trajectories abandoned",
               err=True)


@mcp.command("wrap", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@_db
@_questions
@_run_id
@_provider
@_qid
@click.option("--max-result", default="16MiB", show_default=True, metavar="SIZE",
              help="The largest JSON-RPC line read to be recorded (bytes, or KiB / MiB / GiB); a longer one is "
                   "relayed unread and its call recorded as bad_response.")
@click.argument("cmd", nargs=-1, type=click.UNPROCESSED)
def wrap(db: Path, questions: str | None, run_id: str | None, provider: str | None, qid: str | None,
         max_result: str, cmd: tuple[str, ...]) -> None:
    """Relay stdio to another MCP server (the command after `--`) unchanged, recording its search tools' results
    (brave_web_search, tavily_search, web_search_exa, firecrawl_search) as searches and other tools as
    tool.called, into the trajectory of --qid (or of the question a call's `question` argument names)."""
    run, qfile, prov = _check(run_id, questions, provider)
    if not cmd:
        raise BadInput("mcp wrap: no server command; give it after `--`, e.g. `-- npx -y firecrawl-mcp`")
    cap = _size(max_result)
    from searchtrace.pipeline import mcp_wrap

    outcome, abandoned, appended = anyio.run(
        lambda: mcp_wrap(db, qfile, run, provider=prov, cmd=list(cmd), qid=qid, max_frame=cap), backend="asyncio")
    if outcome.fault is not None:
        click.echo(f"searchtrace mcp wrap: error: {outcome.fault}; the trajectory finished with reason error, "
                   f"{appended} events appended", err=True)
        raise SystemExit(1)
    click.echo(f"searchtrace mcp wrap: the server exited with code {outcome.exit_code}; {appended} events appended, "
               f"{abandoned} open trajectories abandoned", err=True)
    if outcome.exit_code:
        raise SystemExit(1)
