"""Judgments JSONL (docs/reference/interchange.md) -> `judge.started` (model "imported") and `judge.verdict` events in `judge:<run>`.

Read up to three times, never held whole in memory: a quick pass for the trajectory ids and judge runs it
names (to load what the database knows about them; skipped for an empty store), a validating pass that derives
each verdict's id, and after every file of the call has validated, the pass that appends (reusing those ids). A verdict's id derives from what is stored (run, item, labels), so the
same verdict in another spelling of the URL, or exported and re-imported, is a no-op.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec

import searchtrace.replay.interchange._common as import_common
from searchtrace.adapters import norm_url
from searchtrace.analytics import ITEMS_SQL, sources
from searchtrace.replay.interchange._common import (
    RUN_ID,
    Known,
    decode_line,
    digest,
    event_id,
    fail,
    key_digest,
    lines,
    msgspec_field,
    uuid_of_int,
)
from searchtrace.replay.interchange._formats import (
    JudgmentLine,
    TypedJudgmentLine,
    judgment_decoder,
    typed_judgment_decoder,
)
from searchtrace.store import (
    EventLog,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    NewEvent,
    Verdict,
    judge_stream,
    shown,
)

Items = dict[str, dict[str, bool]]  # trajectory_id -> {url_normalized: page_visible}


class _Names(msgspec.Struct):
    judge_run_id: str = ""
    trajectory_id: str = ""


_names = msgspec.json.Decoder(_Names)


def db_items(log: EventLog, trajectory_ids: list[str]) -> Items:
    """Judge items (with page visibility) of trajectories already stored."""
    if not trajectory_ids or log.head == 0:
        return {}
    cur = log.cursor()
    try:
        with sources.reading(cur, writable=not log.read_only):
            rows = cur.execute(
                f"SELECT trajectory_id, url_normalized, page_visible FROM ({ITEMS_SQL}) "
                "WHERE trajectory_id IN (SELECT unnest(?::VARCHAR[]))",
                [trajectory_ids],
            ).fetchall()
    finally:
        cur.close()
    out: Items = {}
    for tid, url, visible in rows:
        out.setdefault(tid, {})[url] = bool(visible)
    return out


Line = JudgmentLine | TypedJudgmentLine


def read_line(path: Path, n: int, raw: bytes) -> Line:
    """The typed decode when the line has judge labels (docs/concepts/judge.md) (or null), else the generic one that reports what is wrong."""
    try:
        return typed_judgment_decoder.decode(raw)
    except (msgspec.MsgspecError, RecursionError):
        j: JudgmentLine = decode_line(judgment_decoder, path, n, raw)
        return j


def _labels(j: Line) -> tuple[Verdict | None, str, str]:
    """(labels, '', '') when they are of the judge's schema, else (None, field, message)."""
    if j.labels is None:
        return None, "labels", "missing (null) on a valid verdict"
    if isinstance(j.labels, Verdict):
        return j.labels, "", ""
    try:
        return msgspec.convert(j.labels, Verdict), "", ""
    except msgspec.ValidationError as exc:
        f, msg = msgspec_field(exc)
        return None, "labels" + ("." + f if f != "(line)" else ""), msg


def verdict_payload(j: Line, url: str, visible: bool, labels: Verdict | None) -> JudgeVerdict:
    return JudgeVerdict(
        judge_run_id=j.judge_run_id,
        item=JudgeItemRef(trajectory_id=j.trajectory_id, url_normalized=url),
        surface="page" if visible else "snippet",
        valid=j.valid,
        labels=labels,
        invalid_reason=j.invalid_reason,
    )


def verdict_id(j: Line, url: str, payload: JudgeVerdict) -> uuid.UUID:
    """Derived from what is stored, so another spelling of the same verdict is the same event."""
    return event_id("import", "verdict", j.judge_run_id, j.trajectory_id, url, digest(payload))


