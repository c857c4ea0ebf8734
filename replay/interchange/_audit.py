"""Audit TSV (docs/reference/interchange.md): header provider, qid, semantic_match, optionally epoch and trajectory_id ->
`audit.answer` events (source "imported").

A row decides one trajectory (trajectory_id), one epoch of a (provider, qid) cell (epoch), or the whole cell (neither:
refused when a run has the cell in several epochs, since it would not say which answer it judged). A row naming
epoch 1 of a cell recorded in epoch 1 only is stored as the row without an epoch, so earlier audit events, and an
exported file imported back, keep their event ids; a row for a cell not recorded yet keeps the epoch it names.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from searchtrace.replay.interchange._common import (
    AUDIT_SOURCE,
    AUDIT_STREAM,
    RUN_ID,
    AuditKey,
    Known,
    audit_key,
    event_id,
    fail,
    lines,
)
from searchtrace.replay.interchange._formats import (
    AUDIT_EPOCH,
    AUDIT_HEADER,
    AUDIT_TRAJECTORY,
    AUDIT_VALUES,
    INT32_MAX,
)
from searchtrace.store import AuditAnswer, NewEvent, TrajectoryStarted, epoch_of, shown

Cell = tuple[str, str]  # (provider, qid)


class _Cells:
    """The (provider, qid) cells the store and the traces of this import have: epochs per run, and each trajectory's
    cell, read once per audit file."""

    def __init__(self, known: Known) -> None:
        self.known = known
        self.epochs: dict[Cell, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.of: dict[str, tuple[str, str, int]] = {}  # trajectory_id -> (provider, qid, epoch)
        for (run, provider, qid, epoch), tid in known.traj_keys.items():
            self.epochs[(provider, qid)][run].add(epoch)
            self.of[tid] = (provider, qid, epoch)

    def several(self, cell: Cell) -> tuple[str, int] | None:
        """(a run, its number of epochs) when some run has the cell in several epochs, else None."""
        for run, epochs in sorted(self.epochs.get(cell, {}).items()):
            if len(epochs) > 1:
                return run, len(epochs)
        return None

    def known_epochs(self, cell: Cell) -> set[int]:
        return {e for epochs in self.epochs.get(cell, {}).values() for e in epochs}

    def trajectory(self, tid: str) -> tuple[str, str, int] | None:
        """(provider, qid, epoch) of a trajectory of the store or of this import (a later attempt too), else None."""
        if tid in self.of:
            return self.of[tid]
        if tid not in self.known.traj_ids:
            return None
        for p in self.known.stored_payloads(tid) or []:
            if isinstance(p, TrajectoryStarted):
                self.of[tid] = (p.provider, p.qid, epoch_of(p))
                return self.of[tid]
        return None


def _epoch(path: Path, n: int, raw: str) -> int | None:
    text = raw.strip()
    if not text:
        return None
    if not text.isdecimal() or len(text) > 10 or not 1 <= int(text) <= INT32_MAX:  # 10 digits: no int() of 5,000
        raise fail(path, n, AUDIT_EPOCH, f"{shown(raw)} is not an epoch (a whole number from 1)")
    return int(text)


def _decoded(path: Path, n: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise fail(path, n, "(line)", "not valid UTF-8") from None


# -- audit ------------------------------------------------------------------------------------------
def validate_audit(path: Path, known: Known) -> list[NewEvent]:
    rows = ((n, _decoded(path, n, raw)) for n, raw in lines(path))  # streamed: a bad line fails as it is read
    first = next(rows, None)
    if first is None:
        raise fail(path, 1, "(header)", "empty file; expected the header provider<TAB>qid<TAB>semantic_match")
    header = [h.strip().lower() for h in first[1].split("\t")]
    for name in AUDIT_HEADER:
        if name not in header:
            raise fail(path, 1, name, "missing from the header (provider<TAB>qid<TAB>semantic_match)")
    names = (*AUDIT_HEADER, *(c for c in (AUDIT_EPOCH, AUDIT_TRAJECTORY) if c in header))
    col = {name: header.index(name) for name in names}
    cells = _Cells(known)
    seen: dict[AuditKey, int] = {}
    by_trajectory: dict[AuditKey, int] = {}  # the cell (with its epoch) of each trajectory row -> its line
    by_cell: dict[AuditKey, int] = {}
    events: list[NewEvent] = []
    for n, line in rows:
        raw_cells = line.split("\t")
        for name in names:
            if col[name] >= len(raw_cells) and name not in (AUDIT_EPOCH, AUDIT_TRAJECTORY):
                raise fail(path, n, name, "missing value")
        got = {name: raw_cells[col[name]] if col[name] < len(raw_cells) else "" for name in names}
        provider, qid = got["provider"].strip(), got["qid"].strip()
        raw = got["semantic_match"].strip().lower()
        if raw not in AUDIT_VALUES:
            raise fail(path, n, "semantic_match", f"{shown(got['semantic_match'])} is not one of true, false, 1, 0")
        value = AUDIT_VALUES[raw]
        epoch = _epoch(path, n, got.get(AUDIT_EPOCH, ""))
        tid = got.get(AUDIT_TRAJECTORY, "").strip() or None
        if tid is not None:
            where = cells.trajectory(tid)
            if where is None:
                raise fail(path, n, AUDIT_TRAJECTORY, f"no trajectory {shown(tid)} in the database or the traces imported")
            for name, given, actual in (("provider", provider, where[0]), ("qid", qid, where[1])):
                if given and given != actual:
                    raise fail(path, n, name, f"{shown(given)} but trajectory {shown(tid)} has {shown(actual)}")
            if epoch is not None and epoch != where[2]:
                raise fail(path, n, AUDIT_EPOCH, f"{epoch} but trajectory {shown(tid)} is epoch {where[2]}")
            provider, qid, epoch = where
            stored_epoch = None
            eid = event_id("import", "audit", "trajectory", tid, str(value))
        else:
            if not provider or not qid:
                raise fail(path, n, "provider" if not provider else "qid", "empty value")
            cell = (provider, qid)
            if epoch is None:
                if several := cells.several(cell):
                    raise fail(path, n, AUDIT_EPOCH, f"provider {shown(provider)} and qid {shown(qid)} have {several[1]} epochs "
                               f"in run {shown(several[0])}; name the epoch (column epoch) or the trajectory "
                               "(column trajectory_id) this row judges")
            else:
                have = cells.known_epochs(cell)
                if have and epoch not in have:
                    raise fail(path, n, AUDIT_EPOCH, f"provider {shown(provider)} and qid {shown(qid)} have no epoch {epoch} "
                               f"(epochs {', '.join(map(str, sorted(have)))})")
            # epoch 1 of a cell recorded in epoch 1 only is the row without an epoch (the same event); a cell not
            # recorded yet keeps the epoch named, so the row still applies once more epochs arrive
            stored_epoch = None if epoch is None or (epoch == 1 and cells.known_epochs(cell) == {1}) else epoch
            parts = ("import", "audit", provider, qid, str(value))
            eid = event_id(*parts) if stored_epoch is None else event_id(*parts, "epoch", str(stored_epoch))
        key = audit_key(tid, provider, qid, stored_epoch)
        # the cell (and epoch) a row decides: epoch 1 and no epoch are one cell unless it has another epoch
        cell_key = audit_key(None, provider, qid, None if epoch == 1 and cells.known_epochs((provider, qid)) <= {1}
                             else epoch)
        same = key if tid else cell_key
        if same in seen:
            what = f"trajectory {tid!r}" if tid else f"provider {provider!r} and qid {qid!r}" + (
                f" in epoch {epoch}" if epoch is not None else "")
            raise fail(path, n, AUDIT_TRAJECTORY if tid else "qid", f"a second audit row for {what} (line {seen[same]})")
        seen[same] = n
        # a trajectory's row and its cell's row in one file would both decide it: refused like a second row
        mine, other = (by_trajectory, by_cell) if tid else (by_cell, by_trajectory)
        if cell_key in other:
            raise fail(path, n, AUDIT_TRAJECTORY if tid else "qid", f"line {other[cell_key]} already judges "
                       f"provider {shown(provider)} and qid {shown(qid)}" + (f" in epoch {epoch}" if epoch is not None else ""))
        mine.setdefault(cell_key, n)
        stored = known.audits.get(key)
        if stored is not None and stored != str(eid):
            raise fail(path, n, "semantic_match", f"the database already has another audit for {shown(provider)} {shown(qid)}"
                       + (f" (trajectory {shown(tid)})" if tid else f" in epoch {stored_epoch}" if stored_epoch else ""))
        if tid is not None:
            payload = AuditAnswer(trajectory_id=tid, provider=provider, qid=qid, semantic_match=value,
                                  source=AUDIT_SOURCE)
        elif stored_epoch is not None:
            payload = AuditAnswer(trajectory_id=None, provider=provider, qid=qid, semantic_match=value,
                                  source=AUDIT_SOURCE, epoch=stored_epoch)
        else:
            payload = AuditAnswer(trajectory_id=None, provider=provider, qid=qid, semantic_match=value,
                                  source=AUDIT_SOURCE)
        events.append(NewEvent(stream_id=AUDIT_STREAM, run_id=RUN_ID, payload=payload, event_id=eid))
    return events
