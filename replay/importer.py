"""`import`: SPEC §9 files -> SPEC §3 events; every file validated whole before any of its events is written.

Streams: `traj:<trajectory_id>` per trajectory, `judge:<judge_run_id>` per judge run, `dataset:imported` for
questions and `audit:imported` for audit rows. Event ids derive from content (the trajectory's canonical
encoding, the verdict's, the audit row's), so importing the same files again adds nothing, while a different
trajectory, verdict or audit value for a key already stored is refused like a duplicate inside one file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from adapters.urls import domain_of, normalize_url
from analytics import projections
from analytics.items import items_sql
from replay.interchange import (
    AUDIT_HEADER,
    AUDIT_VALUES,
    FetchStep,
    JudgmentLine,
    ModelStep,
    SearchStep,
    TraceLine,
    judgment_decoder,
    trace_decoder,
)
from store import blobs as _blobs
from store.errors import BadInput
from store.events import (
    AnswerFinal,
    AuditAnswer,
    DatasetQuestion,
    FetchCalled,
    FetchCompleted,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
    Verdict,
    stable_event_id,
)
from store.log import EventLog

RUN_ID = "import"
DATASET_STREAM = "dataset:imported"
AUDIT_STREAM = "audit:imported"
AUDIT_SOURCE = "imported"
CHUNK = 20_000  # events per append transaction for big files (the file is fully validated before the first)
_sorted = msgspec.json.Encoder(order="sorted")


def _digest(obj: Any) -> str:
    return hashlib.sha256(_sorted.encode(obj)).hexdigest()[:32]


def _fail(path: Path, line: int, field_: str, message: str) -> BadInput:
    return BadInput(f"{path}: line {line}: field {field_}: {message}")


def _msgspec_field(exc: msgspec.ValidationError) -> tuple[str, str]:
    """Split msgspec's 'message - at `$.a.b`' into (field path, message)."""
    text = str(exc)
    msg, where = text, ""
    if " - at `$" in text:
        msg, _, at = text.rpartition(" - at `")
        where = at.rstrip("`").removeprefix("$").lstrip(".")
    missing = re.fullmatch(r"Object missing required field `(.+)`", msg)
    if missing:
        where = f"{where}.{missing.group(1)}" if where else missing.group(1)
    return where or "(line)", msg


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    with fh:
        for n, raw in enumerate(fh, 1):
            if raw.strip():
                yield n, raw


# -- what is already stored -------------------------------------------------------------------------
@dataclass
class Known:
    """Keys already in the database that a file must agree with."""

    traj_ids: dict[str, str] = field(default_factory=dict)  # trajectory_id -> event_id of its trajectory.started
    traj_keys: dict[tuple[str, str], str] = field(default_factory=dict)  # (provider, qid) -> trajectory_id
    judge_runs: set[str] = field(default_factory=set)
    verdicts: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (run, tid, url) -> event_id
    audits: dict[tuple[str, str], str] = field(default_factory=dict)  # (provider, qid) -> event_id

    @classmethod
    def load(cls, log: EventLog) -> Known:
        k = cls()
        if log.head == 0:
            return k
        cur = log.cursor()
        for eid, tid, prov, qid in cur.execute(
            "SELECT CAST(event_id AS VARCHAR), payload->>'$.trajectory_id', payload->>'$.provider', payload->>'$.qid' "
            "FROM events WHERE type = 'trajectory.started' ORDER BY position"
        ).fetchall():
            k.traj_ids.setdefault(tid, eid)
            k.traj_keys.setdefault((prov, qid), tid)
        k.judge_runs = {
            r[0] for r in cur.execute("SELECT payload->>'$.judge_run_id' FROM events WHERE type = 'judge.started'").fetchall()
        }
        for eid, run, tid, url in cur.execute(
            "SELECT CAST(event_id AS VARCHAR), payload->>'$.judge_run_id', payload->>'$.item.trajectory_id', "
            "payload->>'$.item.url_normalized' FROM events WHERE type = 'judge.verdict' ORDER BY position"
        ).fetchall():
            k.verdicts.setdefault((run, tid, url), eid)
        for eid, prov, qid in cur.execute(
            "SELECT CAST(event_id AS VARCHAR), payload->>'$.provider', payload->>'$.qid' FROM events "
            "WHERE type = 'audit.answer' AND payload->>'$.source' = ? ORDER BY position",
            [AUDIT_SOURCE],
        ).fetchall():
            k.audits.setdefault((prov, qid), eid)
        cur.close()
        return k


