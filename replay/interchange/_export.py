"""`export`: the stored events back into the SPEC §9 files, plus the events table as Parquet.

What the formats cannot carry (model text and tool calls, refused tool calls, retries, raw responses, search
status) is left out; what the metrics read survives, so import -> export -> import gives the same report.
Verdicts: the first per item and judge run (the one the metrics use). Audits: per (provider, qid) the deciding
one (a non-LLM source before an LLM grader, then the latest), written as `true`/`false`.
Attempts: a trajectory that a later attempt of its cell supersedes (it ended in `error` and `record` recorded the
cell again) is not written, nor are its verdicts: the files hold one trajectory per (provider, qid), the latest,
so they import again; `events.parquet` keeps every event, superseded attempts included.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from searchtrace.analytics import Cells, is_proposal
from searchtrace.replay.interchange._common import RUN_ID as IMPORT_RUN
from searchtrace.replay.interchange._formats import (
    AUDIT_HEADER,
    FetchStep,
    JudgmentLine,
    ModelStep,
    Result,
    SearchStep,
    StepUsage,
    TraceLine,
    encoder,
)
from searchtrace.store import (
    AnswerFinal,
    AuditAnswer,
    BadInput,
    DatasetQuestion,
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeStarted,
    JudgeVerdict,
    ModelResponded,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
    epoch_of,
)

_TRACE_TYPES = [
    "dataset.question",
    "trajectory.started",
    "model.responded",
    "search.called",
    "search.result",
    "search.completed",
    "fetch.called",
    "fetch.completed",
    "answer.final",
    "trajectory.finished",
]


class _Draft(msgspec.Struct, kw_only=True):
    steps: list[ModelStep | SearchStep | FetchStep] = []
    stop_reason: str = "error"


def traces_of(log: EventLog) -> tuple[list[TraceLine], set[str]]:
    """(the latest attempt of every cell as a trace line, the trajectory ids of the superseded attempts)."""
    drafts: dict[str, _Draft] = {}
    run_of: dict[str, str] = {}  # trajectory stream -> the run that recorded it
    cells = Cells()  # which trajectories are current, their question, gold and final answer
    for ev in log.read(types=_TRACE_TYPES):
        p = ev.payload
        cells.add(ev.stream_id, p)
        if isinstance(p, DatasetQuestion | AnswerFinal):
            continue
        if isinstance(p, TrajectoryStarted):
            drafts.setdefault(ev.stream_id, _Draft(steps=[]))
            run_of.setdefault(ev.stream_id, ev.run_id)
            continue
        d = drafts.get(ev.stream_id)
        if d is None:
            continue
        if isinstance(p, ModelResponded):
            u = StepUsage(
                input_tokens=p.usage.input_tokens,
                output_tokens=p.usage.output_tokens,
                reasoning_tokens=p.usage.reasoning_tokens,
            )
            d.steps.append(ModelStep(iteration=p.iteration, usage=u, latency_ms=p.latency_ms,
                                     provider_ms=p.provider_ms, queue_ms=p.queue_ms))
        elif isinstance(p, SearchCalled):
            d.steps.append(SearchStep(iteration=p.iteration, call_id=p.call_id, query=p.query, results=[]))
        elif isinstance(p, SearchResult | SearchCompleted):
            step = next((s for s in reversed(d.steps) if isinstance(s, SearchStep) and s.call_id == p.call_id), None)
            if step is None:
                continue
            if isinstance(p, SearchResult):
                step.results.append(
                    Result(
                        doc_id=p.doc_id,
                        rank=p.rank,
                        url=p.url,
                        title=p.title,
                        domain=p.domain,
                        snippet=p.snippet,
                        metadata=p.metadata,
                    )
                )
            else:
                step.latency_ms, step.provider_ms, step.queue_ms = p.latency_ms, p.provider_ms, p.queue_ms
        elif isinstance(p, FetchCalled | FetchCompleted) and p.doc_id is None:
            continue  # a proxied fetch of a URL no result showed: no judge item, and §9 has no step for it
        elif isinstance(p, FetchCalled) and p.doc_id is not None:
            d.steps.append(
                FetchStep(iteration=p.iteration, call_id=p.call_id, doc_id=p.doc_id, url=p.url, status="http_error")
            )
        elif isinstance(p, FetchCompleted):
            fetch = next(
                (
                    s
                    for s in reversed(d.steps)
                    if isinstance(s, FetchStep) and s.call_id == p.call_id and s.doc_id == p.doc_id
                ),
                None,
            )
            if fetch is None:
                continue
            fetch.status, fetch.n_tokens, fetch.latency_ms = p.status, p.n_tokens, p.latency_ms
            fetch.provider_ms, fetch.queue_ms = p.provider_ms, p.queue_ms
            if p.content_digest is not None and log.has_blob(p.content_digest):
                fetch.content = log.get_blob(p.content_digest).decode("utf-8", errors="replace")
        elif isinstance(p, TrajectoryFinished):
            d.stop_reason = p.reason
    out: list[TraceLine] = []
    for stream, s in cells.current():
        d = drafts[stream]
        out.append(
            TraceLine(
                trajectory_id=s.trajectory_id,
                provider=s.provider,
                qid=s.qid,
                question=cells.question(s),
                gold_answer=cells.gold(s),
                final_answer=cells.final(stream),
                stop_reason=d.stop_reason,  # type: ignore[arg-type]
                steps=d.steps,
                epoch=epoch_of(s),
                run_id=None if run_of[stream] == IMPORT_RUN else run_of[stream],
            )
        )
    return out, cells.superseded


def judgments_of(log: EventLog, skip: set[str]) -> list[JudgmentLine]:
    seen: set[tuple[str, str, str]] = set()
    runs: list[str] = []
    by_run: dict[str, list[JudgmentLine]] = {}
    for ev in log.read(types=["judge.started", "judge.verdict"]):
        p = ev.payload
        if isinstance(p, JudgeStarted):
            if p.judge_run_id not in by_run:
                runs.append(p.judge_run_id)
                by_run[p.judge_run_id] = []
            continue
        assert isinstance(p, JudgeVerdict)
        key = (p.judge_run_id, p.item.trajectory_id, p.item.url_normalized)
        if key in seen or p.item.trajectory_id in skip:
            continue
        seen.add(key)
        if p.judge_run_id not in by_run:
            runs.append(p.judge_run_id)
            by_run[p.judge_run_id] = []
        by_run[p.judge_run_id].append(
            JudgmentLine(
                judge_run_id=p.judge_run_id,
                trajectory_id=p.item.trajectory_id,
                url=p.item.url_normalized,
                valid=p.valid,
                labels=msgspec.to_builtins(p.labels) if p.labels is not None else None,
                invalid_reason=p.invalid_reason,
            )
        )
    return [line for run in runs for line in by_run[run]]


def _audits(log: EventLog, traces: list[TraceLine]) -> list[tuple[str, str, bool]]:
    key_of = {t.trajectory_id: (t.provider, t.qid) for t in traces}
    best: dict[tuple[str, str], tuple[tuple[int, int], bool]] = {}
    for ev in log.read(types=["audit.answer"]):
        p = ev.payload
        assert isinstance(p, AuditAnswer)
        if p.trajectory_id is not None:
            key = key_of.get(p.trajectory_id)
        elif p.provider is not None and p.qid is not None:
            key = (p.provider, p.qid)
        else:
            key = None
        if key is None:
            continue
        rank = (0 if is_proposal(p.source) else 1, ev.position)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, p.semantic_match)
    return [(k[0], k[1], v[1]) for k, v in sorted(best.items())]


def export_all(log: EventLog, out: Path) -> dict[str, int]:
    """Write the four files into `out` (created if needed); returns the rows written per file."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{out}: cannot create the folder ({exc.strerror})") from None
    traces, superseded = traces_of(log)
    with (out / "traces.jsonl").open("wb") as fh:
        for t in traces:
            fh.write(encoder.encode(t) + b"\n")
    judgments = judgments_of(log, superseded)
    with (out / "judgments.jsonl").open("wb") as fh:
        for j in judgments:
            fh.write(encoder.encode(j) + b"\n")
    audits = _audits(log, traces)
    with (out / "audit.tsv").open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("\t".join(AUDIT_HEADER) + "\n")
        for provider, qid, value in audits:
            fh.write(f"{provider}\t{qid}\t{'true' if value else 'false'}\n")
    parquet = out / "events.parquet"
    cur = log.cursor()
    try:
        cur.execute(f"COPY (SELECT * FROM events ORDER BY position) TO '{_sql_str(parquet)}' (FORMAT PARQUET)")
        row = cur.execute("SELECT count(*) FROM events").fetchone()
    finally:
        cur.close()
    return {
        "traces.jsonl": len(traces),
        "judgments.jsonl": len(judgments),
        "audit.tsv": len(audits),
        "events.parquet": int(row[0]) if row else 0,
    }


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")
