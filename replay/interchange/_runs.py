"""run.jsonl beside traces.jsonl (docs/concepts/shown.md) -> each run's stream `run:<run_id>`: run.started, its questions, and
run.finished, under the ids `record` and `proxy` give them, so an export re-imported into its own store adds nothing
and a run keeps its id and config."""

from __future__ import annotations

from pathlib import Path

from searchtrace.engine import parse_prices, run_opening, run_stream
from searchtrace.replay.interchange._common import Known, decode_line, fail, lines
from searchtrace.replay.interchange._formats import run_decoder
from searchtrace.store import BadInput, DatasetQuestion, NewEvent, RunFinished, shown, stable_event_id

RUNS_FILE = "run.jsonl"


def runs_beside(traces: list[Path]) -> list[Path]:
    """The run.jsonl beside each traces file, where there is one."""
    return list(dict.fromkeys(p.parent / RUNS_FILE for p in traces if (p.parent / RUNS_FILE).is_file()))


def validate_runs(path: Path, known: Known) -> list[NewEvent]:
    """Check the whole file; the events of each run. A run the store holds under another config is refused."""
    seen: dict[str, int] = {}
    out: list[NewEvent] = []
    for n, raw in lines(path):
        r = decode_line(run_decoder, path, n, raw)
        if r.run_id in seen:
            raise fail(path, n, "run_id", f"{shown(r.run_id)} already on line {seen[r.run_id]}")
        seen[r.run_id] = n
        have = known.runs.get(r.run_id)
        if have is not None and have != (r.config, r.code_version):
            raise fail(path, n, "config", f"run {shown(r.run_id)} is already in the database with another config")
        known.runs[r.run_id] = (r.config, r.code_version)
        if r.config.get("prices") is not None:  # every later report reads them: a bad price is refused here
            try:
                parse_prices(r.config["prices"], "prices")
            except BadInput as exc:
                raise fail(path, n, "config.prices", str(exc).removeprefix("prices: ")) from None
        for q in r.questions:
            if isinstance(q.gold_aliases, list) and q.gold_aliases[:1] != [q.gold_answer]:
                raise fail(path, n, "questions.gold_aliases", f"question {shown(q.qid)}: the first alias must be gold_answer")
        out += run_opening(r.run_id, r.config, [DatasetQuestion(qid=q.qid, question=q.question, gold_answer=q.gold_answer,
                                                                strata=q.strata, gold_aliases=q.gold_aliases)
                                                for q in r.questions], code=r.code_version)
        if r.counts is not None:
            out.append(NewEvent(stream_id=run_stream(r.run_id), run_id=r.run_id, event_id=stable_event_id("run.finished", r.run_id),
                                payload=RunFinished(counts=r.counts)))
    return out