# -- traces -----------------------------------------------------------------------------------------
def trace_items(t: TraceLine) -> tuple[dict[str, bool], int | None]:
    """{url_normalized: page_visible} of a trajectory's judge items, or the index of the first bad fetch step."""
    url_of_doc: dict[str, str] = {}
    items: dict[str, bool] = {}
    for i, step in enumerate(t.steps):
        if isinstance(step, SearchStep):
            for r in step.results:
                u = normalize_url(r.url)
                items.setdefault(u, False)
                url_of_doc[r.doc_id] = u
        elif isinstance(step, FetchStep):
            u_or_none = url_of_doc.get(step.doc_id)
            if u_or_none is None:
                return items, i
            if step.status == "ok":
                items[u_or_none] = True
    return items, None


def _decode_trace(path: Path, n: int, raw: bytes) -> TraceLine:
    try:
        return trace_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        f, msg = _msgspec_field(exc)
        raise _fail(path, n, f, msg) from None
    except msgspec.DecodeError as exc:
        raise _fail(path, n, "(line)", f"not valid JSON ({exc})") from None


def validate_traces(path: Path, known: Known, items: dict[str, dict[str, bool]]) -> int:
    """Check the whole file; adds each trajectory's items to `items`; returns the number of new trajectories."""
    seen_ids: dict[str, int] = {}
    seen_keys: dict[tuple[str, str], int] = {}
    new = 0
    for n, raw in _lines(path):
        t = _decode_trace(path, n, raw)
        if t.trajectory_id in seen_ids:
            raise _fail(path, n, "trajectory_id", f"{t.trajectory_id!r} already on line {seen_ids[t.trajectory_id]}")
        key = (t.provider, t.qid)
        if key in seen_keys:
            raise _fail(path, n, "qid", f"a second trajectory for provider {t.provider!r} and qid {t.qid!r} (line {seen_keys[key]})")
        seen_ids[t.trajectory_id] = n
        seen_keys[key] = n
        got, bad = trace_items(t)
        if bad is not None:
            step = t.steps[bad]
            assert isinstance(step, FetchStep)
            raise _fail(path, n, f"steps[{bad}].doc_id", f"fetch of {step.doc_id!r}, which no earlier search step returned")
        started = str(_event_id(t, _trace_hash(trace_payloads(t)[0]), 0))
        have = known.traj_ids.get(t.trajectory_id)
        if have is not None and have != started:
            raise _fail(path, n, "trajectory_id", f"{t.trajectory_id!r} is already in the database with other content")
        other = known.traj_keys.get(key)
        if other is not None and other != t.trajectory_id:
            raise _fail(
                path, n, "qid", f"the database already has trajectory {other!r} for provider {t.provider!r} and qid {t.qid!r}"
            )
        new += have is None
        items[t.trajectory_id] = got
        known.traj_ids[t.trajectory_id] = started  # a later file of the same call must agree with this one
        known.traj_keys[key] = t.trajectory_id
    return new


def _event_id(t: TraceLine, h: str, k: int) -> Any:
    return stable_event_id("import", "trajectory", t.trajectory_id, h, str(k))


