"""Traces JSONL (docs/reference/interchange.md) -> the events of each trajectory's stream `traj:<trajectory_id>`.

Event ids derive from the stored content (the digest of the trajectory's payloads), so importing the same
trajectory again adds nothing, and a different trajectory under a stored id is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

import searchtrace.replay.interchange._common as import_common
from searchtrace.adapters import RetryInfo, SearchHit, norm_url
from searchtrace.engine import Builder, epochs_problem
from searchtrace.replay.interchange._common import (
    AUDIT_STREAM,
    DATASET_STREAM,
    RUN_ID,
    Known,
    Raw,
    decode_line,
    digest,
    event_id,
    event_ids,
    fail,
    lines,
)
from searchtrace.replay.interchange._formats import (
    FailedStep,
    FetchStep,
    ModelStep,
    RefusedStep,
    Retry,
    RetryStep,
    SearchStep,
    Step,
    TraceLine,
    trace_decoder,
)
from searchtrace.store import (
    AuditAnswer,
    BadInput,
    Citation,
    DatasetQuestion,
    EventLog,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCompleted,
    ToolCall,
    shown,
    trajectory_stream,
    usage_rule,
)


def trace_items(t: TraceLine) -> tuple[dict[str, bool], tuple[str, str] | None]:
    """{url_normalized: page_visible} of a trajectory's judge items, or the first bad step (field, what is wrong)."""
    url_of_doc: dict[str, str] = {}
    items: dict[str, bool] = {}
    for i, step in enumerate(t.steps):
        if isinstance(step, SearchStep):
            for k, r in enumerate(step.results):
                u = norm_url(r.url)
                items.setdefault(u, False)
                if url_of_doc.setdefault(r.doc_id, u) != u:  # docs/concepts/shown.md: a doc_id names one URL in a trajectory
                    return items, (f"steps[{i}].results[{k}].doc_id",
                                   f"{r.doc_id!r} already names another URL in this trajectory")
        elif isinstance(step, FetchStep) and step.doc_id is not None:
            u_or_none = url_of_doc.get(step.doc_id)
            if u_or_none is None:
                return items, (f"steps[{i}].doc_id", f"fetch of {step.doc_id!r}, which no earlier search step returned")
            if step.status == "ok":
                items[u_or_none] = True
    return items, None


def validate_traces(path: Path, known: Known, items: dict[str, dict[str, bool]]) -> int:
    """Check the whole file; adds each trajectory's items to `items`; returns the number of new trajectories.

    A trajectory's content digest (its stored events) is only derived when the id is already known; otherwise
    `known` keeps where it was read, so a later file of the same call that repeats the id is still compared.
    """
    seen_ids: dict[str, int] = {}
    seen_keys: dict[tuple[str, str, str, int], int] = {}
    new = 0
    for n, raw in lines(path):
        t = decode_line(trace_decoder, path, n, raw)
        if t.trajectory_id in seen_ids:
            raise fail(path, n, "trajectory_id", f"{shown(t.trajectory_id)} already on line {seen_ids[t.trajectory_id]}")
        if (problem := epochs_problem(t.epoch)) is not None:
            raise fail(path, n, "epoch", problem)
        key = (t.run_id or RUN_ID, t.provider, t.qid, t.epoch)
        if key in seen_keys:
            raise fail(path, n, "qid", f"a second trajectory for provider {shown(t.provider)} and qid {shown(t.qid)}"
                       f"{_epoch_text(t.epoch)}{_run_text(t)} (line {seen_keys[key]})")
        seen_ids[t.trajectory_id] = n
        seen_keys[key] = n
        got, bad = trace_items(t)
        if bad is None:
            bad = turns_problem(t) or _raw_problem(t, known.raw)
        if bad is not None:
            raise fail(path, n, *bad)
        have = known.traj_ids.get(t.trajectory_id)
        if have is not None:
            if isinstance(have, tuple):
                have = _started_at(*have, known.raw)
            if have != _started(t, known.raw):
                if not _same(known.stored_payloads(t.trajectory_id), trace_payloads(t, with_blobs=False, raw=known.raw)[0]):
                    raise fail(path, n, "trajectory_id",
                               f"{shown(t.trajectory_id)} is already in the database with other content")
                known.same_as_stored.add(t.trajectory_id)  # a recorded trajectory's own export: nothing to add
        other = known.traj_keys.get(key)
        if other is not None and other != t.trajectory_id:
            raise fail(
                path, n, "qid", f"the database already has trajectory {shown(other)} for provider {shown(t.provider)} and qid "
                f"{shown(t.qid)}{_epoch_text(t.epoch)}{_run_text(t)}"
            )
        new += have is None
        items[t.trajectory_id] = got
        if have is None:
            known.traj_ids[t.trajectory_id] = (path, n)  # a later file of the same call must agree with this one
        known.traj_keys[key] = t.trajectory_id
    return new


