"""`searchtrace proxy`: record any agent by pointing its base URLs at 127.0.0.1 (docs/how-to/own-agent.md)."""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import click

from searchtrace.cli._ship import ship_to_option, shipped_line
from searchtrace.store import BadInput

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}


def _size(text: str) -> int:
    """A byte count like `16MiB`, `512KiB` or `1048576`, at least 1 KiB."""
    t = text.strip().lower()
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    unit = t[len(digits):].strip()
    if not digits.isascii() or not digits.isdigit() or unit not in _UNITS or len(digits) > 12:
        raise BadInput(f"--max-body {text!r}: not a size (bytes, or with KiB / MiB / GiB)")
    n = int(digits) * _UNITS[unit]
    if not 1 << 10 <= n <= 1 << 32:
        raise BadInput(f"--max-body {text!r}: must be between 1 KiB and 4 GiB")
    return n


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
@click.option("--max-body", default="16MiB", show_default=True, metavar="SIZE",
              help="Largest request body an agent may send (bytes, or KiB / MiB / GiB); larger ones get a 413.")
@click.option("--max-turns", type=click.IntRange(1, 2**63 - 1), default=None, metavar="N",
              help="Per trajectory: the model call after N turns gets HTTP 400 `limit`; it finishes with reason limit.")
@click.option("--max-tokens", type=click.IntRange(1, 2**63 - 1), default=None, metavar="T",
              help="Per trajectory: a model call whose input (estimated) would take its tokens past T is refused.")
@click.option("--max-usd", type=float, default=None, metavar="D",
              help="Per trajectory: a call that would take its cost past D USD is refused (needs --prices).")
@click.option("--prices", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Price file (TOML, docs/reference/prices.md) that prices --max-usd.")
@click.option("--final", "final", type=click.Choice(["call", "last-reply"]), default="call", show_default=True,
              help="last-reply: a trajectory closed without an answer (the proxy stops, or `final` with {}) takes "
                   "its last model reply without tool calls as its answer.")
@ship_to_option
def proxy(db: Path, questions: str, run_id: str, port: int, upstream: str, durable: bool, max_body: str,
          max_turns: int | None, max_tokens: int | None, max_usd: float | None, prices: Path | None,
          final: str, ship_to: str | None) -> None:
    """Serve every provider's, the fetch backend's and chat's routes under /t/<provider>/<qid>/ and record them."""
    from searchtrace.engine import load_prices
    from searchtrace.engine.proxy import Limits
    from searchtrace.pipeline import proxy as serve

    if not run_id or not set(run_id) <= _ID_CHARS:
        raise BadInput(f"--run-id {run_id!r}: may only hold letters, digits, '.', '_' and '-'")
    body_cap = _size(max_body)
    if max_usd is not None and not (math.isfinite(max_usd) and 0 <= max_usd <= 1e9):
        raise BadInput(f"--max-usd {max_usd}: must be a finite number of USD from 0 to 1e9")
    if (max_usd is None) != (prices is None):
        raise BadInput("--max-usd needs --prices (the table that prices it), and --prices is only for --max-usd")
    limits = Limits(max_turns=max_turns, max_tokens=max_tokens, max_usd=max_usd,
                    prices=load_prices(prices) if prices is not None else None)
    if questions != "sandbox" and not Path(questions).is_file():
        raise BadInput(f"--questions {questions}: no such file")

    def ready(host: str, bound: int) -> None:
        click.echo(f"searchtrace proxy: recording run {run_id} into {db} ({upstream}); "
                   f"base URLs: http://{host}:{bound}/t/<provider>/<qid>/<route> (or http://{host}:{bound}/<route> "
                   "with header X-Searchtrace-Trajectory: <provider>/<qid>)", err=True)

    abandoned, appended = anyio.run(
        lambda: serve(db, questions, run_id, port=port, upstream=upstream, durable=durable, ready=ready,
                      max_body=body_cap, limits=limits if limits.any else None, final=final, ship_to=ship_to,
                      on_shipped=lambda s: click.echo(f"searchtrace proxy: shipped: {shipped_line(s, ship_to or '')}",
                                                      err=True)),
        backend="asyncio",
    )
    click.echo(f"searchtrace proxy: stopped; {appended} events appended, {abandoned} open trajectories abandoned",
               err=True)