def trace_payloads(t: TraceLine) -> tuple[list[Payload], list[bytes]]:
    """The SPEC §3 payloads of one trajectory's stream, in order, with the fetched pages as blobs."""
    payloads: list[Payload] = [
        TrajectoryStarted(
            trajectory_id=t.trajectory_id, qid=t.qid, provider=t.provider, question=t.question, gold_answer=t.gold_answer
        )
    ]
    blobs: list[bytes] = []
    total = Usage()
    last_iter = 0
    for step in t.steps:
        last_iter = max(last_iter, step.iteration)
        if isinstance(step, ModelStep):
            u = Usage(
                input_tokens=step.usage.input_tokens,
                output_tokens=step.usage.output_tokens,
                reasoning_tokens=step.usage.reasoning_tokens,
            )
            total.input_tokens += u.input_tokens
            total.output_tokens += u.output_tokens
            total.reasoning_tokens += u.reasoning_tokens
            payloads.append(ModelResponded(iteration=step.iteration, text=None, usage=u, latency_ms=step.latency_ms))
        elif isinstance(step, SearchStep):
            payloads.append(SearchCalled(call_id=step.call_id, iteration=step.iteration, query=step.query, provider=t.provider))
            for r in step.results:
                payloads.append(
                    SearchResult(
                        call_id=step.call_id,
                        doc_id=r.doc_id,
                        rank=r.rank,
                        title=r.title,
                        url=r.url,
                        url_normalized=normalize_url(r.url),
                        domain=r.domain or domain_of(r.url),
                        snippet=r.snippet,
                        metadata=r.metadata,
                    )
                )
            payloads.append(
                SearchCompleted(call_id=step.call_id, status="ok", n_results=len(step.results), latency_ms=step.latency_ms)
            )
        else:
            payloads.append(FetchCalled(call_id=step.call_id, iteration=step.iteration, doc_id=step.doc_id, url=step.url))
            digest = None
            n_bytes = 0
            if step.content is not None:
                body = step.content.encode()
                blobs.append(body)
                digest, n_bytes = _blobs.digest(body), len(body)
            payloads.append(
                FetchCompleted(
                    call_id=step.call_id,
                    doc_id=step.doc_id,
                    status=step.status,
                    content_digest=digest,
                    n_bytes=n_bytes,
                    n_tokens=step.n_tokens,
                    cache_hit=False,
                    latency_ms=step.latency_ms,
                )
            )
    if t.final_answer is not None:
        payloads.append(AnswerFinal(iteration=last_iter, text=t.final_answer))
    payloads.append(TrajectoryFinished(reason=t.stop_reason, iterations=last_iter, usage=total))
    return payloads, blobs


def _trace_hash(payloads: list[Payload]) -> str:
    """Digest of what is stored (not of the line's spelling), so an exported trajectory re-imports as a no-op."""
    return _digest(payloads)


def trace_events(t: TraceLine) -> tuple[list[NewEvent], list[bytes]]:
    """The events of one trajectory (its question first), ids derived from the stored content."""
    payloads, blobs = trace_payloads(t)
    h = _trace_hash(payloads)
    stream = f"traj:{t.trajectory_id}"
    events = [
        NewEvent(stream_id=stream, run_id=RUN_ID, payload=p, event_id=_event_id(t, h, k)) for k, p in enumerate(payloads)
    ]
    q = DatasetQuestion(qid=t.qid, question=t.question, gold_answer=t.gold_answer)
    qid_event = NewEvent(
        stream_id=DATASET_STREAM,
        run_id=RUN_ID,
        payload=q,
        event_id=stable_event_id("import", "question", t.qid, t.question, t.gold_answer),
    )
    return [qid_event, *events], blobs


def append_traces(log: EventLog, path: Path) -> int:
    """Second pass over a validated file: append its events in chunks; returns the number written."""
    written = 0
    batch: list[NewEvent] = []
    blobs: list[bytes] = []
    for n, raw in _lines(path):
        evs, bl = trace_events(_decode_trace(path, n, raw))
        batch.extend(evs)
        blobs.extend(bl)
        if len(batch) >= CHUNK:
            written += sum(1 for p in log.append(batch, blobs=blobs) if p)
            batch, blobs = [], []
    if batch or blobs:
        written += sum(1 for p in log.append(batch, blobs=blobs) if p)
    return written


# -- judgments --------------------------------------------------------------------------------------
def db_items(log: EventLog, trajectory_ids: list[str]) -> dict[str, dict[str, bool]]:
    """{trajectory_id: {url_normalized: page_visible}} of trajectories already stored."""
    if not trajectory_ids or log.head == 0:
        return {}
    cur = log.cursor()
    try:
        p = projections.sources(cur, writable=not log.read_only)
        rows = cur.execute(
            f"SELECT trajectory_id, url_normalized, page_visible FROM ({items_sql(p)}) "
            "WHERE trajectory_id IN (SELECT unnest(?::VARCHAR[]))",
            [trajectory_ids],
        ).fetchall()
    finally:
        cur.close()
    out: dict[str, dict[str, bool]] = {}
    for tid, url, visible in rows:
        out.setdefault(tid, {})[url] = bool(visible)
    return out


