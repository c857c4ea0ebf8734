"""Traces JSONL (SPEC §9) -> the events of each trajectory's stream `traj:<trajectory_id>`.

Event ids derive from the stored content (the digest of the trajectory's payloads), so importing the same
trajectory again adds nothing, and a different trajectory under a stored id is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import searchtrace.replay.interchange._common as import_common
from searchtrace.adapters import SearchHit, norm_url
from searchtrace.engine import Builder, epochs_problem
from searchtrace.replay.interchange._common import (
    DATASET_STREAM,
    RUN_ID,
    Known,
    decode_line,
    digest,
    event_id,
    event_ids,
    fail,
    lines,
)
from searchtrace.replay.interchange._formats import FetchStep, ModelStep, SearchStep, TraceLine, trace_decoder
from searchtrace.store import (
    BadInput,
    DatasetQuestion,
    EventLog,
    NewEvent,
    Payload,
    Usage,
    trajectory_stream,
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
                if url_of_doc.setdefault(r.doc_id, u) != u:  # SPEC §17: a doc_id names one URL in a trajectory
                    return items, (f"steps[{i}].results[{k}].doc_id",
                                   f"{r.doc_id!r} already names another URL in this trajectory")
        elif isinstance(step, FetchStep):
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
            raise fail(path, n, "trajectory_id", f"{t.trajectory_id!r} already on line {seen_ids[t.trajectory_id]}")
        if (problem := epochs_problem(t.epoch)) is not None:
            raise fail(path, n, "epoch", problem)
        key = (t.run_id or RUN_ID, t.provider, t.qid, t.epoch)
        if key in seen_keys:
            raise fail(path, n, "qid", f"a second trajectory for provider {t.provider!r} and qid {t.qid!r}"
                       f"{_epoch_text(t.epoch)}{_run_text(t)} (line {seen_keys[key]})")
        seen_ids[t.trajectory_id] = n
        seen_keys[key] = n
        got, bad = trace_items(t)
        if bad is not None:
            raise fail(path, n, *bad)
        have = known.traj_ids.get(t.trajectory_id)
        if have is not None:
            if isinstance(have, tuple):
                have = _started_at(*have)
            if have != _started(t):
                if known.stored_trace(t.trajectory_id) != t:
                    raise fail(path, n, "trajectory_id",
                               f"{t.trajectory_id!r} is already in the database with other content")
                known.same_as_stored.add(t.trajectory_id)  # a recorded trajectory's own export: nothing to add
        other = known.traj_keys.get(key)
        if other is not None and other != t.trajectory_id:
            raise fail(
                path, n, "qid", f"the database already has trajectory {other!r} for provider {t.provider!r} and qid "
                f"{t.qid!r}{_epoch_text(t.epoch)}{_run_text(t)}"
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


def _started(t: TraceLine) -> str:
    """The event id of the trajectory's `trajectory.started`: it derives from the digest of all its events."""
    return str(_event_id(t, _trace_hash(trace_payloads(t, with_blobs=False)[0]), 0))


def _started_at(path: Path, line: int) -> str:
    """_started of the trajectory on that line of an already validated file (read again: rare, and cheap)."""
    for n, raw in lines(path):
        if n == line:
            return _started(decode_line(trace_decoder, path, n, raw))
    raise BadInput(f"{path}: line {line}: changed while importing")


def _event_id(t: TraceLine, h: str, k: int) -> Any:
    return event_id("import", "trajectory", t.trajectory_id, h, str(k))


def trace_payloads(t: TraceLine, *, with_blobs: bool = True) -> tuple[list[Payload], list[bytes]]:
    """The SPEC §3 payloads of one trajectory's stream, in order, with the fetched pages as blobs (if asked)."""
    b = Builder(t.trajectory_id)
    b.start(qid=t.qid, provider=t.provider, question=t.question, gold_answer=t.gold_answer, epoch=t.epoch)
    last_iter = 0
    for step in t.steps:
        last_iter = max(last_iter, step.iteration)
        if isinstance(step, ModelStep):
            u = Usage(input_tokens=step.usage.input_tokens, output_tokens=step.usage.output_tokens,
                      reasoning_tokens=step.usage.reasoning_tokens)
            b.model(iteration=step.iteration, text=None, usage=u, latency_ms=step.latency_ms, finish_reason=None,
                    raw=None, provider_ms=step.provider_ms, queue_ms=step.queue_ms)
        elif isinstance(step, SearchStep):
            hits = [SearchHit(rank=r.rank, title=r.title or "", url=r.url, domain=r.domain or "", snippet=r.snippet or "",
                              metadata=r.metadata or {}) for r in step.results]
            b.search(call_id=step.call_id, iteration=step.iteration, query=step.query, provider=t.provider, status="ok",
                     hits=hits, doc_ids=[r.doc_id for r in step.results], latency_ms=step.latency_ms,
                     provider_ms=step.provider_ms, queue_ms=step.queue_ms)
        else:
            b.fetch(call_id=step.call_id, iteration=step.iteration, doc_id=step.doc_id, url=step.url, status=step.status,
                    content=step.content, n_tokens=step.n_tokens, latency_ms=step.latency_ms,
                    provider_ms=step.provider_ms, queue_ms=step.queue_ms)
    if t.final_answer is not None:
        b.final(t.final_answer, last_iter)
    b.finish(t.stop_reason, iterations=last_iter)
    payloads, blobs = b.take()
    return payloads, blobs if with_blobs else []


def _trace_hash(payloads: list[Payload]) -> str:
    """Digest of what is stored (not of the line's spelling), so an exported trajectory re-imports as a no-op."""
    return digest(payloads)


def trace_events(t: TraceLine) -> tuple[list[NewEvent], list[bytes]]:
    """The events of one trajectory (its question first), ids derived from the stored content."""
    payloads, blobs = trace_payloads(t)
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
    return [qid_event, *events], blobs


def append_traces(log: EventLog, path: Path, skip: frozenset[str] | set[str] = frozenset()) -> int:
    """Second pass over a validated file: append its events in chunks (not those of `skip`); returns the number written."""
    written = 0
    batch: list[NewEvent] = []
    blobs: list[bytes] = []
    chunk = import_common.CHUNK
    for n, raw in lines(path):
        line = decode_line(trace_decoder, path, n, raw)
        if line.trajectory_id in skip:
            continue
        evs, bl = trace_events(line)
        batch.extend(evs)
        blobs.extend(bl)
        if len(batch) >= chunk:
            written += sum(1 for p in log.append(batch, blobs=blobs) if p)
            batch, blobs = [], []
    if batch or blobs:
        written += sum(1 for p in log.append(batch, blobs=blobs) if p)
    return written