def _epoch_text(epoch: int) -> str:
    return "" if epoch == 1 else f" in epoch {epoch}"


def _run_text(t: TraceLine) -> str:
    return "" if t.run_id is None else f" in run {t.run_id!r}"


def _same(stored: list[Payload] | None, line: list[Payload]) -> bool:
    """The line gives the stored payloads, but for raw bodies it leaves out (an export without --blobs)."""
    if stored is None or len(stored) != len(line):
        return False
    for a, b in zip(stored, line, strict=True):
        if a != b and not (isinstance(a, ModelResponded | SearchCompleted) and isinstance(b, type(a))
                           and b.raw_digest is None and msgspec.structs.replace(a, raw_digest=None) == b):
            return False
    return True


def _raw_problem(t: TraceLine, raw: Raw) -> tuple[str, str] | None:
    """The first raw body the line names that the `--blobs` folder cannot give (field, what is wrong)."""
    named = [(f"turns[{k}].raw_digest", turn.raw_digest) for k, turn in enumerate(t.turns)]
    named += [(f"steps[{i}].raw_digest", s.raw_digest) for i, s in enumerate(t.steps) if isinstance(s, SearchStep)]
    for field_, d in named:
        if d is None:
            continue
        if raw is None:
            return field_, f"names raw body {d}: give the folder export --blobs wrote (import --blobs DIR)"
        try:
            raw(d)
        except BadInput as exc:
            return field_, str(exc)
    return None


def _started(t: TraceLine, raw: Raw) -> str:
    """The event id of the trajectory's `trajectory.started`: it derives from the digest of all its events."""
    return str(_event_id(t, _trace_hash(trace_payloads(t, with_blobs=False, raw=raw)[0]), 0))


def _started_at(path: Path, line: int, raw: Raw) -> str:
    """_started of the trajectory on that line of an already validated file (read again: rare, and cheap)."""
    for n, data in lines(path):
        if n == line:
            return _started(decode_line(trace_decoder, path, n, data), raw)
    raise BadInput(f"{path}: line {line}: changed while importing")


def _event_id(t: TraceLine, h: str, k: int) -> Any:
    return event_id("import", "trajectory", t.trajectory_id, h, str(k))


def _iteration(step: Step) -> int:
    return 0 if isinstance(step, FailedStep | RetryStep) else step.iteration


def turns_problem(t: TraceLine) -> tuple[str, str] | None:
    """The first turn that does not fit the line (field, what is wrong): one turn per model step, same iteration,
    `kept` within the previous turn's request."""
    models = [s for s in t.steps if isinstance(s, ModelStep)]
    if t.turns and len(t.turns) != len(models):
        return "turns", f"{len(t.turns)} turns for {len(models)} model steps (one per model step, or none)"
    sent = 0  # messages of the previous turn's request
    for k, (turn, step) in enumerate(zip(t.turns, models, strict=False)):
        if turn.iteration != step.iteration:
            return f"turns[{k}].iteration", f"{turn.iteration}, but its model step has iteration {step.iteration}"
        if isinstance(turn.messages, msgspec.UnsetType):
            if turn.kept:
                return f"turns[{k}].kept", "kept messages without messages"
            sent = 0
            continue
        if turn.kept > sent:
            return f"turns[{k}].kept", f"{turn.kept}, but the previous turn's request had {sent} messages"
        sent = turn.kept + len(turn.messages)
    return None