def _decode_judgment(path: Path, n: int, raw: bytes) -> JudgmentLine:
    try:
        return judgment_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        f, msg = _msgspec_field(exc)
        raise _fail(path, n, f, msg) from None
    except msgspec.DecodeError as exc:
        raise _fail(path, n, "(line)", f"not valid JSON ({exc})") from None


def _labels(j: JudgmentLine) -> tuple[Verdict | None, str | None, str]:
    """(labels, None, '') when they are of the §4 schema, else (None, field, message)."""
    if j.labels is None:
        return None, "labels", "missing (null) on a valid verdict"
    try:
        return msgspec.convert(j.labels, Verdict), None, ""
    except msgspec.ValidationError as exc:
        f, msg = _msgspec_field(exc)
        return None, "labels" + ("." + f if f != "(line)" else ""), msg


def _verdict_event(j: JudgmentLine, url: str, visible: bool) -> NewEvent:
    labels = _labels(j)[0]
    payload = JudgeVerdict(
        judge_run_id=j.judge_run_id,
        item=JudgeItemRef(trajectory_id=j.trajectory_id, url_normalized=url),
        surface="page" if visible else "snippet",
        valid=j.valid,
        labels=labels,
        invalid_reason=j.invalid_reason,
    )
    eid = stable_event_id("import", "verdict", j.judge_run_id, j.trajectory_id, url, _digest(payload))
    return NewEvent(stream_id=f"judge:{j.judge_run_id}", run_id=RUN_ID, payload=payload, event_id=eid)


def validate_judgments(
    path: Path, known: Known, items: dict[str, dict[str, bool]], log: EventLog
) -> list[tuple[int, JudgmentLine, str, bool]]:
    """Check the whole file against the trajectories (this import's and the stored ones); returns its rows."""
    rows: list[tuple[int, JudgmentLine, str, bool]] = []
    decoded = [(n, _decode_judgment(path, n, raw)) for n, raw in _lines(path)]
    missing = sorted({j.trajectory_id for _, j in decoded if j.trajectory_id not in items})
    if missing:
        items = {**items, **db_items(log, missing)}
    seen: dict[tuple[str, str, str], int] = {}
    for n, j in decoded:
        t_items = items.get(j.trajectory_id)
        if t_items is None:
            raise _fail(path, n, "trajectory_id", f"unknown trajectory {j.trajectory_id!r}")
        url = normalize_url(j.url)
        if url not in t_items:
            raise _fail(path, n, "url", f"{j.url!r} is not one of trajectory {j.trajectory_id!r}'s judge items")
        key = (j.judge_run_id, j.trajectory_id, url)
        if key in seen:
            raise _fail(path, n, "url", f"a second verdict for this item in judge run {j.judge_run_id!r} (line {seen[key]})")
        seen[key] = n
        visible = t_items[url]
        if j.valid:
            labels, bad_field, msg = _labels(j)
            if labels is None:
                raise _fail(path, n, bad_field or "labels", msg)
            if (labels.page is not None) != visible:
                want = "non-null (the item is page-visible)" if visible else "null (the item is not page-visible)"
                raise _fail(path, n, "labels.page", f"must be {want}")
        stored = known.verdicts.get(key)
        if stored is not None and stored != str(_verdict_event(j, url, visible).event_id):
            raise _fail(path, n, "url", f"judge run {j.judge_run_id!r} already has another verdict for this item")
        rows.append((n, j, url, visible))
    return rows


