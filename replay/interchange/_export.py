"""`export`: the stored events back into the docs/reference/interchange.md files (lossless), plus the events table as Parquet.

Each trajectory is read through `fold` and written with every field import needs to rebuild its payloads byte for
byte through the same Builder: model turns in full with their request messages, tool refusals, failed calls,
retries, search status, run ids; run.jsonl holds each run's stream (run.started config, questions, run.finished),
and with a blobs folder the raw replies and pages are written by digest (without it the raw digests are left out).
Verdicts: the first per item and judge run (the one the metrics use). Audits: per (provider, qid) the deciding
one (a non-LLM source before an LLM grader, then the latest), written as `true`/`false`.
Attempts: a trajectory that a later attempt of its cell supersedes (it ended in `error` and `record` recorded the
cell again) is not written, nor are its verdicts: the files hold one trajectory per (provider, qid), the latest,
so they import again; `events.parquet` keeps every event, superseded attempts included.
Notebooks: `trajectories.parquet`, `judge_items.parquet` and `verdicts.parquet` are the documented views
`v_trajectories`, `v_judge_items` and `v_verdicts` (every column they have), typed for dataframes: integers stay
integers (DuckDB's 128-bit sums would become doubles in Parquet), JSON, UUIDs and nested values become strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.analytics import (
    AUDIT_CTE,
    CELL_EVENT_TYPES,
    TRAJECTORIES_CTE,
    Cells,
    projections,
    sources,
    views,
)
from searchtrace.engine import Fetch, Folded, Search, fold, request_sha256, run_stream
from searchtrace.replay.interchange._common import RUN_ID as IMPORT_RUN
from searchtrace.replay.interchange._formats import (
    AUDIT_EXPORT_HEADER,
    Cited,
    FailedStep,
    FetchStep,
    JudgmentLine,
    ModelStep,
    RefusedStep,
    Result,
    Retry,
    RetryStep,
    RunLine,
    RunQuestion,
    SearchStep,
    Step,
    StepUsage,
    TraceLine,
    Turn,
    TurnCall,
    TurnUsage,
    encoder,
)
from searchtrace.store import (
    BadInput,
    CallRetried,
    DatasetQuestion,
    EventLog,
    JudgeVerdict,
    ModelResponded,
    RunFinished,
    RunStarted,
    StoredEvent,
    ToolRefused,
    TrajectoryStarted,
    blobs,
    decode_payload,
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
    "tool.refused",
    "call.retried",
    "call.failed",
    "answer.final",
    "trajectory.finished",
]
_json = msgspec.json.Decoder()
_CHUNK = 256  # trajectories whose blobs are read in one scan


class Blobs:
    """The store's blobs some trajectories name, read in one scan per chunk of trajectories; `out` collects those
    `--blobs` writes (None: not asked); `replies` loads the model turns' raw replies whatever `out` is (OTLP)."""

    def __init__(self, log: EventLog, out: dict[str, bytes] | None, *, replies: bool = False) -> None:
        self.log, self.out, self.replies = log, out, replies
        self.got: dict[str, bytes] = {}

    def load(self, folds: list[Folded]) -> None:
        want: list[str] = []
        for f in folds:
            want += [d for t in f.turns if not isinstance(t.request_messages, msgspec.UnsetType)
                     for d in t.request_messages]
            want += [t.tools_digest for t in f.turns if isinstance(t.tools_digest, str)]
            want += [g.completed.content_digest for g in f.fetches.values()
                     if g.completed is not None and g.completed.content_digest is not None]
            if self.out is not None or self.replies:
                want += [t.raw_digest for t in f.turns if t.raw_digest is not None]
            if self.out is not None:
                want += [s.completed.raw_digest for s in f.searches.values()
                         if s.completed is not None and s.completed.raw_digest is not None]
        cur = self.log.cursor()
        try:
            self.got = blobs.get_many(cur, want)
        finally:
            cur.close()

    def raw(self, d: str | None) -> str | None:
        """The digest, kept (and its bytes written) when `--blobs` is asked and the store holds them."""
        if d is None or self.out is None or d not in self.got:
            return None
        self.out[d] = self.got[d]
        return d


