"""`searchtrace proxy`: record any agent by pointing its base URLs at 127.0.0.1 (SPEC §15)."""

from __future__ import annotations

from pathlib import Path

import anyio
import click

from searchtrace.store import BadInput

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@click.command("proxy")
@click.option("--db", type=click.Path(path_type=Path, dir_okay=False), default=Path("searchtrace.duckdb"), show_default=True)
@click.option("--questions", "questions", required=True,
              help="Question file (JSONL / CSV / Parquet with qid, question, answer) or `sandbox`.")
@click.option("--run-id", required=True, help="Run the proxied trajectories belong to (<run>:<provider>:<qid>).")
@click.option("--port", default=8790, show_default=True, type=click.IntRange(0, 65535))
@click.option("--upstream", type=click.Choice(["live", "sandbox"]), default="live", show_default=True,
              help="Forward to the real endpoints (keys from this environment) or to the in-process sandbox world.")
@click.option("--durable", is_flag=True,
              help="Reply only once the call is committed (a SIGKILL then loses only unanswered calls; adds a commit per call).")
def proxy(db: Path, questions: str, run_id: str, port: int, upstream: str, durable: bool) -> None:
    """Serve every provider's, the fetch backend's and chat's routes under /t/<provider>/<qid>/ and record them."""
    from searchtrace.pipeline import proxy as serve

    if not run_id or not set(run_id) <= _ID_CHARS:
        raise BadInput(f"--run-id {run_id!r}: may only hold letters, digits, '.', '_' and '-'")
    if questions != "sandbox" and not Path(questions).is_file():
        raise BadInput(f"--questions {questions}: no such file")

    def ready(host: str, bound: int) -> None:
        click.echo(f"searchtrace proxy: recording run {run_id} into {db} ({upstream}); "
                   f"base URLs: http://{host}:{bound}/t/<provider>/<qid>/<route>", err=True)

    abandoned, appended = anyio.run(
        lambda: serve(db, questions, run_id, port=port, upstream=upstream, durable=durable, ready=ready), backend="asyncio"
    )
    click.echo(f"searchtrace proxy: stopped; {appended} events appended, {abandoned} open trajectories abandoned",
               err=True)
