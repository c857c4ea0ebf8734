"""`import`: docs/reference/interchange.md files -> docs/reference/events.md events; every file of the call is validated whole before anything is written.

Streams: `traj:<trajectory_id>` per trajectory, `judge:<judge_run_id>` per judge run, `dataset:imported` for
questions and `audit:imported` for audit rows. Event ids derive from content, so importing the same files
again adds nothing, while a different trajectory, verdict or audit value for a key already stored is refused
like a duplicate inside one file. Big files are appended in chunks, after the validation of every file.
"""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgspec

import searchtrace.replay.interchange._judgments as import_judgments
from searchtrace.replay.interchange._audit import validate_audit
from searchtrace.replay.interchange._common import (
    Known,
    Raw,
    append_chunked,
    audit_key,
    blob_folder,
    frozen_inputs,
)
from searchtrace.replay.interchange._export import judgments_of as export_judgments
from searchtrace.replay.interchange._formats import JudgmentLine
from searchtrace.replay.interchange._runs import runs_beside, validate_runs
from searchtrace.replay.interchange._traces import append_traces, validate_traces
from searchtrace.store import (
    AuditAnswer,
    EventLog,
    NewEvent,
    Payload,
    TrajectoryStarted,
    epoch_of,
    trajectory_stream,
)


@dataclass
class ImportResult:
    trajectories: int = 0  # new ones
    verdicts: int = 0  # lines read
    audits: int = 0  # rows read
    events_written: int = 0


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic GC: an import allocates millions of short-lived, acyclic objects while large indexes
    stay alive, and each full collection walks those indexes again (a quarter of the import time at 10x)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def import_files(
    log: EventLog,
    traces: list[Path],
    judgments: list[Path],
    audits: list[Path],
    *,
    blobs: Path | None = None,
    on_stage: Callable[[str], None] = lambda _stage: None,
    pending: Sequence[tuple[list[NewEvent], list[bytes]]] = (),
) -> ImportResult:
    """Validate every file fully (nothing written when any is bad), then append each file's events; the run.jsonl
    beside a traces file is read too, and `blobs` is the folder of raw bodies `export --blobs` wrote. `pending`:
    trajectories mapped from elsewhere (OTLP spans), each (events, blobs), known to the files' validation and
    appended first, only once every file is valid."""
    runs = runs_beside(traces)
    with _no_cycle_collection(), frozen_inputs([*runs, *traces, *judgments, *audits]):
        return _import(log, runs, traces, judgments, audits, blob_folder(blobs), on_stage, pending)


def _know_pending(known: Known, items: import_judgments.Items, pending: Sequence[tuple[list[NewEvent], list[bytes]]],
                  *, with_items: bool) -> None:
    """The pending trajectories as the files' validation sees stored ones: their ids and cells, and (`with_items`:
    a judgments file names them) their judge items, derived by the store's own rule over a scratch store."""
    started: set[str] = set()
    for events, _ in pending:
        for ev in events:
            p = ev.payload
            if isinstance(p, TrajectoryStarted):
                started.add(p.trajectory_id)
                known.traj_ids.setdefault(p.trajectory_id, str(ev.event_id))
                known.traj_keys.setdefault((ev.run_id, p.provider, p.qid, epoch_of(p)), p.trajectory_id)
    if not with_items or not pending:
        return
    with tempfile.TemporaryDirectory(prefix="searchtrace-pending-") as tmp, \
            EventLog(Path(tmp) / "pending.duckdb") as scratch:
        append_chunked(scratch, pending)
        items.update(import_judgments.db_items(scratch, sorted(started)))


def _stored_payloads(log: EventLog) -> Callable[[str], list[Payload] | None]:
    """A stored trajectory's payloads in stream order (None: not stored), read when a line needs the comparison."""

    def get(trajectory_id: str) -> list[Payload] | None:
        got = [ev.payload for ev in log.read(stream_id=trajectory_stream(trajectory_id))]
        return got or None

    return get


def _stored_judgments(log: EventLog) -> Callable[[str, str, str], JudgmentLine | None]:
    """The store's verdicts as export writes them, derived once and only when a line needs the comparison."""
    cache: dict[tuple[str, str, str], JudgmentLine] = {}
    loaded = False

    def get(judge_run_id: str, trajectory_id: str, url: str) -> JudgmentLine | None:
        nonlocal loaded
        if not loaded:
            cache.update(((j.judge_run_id, j.trajectory_id, j.url), j) for j in export_judgments(log, set()))
            loaded = True
        return cache.get((judge_run_id, trajectory_id, url))

    return get


def _import(
    log: EventLog,
    runs: list[Path],
    traces: list[Path],
    judgments: list[Path],
    audits: list[Path],
    raw: Raw,
    on_stage: Callable[[str], None],
    pending: Sequence[tuple[list[NewEvent], list[bytes]]] = (),
) -> ImportResult:
    on_stage("reading the store")
    known = Known.load(log)
    known.stored_payloads = _stored_payloads(log)
    known.stored_judgment = _stored_judgments(log)
    known.raw = raw
    items: import_judgments.Items = {}
    _know_pending(known, items, pending, with_items=bool(judgments))
    res = ImportResult()
    run_events = []
    for path in runs:
        on_stage(f"validating {path.name}")
        run_events.extend(validate_runs(path, known))
    for path in traces:
        on_stage(f"validating {path.name}")
        res.trajectories += validate_traces(path, known, items)
    for path in judgments:
        on_stage(f"validating {path.name}")
        import_judgments.prepare(path, known, items, log)
        res.verdicts += import_judgments.validate(path, known, items)
    audit_events = []
    for path in audits:
        on_stage(f"validating {path.name}")
        evs = validate_audit(path, known)
        for ev in evs:
            p = ev.payload
            assert isinstance(p, AuditAnswer)
            epoch = None if isinstance(p.epoch, msgspec.UnsetType) else p.epoch
            known.audits.setdefault(audit_key(p.trajectory_id, p.provider, p.qid, epoch), str(ev.event_id))
        audit_events.append(evs)
        res.audits += len(evs)
    if run_events:
        res.events_written += sum(1 for p in log.append(run_events) if p)
    if pending:
        on_stage("appending the mapped trajectories")
        res.events_written += append_chunked(log, pending)
    for path in traces:
        on_stage(f"appending {path.name}")
        res.events_written += append_traces(log, path, known.same_as_stored, raw)
    for path in judgments:
        on_stage(f"appending {path.name}")
        res.events_written += import_judgments.append(log, path, known, items)
    for evs in audit_events:
        if evs:
            res.events_written += sum(1 for p in log.append(evs) if p)
    return res