def _turns(f: Folded, got: Blobs) -> list[Turn]:
    """Every model turn in full; the request messages from their blobs, each turn naming how many it shares with
    the one before."""
    out: list[Turn] = []
    before: list[str] = []  # the previous request's message digests
    sent: list[Any] = []  # ... and those messages
    for m in f.turns:
        kept, tools = 0, None
        messages: list[Any] | msgspec.UnsetType = msgspec.UNSET
        derived: str | None = None  # the request_sha256 import gives the turn
        digests = m.request_messages
        if not isinstance(digests, msgspec.UnsetType) and isinstance(m.tools_digest, str) and all(
                d in got.got for d in (*digests, m.tools_digest)):
            while kept < len(digests) and kept < len(before) and digests[kept] == before[kept]:
                kept += 1
            fresh = [_json.decode(got.got[d]) for d in digests[kept:]]
            sent = sent[:kept] + fresh
            before = list(digests)
            tools = _json.decode(got.got[m.tools_digest]) or None
            messages = fresh
            derived = request_sha256(sent, tools)
        else:
            before, sent = [], []
            kept = 0
        out.append(Turn(
            iteration=m.iteration, text=m.text, finish_reason=m.finish_reason,
            tool_calls=[TurnCall(c.call_id, c.name, c.arguments) for c in m.tool_calls],
            usage=TurnUsage(input_tokens=m.usage.input_tokens, output_tokens=m.usage.output_tokens,
                            reasoning_tokens=m.usage.reasoning_tokens, cached_tokens=m.usage.cached_tokens),
            latency_ms=m.latency_ms, provider_ms=m.provider_ms, queue_ms=m.queue_ms, kept=0 if isinstance(messages, msgspec.UnsetType) else kept,
            messages=messages, tools=tools, raw_digest=got.raw(m.raw_digest),
            request_sha256=msgspec.UNSET if m.request_sha256 == derived else m.request_sha256,
            model=m.model, api=m.api,
        ))
    return out


def _retry(r: CallRetried) -> Retry:
    return Retry(what=r.what, attempt=r.attempt, reason=r.reason, wait_s=r.wait_s)


