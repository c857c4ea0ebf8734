"""`searchtrace sample`: docs/concepts/protocol.md stratified question sample, written as JSONL."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from searchtrace.engine import STRATA, read_questions, to_jsonl
from searchtrace.engine import sample as draw
from searchtrace.store import BadInput


@click.command("sample")
@click.option(
    "--questions",
    "questions",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Question file: JSONL, CSV or Parquet with question + strata columns (qid optional).",
)
@click.option("--n", "n", required=True, type=int, help="How many questions to sample.")
@click.option(
    "--seed",
    default="0",
    show_default=True,
    help="Seed string; order inside a stratum is sha256(seed + qid).",
)
@click.option(
    "--strata",
    default=",".join(STRATA),
    show_default=True,
    help="Comma-separated strata columns.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the sampled rows here (JSONL); stdout when omitted.",
)
def sample(questions: Path, n: int, seed: str, strata: str, out: Path | None) -> None:
    """Draw a proportional stratified sample of questions (largest remainder, deterministic by seed)."""
    columns = tuple(c.strip() for c in strata.split(",") if c.strip())
    if not columns:
        raise BadInput("--strata: name at least one column")
    rows = read_questions(questions)
    chosen = draw(rows, n, seed, source=str(questions), strata=columns)
    data = to_jsonl(chosen)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(out)
    except OSError as exc:
        raise BadInput(f"{out}: cannot write ({exc.strerror})") from None
    click.echo(f"sampled {len(chosen)} of {len(rows)} questions -> {out}", err=True)