def trace_payloads(t: TraceLine, *, with_blobs: bool = True, raw: Raw = None) -> tuple[list[Payload], list[bytes]]:
    """The docs/reference/events.md payloads of one trajectory's stream, in order, with its blobs (if asked): pages, request
    messages, tool lists, and the raw bodies the line names (`raw` reads them from the `--blobs` folder)."""
    b = Builder(t.trajectory_id)
    b.start(qid=t.qid, provider=t.provider, question=t.question, gold_answer=t.gold_answer, attempt=t.attempt,
            supersedes=t.supersedes, epoch=t.epoch)
    last_iter = max((_iteration(s) for s in t.steps), default=0)
    turns = iter(t.turns)
    sent: list[Any] = []  # the previous turn's request messages

    def body(d: str | None) -> bytes | None:
        if d is None:
            return None
        if raw is None:
            raise BadInput(f"raw body {d} named but no --blobs folder given")
        return raw(d)

    for step in t.steps:
        if isinstance(step, ModelStep):
            turn = next(turns, None)
            if turn is None:
                u = usage_rule(prompt=step.usage.input_tokens, output=step.usage.output_tokens,
                               reasoning=step.usage.reasoning_tokens)
                b.model(iteration=step.iteration, text=None, usage=u, latency_ms=step.latency_ms, finish_reason=None,
                        raw=None, provider_ms=step.provider_ms, queue_ms=step.queue_ms, model=_given(step.model),
                        api=_given(step.api))
                continue
            messages: list[Any] | None = None
            if isinstance(turn.messages, msgspec.UnsetType):
                sent = []
            else:
                sent = messages = sent[:turn.kept] + turn.messages
            tu = turn.usage
            b.model(iteration=turn.iteration, text=turn.text, finish_reason=turn.finish_reason,
                    tool_calls=[ToolCall(call_id=c.call_id, name=c.name, arguments=c.arguments) for c in turn.tool_calls],
                    usage=usage_rule(prompt=tu.input_tokens, output=tu.output_tokens, reasoning=tu.reasoning_tokens,
                                     cached=tu.cached_tokens),
                    model=_given(turn.model) or _given(step.model), api=_given(turn.api) or _given(step.api),
                    latency_ms=turn.latency_ms, provider_ms=turn.provider_ms, queue_ms=turn.queue_ms,
                    raw=body(turn.raw_digest), messages=messages, tools=turn.tools if messages is not None else None,
                    request_digest=None if isinstance(turn.request_sha256, msgspec.UnsetType) else turn.request_sha256)
        elif isinstance(step, SearchStep):
            hits = [SearchHit(rank=r.rank, title=r.title or "", url=r.url, domain=r.domain or "", snippet=r.snippet or "",
                              metadata=r.metadata or {}, surface=_given_list(r.surface),
                              model_saw_more=None if isinstance(r.model_saw_more, msgspec.UnsetType)
                              else r.model_saw_more) for r in step.results]
            b.search(call_id=step.call_id, iteration=step.iteration, query=step.query,
                     provider=step.provider or t.provider, status=step.status, hits=hits,
                     doc_ids=[r.doc_id for r in step.results], latency_ms=step.latency_ms,
                     provider_ms=step.provider_ms, queue_ms=step.queue_ms, params=step.params,
                     raw=body(step.raw_digest), http_status=step.http_status, error=step.error,
                     retries=[_retry(r) for r in step.retries])
        elif isinstance(step, FetchStep):
            b.fetch(call_id=step.call_id, iteration=step.iteration, doc_id=step.doc_id, url=step.url, status=step.status,
                    content=step.content, n_tokens=step.n_tokens, latency_ms=step.latency_ms,
                    provider_ms=step.provider_ms, queue_ms=step.queue_ms,
                    n_bytes=None if isinstance(step.n_bytes, msgspec.UnsetType) else step.n_bytes,
                    cache_hit=step.cache_hit is True,
                    http_status=None if isinstance(step.http_status, msgspec.UnsetType) else step.http_status,
                    error=None if isinstance(step.error, msgspec.UnsetType) else step.error,
                    retries=[] if isinstance(step.retries, msgspec.UnsetType) else [_retry(r) for r in step.retries])
        elif isinstance(step, RefusedStep):
            b.refused(call_id=step.call_id, iteration=step.iteration, name=step.name, arguments=step.arguments,
                      reason=step.reason)
        elif isinstance(step, FailedStep):
            b.failed(what=step.what, status=step.status, call_id=step.call_id, http_status=step.http_status,
                     error=step.error, attempts=step.attempts)
        else:
            b.retried([_retry(step)], step.call_id)
    if t.final_answer is not None:
        b.final(t.final_answer, last_iter if t.final_iteration is None else t.final_iteration,
                citations=[Citation(url=c.url, title=c.title, cited_text=c.cited_text, start=c.start, end=c.end)
                           for c in t.citations])
    b.finish(t.stop_reason, error=t.error, iterations=last_iter if t.iterations is None else t.iterations)
    payloads, blobs = b.take()
    return payloads, blobs if with_blobs else []