def _steps(f: Folded, provider: str, got: Blobs) -> list[Step]:
    """The trajectory's steps in recorded order, loose retries (a model call's) in their places."""
    out: list[Step] = []
    loose = list(f.loose)
    for i, step in enumerate([*f.steps, None]):
        while loose and loose[0][0] == i:
            r = loose.pop(0)[1]
            out.append(RetryStep(what=r.what, attempt=r.attempt, reason=r.reason, wait_s=r.wait_s, call_id=r.call_id))
        if step is None:
            break
        if isinstance(step, ModelResponded):
            u = StepUsage(input_tokens=step.usage.input_tokens, output_tokens=step.usage.output_tokens,
                          reasoning_tokens=step.usage.reasoning_tokens)
            out.append(ModelStep(iteration=step.iteration, usage=u, latency_ms=step.latency_ms,
                                 provider_ms=step.provider_ms, queue_ms=step.queue_ms, model=step.model, api=step.api))
        elif isinstance(step, Search):
            c, done = step.called, step.completed
            out.append(SearchStep(
                iteration=c.iteration, call_id=c.call_id, query=c.query,
                results=[Result(doc_id=r.doc_id, rank=r.rank, url=r.url, title=r.title, domain=r.domain,
                                snippet=r.snippet, metadata=r.metadata, surface=r.surface,  # type: ignore[arg-type]
                                model_saw_more=r.model_saw_more) for r in step.results],
                latency_ms=done.latency_ms if done else 0.0,
                provider_ms=done.provider_ms if done else msgspec.UNSET,
                queue_ms=done.queue_ms if done else msgspec.UNSET,
                status=done.status if done else "ok", http_status=done.http_status if done else None,
                error=done.error if done else None, provider=None if c.provider == provider else c.provider,
                params=c.params, raw_digest=got.raw(done.raw_digest if done else None),
                retries=[_retry(r) for r in step.retries]))
        elif isinstance(step, Fetch):
            c_, d_ = step.called, step.completed
            page = d_.content_digest if d_ is not None else None
            content = got.got[page].decode("utf-8", errors="replace") if page in got.got else None
            if page is not None and got.out is not None and page in got.got:
                got.out[page] = got.got[page]
            n_bytes = d_.n_bytes if d_ is not None else 0
            out.append(FetchStep(
                iteration=c_.iteration, call_id=c_.call_id, doc_id=c_.doc_id, url=c_.url,
                status=d_.status if d_ is not None else "http_error", content=content,
                n_tokens=d_.n_tokens if d_ is not None else 0, latency_ms=d_.latency_ms if d_ is not None else 0.0,
                provider_ms=d_.provider_ms if d_ is not None else msgspec.UNSET,
                queue_ms=d_.queue_ms if d_ is not None else msgspec.UNSET,
                n_bytes=msgspec.UNSET if content is not None and n_bytes == len(content.encode()) else n_bytes,
                cache_hit=msgspec.UNSET if d_ is None or not d_.cache_hit else True,
                http_status=msgspec.UNSET if d_ is None or d_.http_status is None else d_.http_status,
                error=msgspec.UNSET if d_ is None or d_.error is None else d_.error,
                retries=[_retry(r) for r in step.retries] or msgspec.UNSET))
        elif isinstance(step, ToolRefused):
            out.append(RefusedStep(iteration=step.iteration, call_id=step.call_id, name=step.name,
                                   arguments=step.arguments, reason=step.reason))
        else:
            out.append(FailedStep(what=step.what, status=step.status, call_id=step.call_id,
                                  http_status=step.http_status, error=step.error, attempts=step.attempts))
    return out


def _cited(f: Folded) -> list[Cited]:
    """The final answer's citations as the line gives them (their items are linked again on import)."""
    given = f.final.citations if f.final is not None else msgspec.UNSET
    return [Cited(url=c.url, title=c.title, cited_text=c.cited_text, start=c.start, end=c.end)
            for c in ([] if isinstance(given, msgspec.UnsetType) else given) if c.url]


def trajectory_cells(log: EventLog) -> Cells:
    """Which trajectories are current (`Cells`: the latest attempt of each cell, its question, gold and final answer),
    from the few events that decide it (the trajectories' own events are read later, a chunk at a time)."""
    cells = Cells()
    for ev in log.read(types=CELL_EVENT_TYPES):
        cells.add(ev.stream_id, ev.payload)
    return cells


def current_folds(log: EventLog, cells: Cells,
                  loaded: Blobs) -> Iterator[tuple[str, TrajectoryStarted, list[StoredEvent], Folded]]:
    """(stream, first trajectory.started, its events from that start on, fold) of each current trajectory in order
    of first appearance, the blobs it names in `loaded`: _CHUNK trajectories' events and blobs at a time, so memory
    does not grow with the store."""
    current = list(cells.current())
    for i in range(0, len(current), _CHUNK):
        chunk = current[i:i + _CHUNK]
        streams: dict[str, list[StoredEvent]] = {k: [] for k, _ in chunk}
        for ev in log.read(types=_TRACE_TYPES, stream_ids=list(streams)):
            got = streams[ev.stream_id]
            if got or isinstance(ev.payload, TrajectoryStarted):
                got.append(ev)
        folds = [fold([e.payload for e in streams[k]]) for k, _ in chunk]
        loaded.load(folds)
        for (stream, s), f in zip(chunk, folds, strict=True):
            yield stream, s, streams[stream], f


