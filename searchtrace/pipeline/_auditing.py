"""Check the judge against humans (docs/how-to/audit.md): a balanced sample to label, label import, agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from searchtrace.analytics import (
    AGREEMENT,
    MIN_LABELS,
    AuditAgreement,
    AuditPlan,
    JudgeComparison,
    agreement,
    design_event,
    prepare_import,
    to_tsv,
)
from searchtrace.analytics import audit_sample as draw_sample
from searchtrace.analytics import audit_status as status_of
from searchtrace.store import BadInput, EventLog, require_database


class AuditSample(msgspec.Struct, kw_only=True):
    judge_run_id: str
    rows: list[dict[str, str]]
    leaves: int
    design_recorded: bool = False  # a new audit.design event (False: the same sample was drawn before)
    plan: AuditPlan | None = None  # with --target-width / --n: the strata's sizes and the expected widths


class AuditImport(msgspec.Struct, kw_only=True):
    rows: int
    new: int
    already: int
    unlabelled: int


def audit_sample(db: Path, judge_run_id: str | None, k: int, seed: str, out: Path, *,
                 target_width: float | None = None, total: int | None = None, agreement: float = AGREEMENT,
                 min_labels: int = MIN_LABELS) -> AuditSample:
    """Writes k cases per provider × surface × label × judge value as a TSV for human labels, and records the
    sample's design (docs/concepts/statistics.md `audit.design`: each stratum's N_h and n_h, the cases drawn) once the TSV is written."""
    require_database(db)  # sampling never creates a store
    with EventLog(db) as log:
        jr, rows, design, audit_plan = draw_sample(log, judge_run_id, k, seed, target_width=target_width,
                                                   total=total, agreement=agreement, min_labels=min_labels)
        try:
            out.write_text(to_tsv(rows), encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"{out}: cannot write ({exc.strerror})") from None
        recorded = bool(log.append([design_event(design)])[0])
    leaves = len({(r["provider"], r["surface"], r["label"], r["judge_value"]) for r in rows})
    return AuditSample(judge_run_id=jr, rows=rows, leaves=leaves, design_recorded=recorded, plan=audit_plan)


def audit_import(db: Path, tsv: Path) -> AuditImport:
    """Imports human labels as audit.label events; re-importing adds nothing."""
    require_database(db)  # the labels belong to a store that has the judge run
    with EventLog(db) as log:
        events, counts = prepare_import(log, tsv)
        positions = log.append(events) if events else []
    new = sum(1 for p in positions if p)
    return AuditImport(rows=counts["rows"], new=new, already=counts["unchanged"] + len(events) - new,
                       unlabelled=counts["unlabelled"])


def judge_compare(db: Path, run_a: str, run_b: str) -> JudgeComparison:
    """Two judge runs over the same items (docs/concepts/statistics.md): per-label agreement and kappa, partitions, disagreements."""
    from searchtrace.analytics import compare_judge_runs

    require_database(db)
    with EventLog(db, read_only=True) as log:
        return compare_judge_runs(log, run_a, run_b)


def audit_status(db: Path, judge_run_id: str | None) -> dict[str, Any]:
    """Which corrected figures the labels imported so far make computable, and how wide (docs/concepts/paired-and-audits.md)."""
    require_database(db)
    with EventLog(db, read_only=True) as log:
        return status_of(log, judge_run_id)


def audit_agreement(db: Path, judge_run_id: str | None) -> AuditAgreement:
    """Agreement = agreeing / clear cases (unclear excluded), overall and per leaf."""
    with EventLog(db, read_only=True) as log:
        return agreement(log, judge_run_id)
