"""Audit TSV (SPEC §9): header provider, qid, semantic_match -> `audit.answer` events (source "imported")."""

from __future__ import annotations

from pathlib import Path

from searchtrace.replay.interchange._common import (
    AUDIT_SOURCE,
    AUDIT_STREAM,
    RUN_ID,
    Known,
    event_id,
    fail,
    read_input,
)
from searchtrace.replay.interchange._formats import AUDIT_HEADER, AUDIT_VALUES
from searchtrace.store import AuditAnswer, BadInput, NewEvent


# -- audit ------------------------------------------------------------------------------------------
def validate_audit(path: Path, known: Known) -> list[NewEvent]:
    try:
        text = read_input(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None
    lines = text.splitlines()
    if not lines:
        raise fail(path, 1, "(header)", "empty file; expected the header provider<TAB>qid<TAB>semantic_match")
    header = [h.strip().lower() for h in lines[0].removeprefix("\ufeff").split("\t")]
    for name in AUDIT_HEADER:
        if name not in header:
            raise fail(path, 1, name, "missing from the header (provider<TAB>qid<TAB>semantic_match)")
    col = {name: header.index(name) for name in AUDIT_HEADER}
    seen: dict[tuple[str, str], int] = {}
    events: list[NewEvent] = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        for name in AUDIT_HEADER:
            if col[name] >= len(cells):
                raise fail(path, n, name, "missing value")
        provider, qid = cells[col["provider"]].strip(), cells[col["qid"]].strip()
        raw = cells[col["semantic_match"]].strip().lower()
        if raw not in AUDIT_VALUES:
            raise fail(path, n, "semantic_match", f"{cells[col['semantic_match']]!r} is not one of true, false, 1, 0")
        if not provider or not qid:
            raise fail(path, n, "provider" if not provider else "qid", "empty value")
        key = (provider, qid)
        if key in seen:
            raise fail(path, n, "qid", f"a second audit row for provider {provider!r} and qid {qid!r} (line {seen[key]})")
        seen[key] = n
        value = AUDIT_VALUES[raw]
        eid = event_id("import", "audit", provider, qid, str(value))
        stored = known.audits.get(key)
        if stored is not None and stored != str(eid):
            raise fail(path, n, "semantic_match", f"the database already has another audit for {provider!r} {qid!r}")
        payload = AuditAnswer(trajectory_id=None, provider=provider, qid=qid, semantic_match=value, source=AUDIT_SOURCE)
        events.append(NewEvent(stream_id=AUDIT_STREAM, run_id=RUN_ID, payload=payload, event_id=eid))
    return events