def traces_of(log: EventLog, raw: dict[str, bytes] | None = None) -> tuple[Iterator[TraceLine], set[str]]:
    """(the latest attempt of every cell as trace lines, streamed; the trajectory ids of the superseded attempts);
    each trajectory read through `fold`. With `raw`, the raw bodies and pages the lines name are put in it by
    digest (the caller empties it as it goes)."""
    cells = trajectory_cells(log)
    loaded = Blobs(log, raw)

    def lines() -> Iterator[TraceLine]:
        for stream, s, events, f in current_folds(log, cells, loaded):
            steps = _steps(f, s.provider, loaded)
            last = max((x.iteration for x in steps if not isinstance(x, FailedStep | RetryStep)), default=0)
            done = f.finished
            run = events[0].run_id  # the run that recorded it
            yield TraceLine(
                trajectory_id=s.trajectory_id,
                provider=s.provider,
                qid=s.qid,
                question=cells.question(s),
                gold_answer=cells.gold(s),
                final_answer=cells.final(stream),
                stop_reason=done.reason if done is not None else "error",
                steps=steps,
                epoch=epoch_of(s),
                run_id=None if run == IMPORT_RUN else run,
                turns=_turns(f, loaded),
                attempt=s.attempt,
                supersedes=s.supersedes,
                error=done.error if done is not None else None,
                iterations=None if done is None or done.iterations == last else done.iterations,
                final_iteration=None if f.final is None or f.final.iteration == last else f.final.iteration,
                citations=_cited(f),
            )

    return lines(), cells.superseded


# Each judge run's first verdict per (trajectory, url), the runs in order of first appearance (a judge.started or a
# verdict): DuckDB picks and orders their positions (no payload goes through the sort), Python then reads the chosen
# payloads a batch of positions at a time.
_JUDGMENTS_SQL = """
WITH j AS (
  SELECT position, type, json_extract_string(payload, '$.judge_run_id') AS run,
         json_extract_string(payload, '$.item.trajectory_id') AS tid,
         json_extract_string(payload, '$.item.url_normalized') AS url
  FROM events WHERE type IN ('judge.started', 'judge.verdict')),
first AS (SELECT run, min(position) AS first_position FROM j GROUP BY run),
chosen AS (
  SELECT position, run, tid FROM j WHERE type = 'judge.verdict'
  QUALIFY row_number() OVER (PARTITION BY run, tid, url ORDER BY position) = 1)
SELECT c.position, c.tid FROM chosen c JOIN first f USING (run) ORDER BY f.first_position, c.position
"""
_PAYLOADS_SQL = "SELECT position, payload FROM events WHERE position IN (SELECT unnest(?::BIGINT[]))"


def judgments_of(log: EventLog, skip: set[str]) -> Iterator[JudgmentLine]:
    """Each judge run's first verdict per (trajectory, url), runs in order of first appearance, none of a
    trajectory in `skip`; streamed (memory does not grow with the store)."""
    cur, payloads = log.cursor(), log.cursor()
    try:
        cur.execute(_JUDGMENTS_SQL)
        while rows := cur.fetchmany(2_000):
            wanted = [int(pos) for pos, tid in rows if tid not in skip]
            got = dict(payloads.execute(_PAYLOADS_SQL, [wanted]).fetchall()) if wanted else {}
            for pos in wanted:
                p = decode_payload(got[pos])
                assert isinstance(p, JudgeVerdict)
                yield JudgmentLine(
                    judge_run_id=p.judge_run_id,
                    trajectory_id=p.item.trajectory_id,
                    url=p.item.url_normalized,
                    valid=p.valid,
                    labels=msgspec.to_builtins(p.labels) if p.labels is not None else None,
                    invalid_reason=p.invalid_reason,
                )
    finally:
        payloads.close()
        cur.close()