def append_judgments(log: EventLog, known: Known, rows: list[tuple[int, JudgmentLine, str, bool]]) -> int:
    written = 0
    batch: list[NewEvent] = []
    started: set[str] = set(known.judge_runs)
    for _, j, url, visible in rows:
        if j.judge_run_id not in started:
            started.add(j.judge_run_id)
            batch.append(
                NewEvent(
                    stream_id=f"judge:{j.judge_run_id}",
                    run_id=RUN_ID,
                    payload=JudgeStarted(
                        judge_run_id=j.judge_run_id, model="imported", prompt_version="imported", prompt_sha256=""
                    ),
                    event_id=stable_event_id("import", "judge.started", j.judge_run_id),
                )
            )
        batch.append(_verdict_event(j, url, visible))
        if len(batch) >= CHUNK:
            written += sum(1 for p in log.append(batch) if p)
            batch = []
    if batch:
        written += sum(1 for p in log.append(batch) if p)
    return written


# -- audit ------------------------------------------------------------------------------------------
def validate_audit(path: Path, known: Known) -> list[NewEvent]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None
    lines = text.splitlines()
    if not lines:
        raise _fail(path, 1, "(header)", "empty file; expected the header provider<TAB>qid<TAB>semantic_match")
    header = [h.strip() for h in lines[0].split("\t")]
    for name in AUDIT_HEADER:
        if name not in header:
            raise _fail(path, 1, name, "missing from the header (provider<TAB>qid<TAB>semantic_match)")
    col = {name: header.index(name) for name in AUDIT_HEADER}
    seen: dict[tuple[str, str], int] = {}
    events: list[NewEvent] = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        for name in AUDIT_HEADER:
            if col[name] >= len(cells):
                raise _fail(path, n, name, "missing value")
        provider, qid = cells[col["provider"]].strip(), cells[col["qid"]].strip()
        raw = cells[col["semantic_match"]].strip().lower()
        if raw not in AUDIT_VALUES:
            raise _fail(path, n, "semantic_match", f"{cells[col['semantic_match']]!r} is not one of true, false, 1, 0")
        if not provider or not qid:
            raise _fail(path, n, "provider" if not provider else "qid", "empty value")
        key = (provider, qid)
        if key in seen:
            raise _fail(path, n, "qid", f"a second audit row for provider {provider!r} and qid {qid!r} (line {seen[key]})")
        seen[key] = n
        value = AUDIT_VALUES[raw]
        eid = stable_event_id("import", "audit", provider, qid, str(value))
        stored = known.audits.get(key)
        if stored is not None and stored != str(eid):
            raise _fail(path, n, "semantic_match", f"the database already has another audit for {provider!r} {qid!r}")
        payload = AuditAnswer(trajectory_id=None, provider=provider, qid=qid, semantic_match=value, source=AUDIT_SOURCE)
        events.append(NewEvent(stream_id=AUDIT_STREAM, run_id=RUN_ID, payload=payload, event_id=eid))
    return events


# -- the command's body -----------------------------------------------------------------------------
@dataclass
class ImportResult:
    trajectories: int = 0
    verdicts: int = 0
    audits: int = 0
    events_written: int = 0


def import_files(log: EventLog, traces: list[Path], judgments: list[Path], audits: list[Path]) -> ImportResult:
    """Validate every file fully (nothing written when any is bad), then append each file's events."""
    known = Known.load(log)
    items: dict[str, dict[str, bool]] = {}
    res = ImportResult()
    for path in traces:
        res.trajectories += validate_traces(path, known, items)
    verdict_rows = []
    for path in judgments:
        rows = validate_judgments(path, known, items, log)
        for _, j, url, visible in rows:
            known.verdicts.setdefault((j.judge_run_id, j.trajectory_id, url), str(_verdict_event(j, url, visible).event_id))
        verdict_rows.append(rows)
    audit_events = []
    for path in audits:
        evs = validate_audit(path, known)
        for ev in evs:
            p = ev.payload
            assert isinstance(p, AuditAnswer)
            known.audits.setdefault((p.provider or "", p.qid or ""), str(ev.event_id))
        audit_events.append(evs)
    for path in traces:
        res.events_written += append_traces(log, path)
    for rows in verdict_rows:
        n = append_judgments(log, known, rows)
        res.events_written += n
        res.verdicts += len(rows)
    for evs in audit_events:
        res.events_written += sum(1 for p in log.append(evs) if p) if evs else 0
        res.audits += len(evs)
    return res
