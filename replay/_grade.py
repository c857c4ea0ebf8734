"""A deterministic answer grader that proposes `semantic_match` when no audited TSV exists (an imported audit wins)."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from searchtrace.analytics import CELL_EVENT_TYPES, Cells, tokens
from searchtrace.store import AuditAnswer, EventLog, NewEvent, stable_event_id

SOURCE = "grader:normalized-match/1"
STREAM = "audit:grader"


class Grade(msgspec.Struct, kw_only=True):
    trajectory_id: str
    provider: str
    qid: str
    final_answer: str | None
    gold_answer: str
    semantic_match: bool


def proposes_match(final_answer: str | None, gold: str | list[str]) -> bool:
    """Exact match after docs/concepts/metrics.md normalisation, or a whole gold answer standing inside the final answer; with
    several accepted answers (docs/how-to/compare.md), any of them."""
    f = tokens(final_answer)
    for alias in [gold] if isinstance(gold, str) else gold:
        g = tokens(alias)
        if f and g and any(f[i : i + len(g)] == g for i in range(len(f) - len(g) + 1)):
            return True
    return False


def _grades(log: EventLog) -> Iterator[Grade]:
    """One grade per current trajectory (analytics._rules: latest attempt, gold fallback, last final answer)."""
    cells = Cells()
    for ev in log.read(types=list(CELL_EVENT_TYPES)):
        cells.add(ev.stream_id, ev.payload)
    for stream, t in cells.current():
        gold = cells.gold(t)
        final = cells.final(stream)
        yield Grade(
            trajectory_id=t.trajectory_id,
            provider=t.provider,
            qid=t.qid,
            final_answer=final,
            gold_answer=gold,
            semantic_match=proposes_match(final, cells.aliases(t)),
        )


def grade_answers(log: EventLog, *, run_id: str = "grader") -> list[Grade]:
    """Append one `audit.answer` proposal per trajectory; re-running adds nothing (content-derived ids)."""
    grades = list(_grades(log))
    events = [
        NewEvent(
            stream_id=STREAM,
            run_id=run_id,
            event_id=stable_event_id("grade", SOURCE, g.trajectory_id, str(g.semantic_match)),
            payload=AuditAnswer(
                trajectory_id=g.trajectory_id,
                provider=g.provider,
                qid=g.qid,
                semantic_match=g.semantic_match,
                source=SOURCE,
            ),
        )
        for g in grades
    ]
    if events:
        log.append(events)
    return grades