_AUDITS_SQL = f"""WITH {TRAJECTORIES_CTE}, {AUDIT_CTE}
SELECT t.provider, t.qid, t.epoch, arg_max(m.semantic_match, m.k) FROM tr t JOIN aud_match m USING (stream_id)
GROUP BY t.provider, t.qid, t.epoch"""


def _audits(log: EventLog) -> list[tuple[str, str, int, bool]]:
    """(provider, qid, epoch, value) of the deciding audit of every exported trajectory, by the report's own rule
    (analytics AUDIT_CTE: by trajectory, else by (provider, qid, epoch), else by (provider, qid) when the cell has
    one epoch; a proposal loses to an imported or human audit, then the latest wins), over its current trajectories."""
    cur = log.cursor()
    try:
        with sources.reading(cur, writable=not log.read_only):
            rows = cur.execute(_AUDITS_SQL).fetchall()
    finally:
        cur.close()
    return sorted((str(p), str(q), int(e), bool(v)) for p, q, e, v in rows)


def runs_of(log: EventLog) -> list[RunLine]:
    """Every run's stream (docs/concepts/shown.md run.jsonl): its run.started config, its questions, its run.finished counts."""
    out: dict[str, RunLine] = {}
    for ev in log.read(types=["run.started", "dataset.question", "run.finished"]):
        p = ev.payload
        if isinstance(p, RunStarted) and ev.stream_id == run_stream(p.run_id):
            out.setdefault(p.run_id, RunLine(run_id=p.run_id, config=p.config, code_version=p.code_version))
        line = out.get(ev.run_id)
        if line is None or ev.stream_id != run_stream(ev.run_id):
            continue
        if isinstance(p, DatasetQuestion):
            line.questions.append(RunQuestion(qid=p.qid, question=p.question, gold_answer=p.gold_answer,
                                              strata=p.strata, gold_aliases=p.gold_aliases))
        elif isinstance(p, RunFinished) and line.counts is None:
            line.counts = p.counts
    return list(out.values())