def prepare(path: Path, known: Known, items: Items, log: EventLog) -> None:
    """Quick pass: load the stored items and verdict keys of the trajectories and runs the file names."""
    if log.head == 0:
        return  # an empty store knows no item or verdict: nothing to load
    tids: set[str] = set()
    runs: set[str] = set()
    for _, raw in lines(path):
        try:
            names = _names.decode(raw)
        except (msgspec.MsgspecError, RecursionError):
            continue  # the validating pass reports it with its line and field
        runs.add(names.judge_run_id)
        if names.trajectory_id not in items:
            tids.add(names.trajectory_id)
    items.update(db_items(log, sorted(tids)))
    known.load_verdicts(log, runs)


def _check(path: Path, n: int, j: Line, items: Items) -> tuple[str, bool, Verdict | None]:
    """(url_normalized, page visible, labels) of a verdict line, or BadInput naming its bad field."""
    t_items = items.get(j.trajectory_id)
    if t_items is None:
        raise fail(path, n, "trajectory_id", f"unknown trajectory {shown(j.trajectory_id)}")
    url = norm_url(j.url)
    if url not in t_items:
        raise fail(path, n, "url", f"{shown(j.url)} is not one of trajectory {shown(j.trajectory_id)}'s judge items")
    visible = t_items[url]
    if j.valid:
        labels, bad_field, msg = _labels(j)
        if labels is None:
            raise fail(path, n, bad_field, msg)
        if (labels.page is not None) != visible:
            want = "non-null (the item is page-visible)" if visible else "null (the item is not page-visible)"
            raise fail(path, n, "labels.page", f"must be {want}")
        return url, visible, labels
    return url, visible, _labels(j)[0]


def validate(path: Path, known: Known, items: Items) -> int:
    """Check every line; records the file's verdict keys in `known` (for later files); returns the line count."""
    seen: dict[bytes, int] = {}
    count = 0
    for n, raw in lines(path):
        j = read_line(path, n, raw)
        url, visible, labels = _check(path, n, j, items)
        key = key_digest(j.judge_run_id, j.trajectory_id, url)
        if key in seen:
            raise fail(path, n, "url", f"a second verdict for this item in judge run {shown(j.judge_run_id)} (line {seen[key]})")
        seen[key] = n
        eid = verdict_id(j, url, verdict_payload(j, url, visible, labels)).bytes
        stored = known.verdicts.get(key)
        if stored is not None and stored != eid:
            again = known.stored_judgment(j.judge_run_id, j.trajectory_id, url)
            if again is None or msgspec.json.encode(again) != msgspec.json.encode(j):
                raise fail(path, n, "url", f"judge run {shown(j.judge_run_id)} already has another verdict for this item")
            known.same_verdicts.add(key)  # a recorded verdict's own export: nothing to add
            count += 1
            continue
        known.verdicts[key] = eid  # the file's own keys are unique (checked above), so none is compared twice
        count += 1
    return count


def append(log: EventLog, path: Path, known: Known, items: Items) -> int:
    """Append a validated file's events in chunks; returns the number of new events.

    Each verdict's id was derived by the validating pass and kept in `known.verdicts` under its item key.
    """
    written = 0
    batch: list[NewEvent] = []
    chunk = import_common.CHUNK
    for n, raw in lines(path):
        j = read_line(path, n, raw)
        if j.judge_run_id not in known.judge_runs:
            known.judge_runs.add(j.judge_run_id)
            started = JudgeStarted(
                judge_run_id=j.judge_run_id, model="imported", prompt_version="imported", prompt_sha256=""
            )
            eid: uuid.UUID = event_id("import", "judge.started", j.judge_run_id)
            batch.append(NewEvent(stream_id=judge_stream(j.judge_run_id), run_id=RUN_ID, payload=started, event_id=eid))
        url, visible, labels = _check(path, n, j, items)
        key = key_digest(j.judge_run_id, j.trajectory_id, url)
        if key in known.same_verdicts:
            continue
        eid_bytes = known.verdicts[key]
        batch.append(
            NewEvent(
                stream_id=judge_stream(j.judge_run_id),
                run_id=RUN_ID,
                payload=verdict_payload(j, url, visible, labels),
                event_id=uuid_of_int(int.from_bytes(eid_bytes)),
            )
        )
        if len(batch) >= chunk:
            written += sum(1 for p in log.append(batch) if p)
            batch = []
    if batch:
        written += sum(1 for p in log.append(batch) if p)
    return written