def _retry(r: Retry) -> RetryInfo:
    return RetryInfo(what=r.what, attempt=r.attempt, reason=r.reason, wait_s=r.wait_s)


def _trace_hash(payloads: list[Payload]) -> str:
    """Digest of what is stored (not of the line's spelling), so an exported trajectory re-imports as a no-op."""
    return digest(payloads)


def trace_events(t: TraceLine, raw: Raw = None) -> tuple[list[NewEvent], list[bytes]]:
    """The events of one trajectory (its question first, its answers' audits last), ids derived from the stored
    content."""
    payloads, blobs = trace_payloads(t, raw=raw)
    h = _trace_hash(payloads)
    stream = trajectory_stream(t.trajectory_id)
    ids = event_ids("import", "trajectory", t.trajectory_id, h, n=len(payloads))
    run = t.run_id or RUN_ID  # the run it was recorded in, when an export says so
    events = [NewEvent(stream_id=stream, run_id=run, payload=p, event_id=i) for p, i in zip(payloads, ids, strict=True)]
    q = DatasetQuestion(qid=t.qid, question=t.question, gold_answer=t.gold_answer)
    qid_event = NewEvent(
        stream_id=DATASET_STREAM,
        run_id=RUN_ID,
        payload=q,
        event_id=event_id("import", "question", t.qid, t.question, t.gold_answer),
    )
    audits = [NewEvent(stream_id=AUDIT_STREAM, run_id=run, event_id=event_id("import", "answer", t.trajectory_id,
                                                                            a.source, str(a.semantic_match)),
                       payload=AuditAnswer(trajectory_id=t.trajectory_id, provider=None, qid=None,
                                           semantic_match=a.semantic_match, source=a.source)) for a in t.answers]
    return [qid_event, *events, *audits], blobs


def append_traces(log: EventLog, path: Path, skip: frozenset[str] | set[str] = frozenset(), raw: Raw = None) -> int:
    """Second pass over a validated file: append its events in chunks (not those of `skip`); returns the number written."""
    written = 0
    batch: list[NewEvent] = []
    blobs: list[bytes] = []
    chunk = import_common.CHUNK
    for n, data in lines(path):
        line = decode_line(trace_decoder, path, n, data)
        if line.trajectory_id in skip:
            continue
        evs, bl = trace_events(line, raw)
        batch.extend(evs)
        blobs.extend(bl)
        if len(batch) >= chunk:
            written += sum(1 for p in log.append(batch, blobs=blobs) if p)
            batch, blobs = [], []
    if batch or blobs:
        written += sum(1 for p in log.append(batch, blobs=blobs) if p)
    return written


def _given_list(value: list[Any] | msgspec.UnsetType) -> list[str] | None:
    return None if isinstance(value, msgspec.UnsetType) else [str(v) for v in value]


def _given(value: str | msgspec.UnsetType) -> str | None:
    """A field a line may leave out (UNSET) as None."""
    return None if isinstance(value, msgspec.UnsetType) else value