def export_all(log: EventLog, out: Path, blobs_dir: Path | None = None) -> dict[str, int]:
    """Write the files into `out` (created if needed), and with `blobs_dir` every raw body and page the traces name,
    one file per digest; returns the rows written per file."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        if blobs_dir is not None:
            blobs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{exc.filename}: cannot create the folder ({exc.strerror})") from None
    raw: dict[str, bytes] | None = {} if blobs_dir is not None else None
    traces, superseded = traces_of(log, raw)
    n_traces, written_blobs = 0, set[str]()
    with (out / "traces.jsonl").open("wb") as fh:
        for t in traces:
            fh.write(encoder.encode(t) + b"\n")
            n_traces += 1
            if blobs_dir is not None and raw:  # written as they come: the bodies never pile up in memory
                for d, data in raw.items():
                    if d not in written_blobs:
                        (blobs_dir / d).write_bytes(data)
                        written_blobs.add(d)
                raw.clear()
    runs = runs_of(log)
    with (out / "run.jsonl").open("wb") as fh:
        for r in runs:
            fh.write(encoder.encode(r) + b"\n")
    n_judgments = 0
    with (out / "judgments.jsonl").open("wb") as fh:
        for j in judgments_of(log, superseded):
            fh.write(encoder.encode(j) + b"\n")
            n_judgments += 1
    audits = _audits(log)
    with (out / "audit.tsv").open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("\t".join(AUDIT_EXPORT_HEADER) + "\n")
        for provider, qid, epoch, value in audits:
            fh.write(f"{provider}\t{qid}\t{epoch}\t{'true' if value else 'false'}\n")
    written = {
        "traces.jsonl": n_traces,
        "run.jsonl": len(runs),
        "judgments.jsonl": n_judgments,
        "audit.tsv": len(audits),
        "events.parquet": _events_parquet(log, out / "events.parquet"),
    }
    written.update(export_views(log, out))
    if blobs_dir is not None:
        written[str(blobs_dir)] = len(written_blobs)
    return written


EVENTS_SPAN = 100_000  # positions of events.parquet read and written at a time (one row group each)


def _events_parquet(log: EventLog, path: Path) -> int:
    """Every event in position order into `path`, a span of positions at a time (nothing sorts the whole log, so
    its memory does not grow with the store); UUID and JSON columns keep their Parquet types. Rows written."""
    import pyarrow.parquet as pq

    cur = log.cursor()
    writer: pq.ParquetWriter | None = None
    n = 0
    try:
        cur.execute("SET arrow_lossless_conversion = true")
        low, high = cur.execute("SELECT coalesce(min(position), 1), coalesce(max(position), 0) FROM events").fetchall()[0]
        for after in range(low - 1, high, EVENTS_SPAN):
            reader = cur.sql("SELECT * FROM events WHERE position > $1 AND position <= $2 ORDER BY position",
                             params=[after, after + EVENTS_SPAN]).to_arrow_reader(EVENTS_SPAN)
            for batch in reader:
                if writer is None:
                    writer = pq.ParquetWriter(path, batch.schema, compression="snappy")
                writer.write_batch(batch)
                n += batch.num_rows
        if writer is None:  # an empty log: the file with the events' columns and no row
            empty = cur.sql("SELECT * FROM events LIMIT 0").to_arrow_table()
            writer = pq.ParquetWriter(path, empty.schema, compression="snappy")
    finally:
        if writer is not None:
            writer.close()
        cur.close()
    return n


VIEW_FILES = {"trajectories.parquet": "v_trajectories", "judge_items.parquet": "v_judge_items",
              "verdicts.parquet": "v_verdicts"}
_WIDE_INTS = ("HUGEINT", "UHUGEINT", "UBIGINT")  # Parquet has no 128-bit integer: DuckDB would write a double
_AS_TEXT = ("JSON", "UUID")


def typed_column(name: str, duck_type: str) -> str:
    """One SELECT item of a view column, typed for a dataframe (see the module docstring)."""
    col = '"' + name.replace('"', '""') + '"'
    t = duck_type.upper()
    if t in _WIDE_INTS:
        return f"CAST({col} AS BIGINT) AS {col}"
    if t.startswith("DECIMAL"):
        scale = t.rstrip(")").rpartition(",")[2].strip()
        return f"CAST({col} AS {'BIGINT' if scale in ('', '0') else 'DOUBLE'}) AS {col}"
    if t in _AS_TEXT:
        return f"CAST({col} AS VARCHAR) AS {col}"
    if t.endswith("]") or t.startswith(("STRUCT", "MAP", "UNION")):
        return f"CAST(to_json({col}) AS VARCHAR) AS {col}"
    return col


VIEWS_MEMORY = "512MB"  # DuckDB's share while the typed views are written from the projections (it spills past it)


def export_views(log: EventLog, out: Path) -> dict[str, int]:
    """Each of VIEW_FILES as typed Parquet, every column the view has, rows in a fixed order (ORDER BY ALL), read on
    a cursor of its own (it works on a read-only store); rows per file. The view's query runs over the projections
    when they are current (typed columns: bounded memory), else over the raw events (DuckDB's default share)."""
    written: dict[str, int] = {}
    cur = log.cursor()
    try:
        with sources.reading(cur, writable=False) as schema:
            cur.execute(f"SET memory_limit = '{VIEWS_MEMORY}'" if schema == projections.PROJ else "RESET memory_limit")
            for file, view in VIEW_FILES.items():
                query = f"({views.view_sql(view)})"
                cols = cur.execute(f"DESCRIBE SELECT * FROM {query}").fetchall()
                select = ", ".join(typed_column(str(c[0]), str(c[1])) for c in cols)
                row = cur.execute(f"COPY (SELECT {select} FROM {query} ORDER BY ALL) TO '{_sql_str(out / file)}' "
                                  "(FORMAT PARQUET)").fetchone()
                written[file] = int(row[0]) if row else 0
    finally:
        cur.close()
    return written


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")
