"""Evidence analytics over the event log: docs/concepts/judge.md judge items, §5 metrics, §8 report (reads only `store`).

Where things are:
- `relations`: the typed relations, one per event type (`trajectories`, `verdicts`, ...): named once, as SQL.
- `sources`: where those names resolve, chosen with DuckDB's search_path: the `proj` tables, or views over
  the raw events (an in-memory catalog, so read-only stores work too).
- `projections`: the `proj` tables, caught up incrementally (caches, never a source of truth).
- `rules`: the domain rules every reader shares, in SQL and in Python (latest attempt, final answer, deciding
  audit, default judge run).
- `shown`: docs/concepts/shown.md what the model saw: which results a later model request contained (a replay, table `shown`).
- `items`: docs/concepts/judge.md judge items (the judge's input; ITEMS_SQL also feeds metrics and `v_judge_items`).
- `metrics` + `textnorm`: every §5 metric, exact integer sums; `report`: the §8 report and its canonical JSON.
- `model`: the typed read model (the report, judge comparison and audit agreement as Structs; the partition's vocabulary).
- `arms`: docs/how-to/compare.md `report --by`: the runs an axis reads, the refusals that keep runs apart, `trajectory_arms`.
- `views`: the documented `v_*` / `ev_*` views for `searchtrace sql` (VIEWS.md); `custom`: user metric files.
- `lookups`: narrow reads for the audit and the HTML page; `audit`: docs/how-to/audit.md oracle validation; `correction`:
  docs/concepts/statistics.md judge-error correction of the snippet rates by the human labels (`JudgedCase`).
- `table` (terminal form), `html` (the HTML page), `examples/` (a worked metric).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    import searchtrace.analytics._html as html
    import searchtrace.analytics._projections as projections
    import searchtrace.analytics._shown as shown
    import searchtrace.analytics._sources as sources
    import searchtrace.analytics._views as views
    from searchtrace.analytics._agreement import COMPARED, compare_judge_runs
    from searchtrace.analytics._arms import trajectory_arms
    from searchtrace.analytics._audit import (
        agreement,
        audit_sample,
        audit_status,
        design_event,
        prepare_import,
        to_tsv,
    )
    from searchtrace.analytics._audit_plan import AGREEMENT, AuditPlan
    from searchtrace.analytics._correction import LABEL_COUNTS, MIN_LABELS, JudgedCase, correction, counted_in
    from searchtrace.analytics._custom import run_metrics
    from searchtrace.analytics._evidence import ALL_ITEM_EVIDENCE_SQL, item_evidence, rationales, scoped
    from searchtrace.analytics._html import extras_from_db, render
    from searchtrace.analytics._items import ITEMS_SQL, JudgeItem, judge_items
    from searchtrace.analytics._latency import fetch_cache_hit
    from searchtrace.analytics._metrics import (
        COMPLEMENTARITY,
        TrajectoryStats,
        answer_scores,
        answerable_cells,
        pair_cells,
        paired_qids,
        provider_metrics,
        surface_answerable,
        trajectory_stats,
    )
    from searchtrace.analytics._model import (
        OBSERVED_CELLS,
        PARTITION,
        SUPPORTED_CELLS,
        ArmMetrics,
        AuditAgreement,
        Cell,
        Complementarity,
        Denominators,
        Disagreement,
        Discordant,
        Interval,
        JudgeBatches,
        JudgeComparison,
        LabelAgreement,
        LabelTally,
        LabelValues,
        LeafTally,
        OutcomeCounts,
        Pair,
        Partition,
        ProviderComparison,
        QueryOutcome,
        Report,
        SideRates,
        Table2x2,
        Tally,
        Uncertainty,
        VerdictLabels,
        field_key,
    )
    from searchtrace.analytics._projections import catch_up, mismatched
    from searchtrace.analytics._report import (
        DEFAULT_BOOTSTRAP,
        DEFAULT_SEED,
        Built,
        build_report,
        correction_labels,
        to_json,
    )
    from searchtrace.analytics._rules import (
        ANSWERS_CTE,
        AUDIT_CTE,
        CELL_EVENT_TYPES,
        MADE_DEFAULT,
        PARTITION_CELLS,
        RUNS_SQL,
        TRAJECTORIES_CTE,
        Cells,
        JudgeChoice,
        choose_judge_run,
        decode_aliases,
        first_verdicts,
        judge_runs,
        not_superseded,
        partition_cell,
        resolve_judge_run,
        surface_support,
    )
    from searchtrace.analytics._table import CORRECTED_ROWS, REPORT_ROWS, TESTS, render_table
    from searchtrace.analytics._textnorm import alias_scores, exact_match, token_f1, tokens
    from searchtrace.analytics._uncertainty import uncertainty
    from searchtrace.analytics._views import ensure_views


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "ArmMetrics": "searchtrace.analytics._model",
    "Cell": "searchtrace.analytics._model",
    "Complementarity": "searchtrace.analytics._model",
    "Denominators": "searchtrace.analytics._model",
    "Discordant": "searchtrace.analytics._model",
    "Interval": "searchtrace.analytics._model",
    "JudgeBatches": "searchtrace.analytics._model",
    "OBSERVED_CELLS": "searchtrace.analytics._model",
    "OutcomeCounts": "searchtrace.analytics._model",
    "PARTITION": "searchtrace.analytics._model",
    "Pair": "searchtrace.analytics._model",
    "Partition": "searchtrace.analytics._model",
    "QueryOutcome": "searchtrace.analytics._model",
    "SUPPORTED_CELLS": "searchtrace.analytics._model",
    "Uncertainty": "searchtrace.analytics._model",
    "field_key": "searchtrace.analytics._model",
    "AuditAgreement": "searchtrace.analytics._model",
    "Disagreement": "searchtrace.analytics._model",
    "JudgeComparison": "searchtrace.analytics._model",
    "LabelAgreement": "searchtrace.analytics._model",
    "LabelTally": "searchtrace.analytics._model",
    "LabelValues": "searchtrace.analytics._model",
    "LeafTally": "searchtrace.analytics._model",
    "ProviderComparison": "searchtrace.analytics._model",
    "SideRates": "searchtrace.analytics._model",
    "Table2x2": "searchtrace.analytics._model",
    "Tally": "searchtrace.analytics._model",
    "VerdictLabels": "searchtrace.analytics._model",
    "COMPARED": "searchtrace.analytics._agreement",
    "compare_judge_runs": "searchtrace.analytics._agreement",
    "trajectory_arms": "searchtrace.analytics._arms",
    "agreement": "searchtrace.analytics._audit",
    "audit_sample": "searchtrace.analytics._audit",
    "audit_status": "searchtrace.analytics._audit",
    "design_event": "searchtrace.analytics._audit",
    "prepare_import": "searchtrace.analytics._audit",
    "to_tsv": "searchtrace.analytics._audit",
    "JudgedCase": "searchtrace.analytics._correction",
    "LABEL_COUNTS": "searchtrace.analytics._correction",
    "MIN_LABELS": "searchtrace.analytics._correction",
    "AGREEMENT": "searchtrace.analytics._audit_plan",
    "AuditPlan": "searchtrace.analytics._audit_plan",
    "counted_in": "searchtrace.analytics._correction",
    "correction_labels": "searchtrace.analytics._report",
    "correction": "searchtrace.analytics._correction",
    "run_metrics": "searchtrace.analytics._custom",
    "ALL_ITEM_EVIDENCE_SQL": "searchtrace.analytics._evidence",
    "item_evidence": "searchtrace.analytics._evidence",
    "rationales": "searchtrace.analytics._evidence",
    "scoped": "searchtrace.analytics._evidence",
    "extras_from_db": "searchtrace.analytics._html",
    "render": "searchtrace.analytics._html",
    "ITEMS_SQL": "searchtrace.analytics._items",
    "fetch_cache_hit": "searchtrace.analytics._latency",
    "JudgeItem": "searchtrace.analytics._items",
    "judge_items": "searchtrace.analytics._items",
    "COMPLEMENTARITY": "searchtrace.analytics._metrics",
    "TrajectoryStats": "searchtrace.analytics._metrics",
    "answerable_cells": "searchtrace.analytics._metrics",
    "pair_cells": "searchtrace.analytics._metrics",
    "paired_qids": "searchtrace.analytics._metrics",
    "surface_answerable": "searchtrace.analytics._metrics",
    "answer_scores": "searchtrace.analytics._metrics",
    "provider_metrics": "searchtrace.analytics._metrics",
    "trajectory_stats": "searchtrace.analytics._metrics",
    "catch_up": "searchtrace.analytics._projections",
    "mismatched": "searchtrace.analytics._projections",
    "Built": "searchtrace.analytics._report",
    "DEFAULT_BOOTSTRAP": "searchtrace.analytics._report",
    "DEFAULT_SEED": "searchtrace.analytics._report",
    "Report": "searchtrace.analytics._model",
    "build_report": "searchtrace.analytics._report",
    "to_json": "searchtrace.analytics._report",
    "ANSWERS_CTE": "searchtrace.analytics._rules",
    "AUDIT_CTE": "searchtrace.analytics._rules",
    "CELL_EVENT_TYPES": "searchtrace.analytics._rules",
    "Cells": "searchtrace.analytics._rules",
    "RUNS_SQL": "searchtrace.analytics._rules",
    "TRAJECTORIES_CTE": "searchtrace.analytics._rules",
    "first_verdicts": "searchtrace.analytics._rules",
    "decode_aliases": "searchtrace.analytics._rules",
    "judge_runs": "searchtrace.analytics._rules",
    "not_superseded": "searchtrace.analytics._rules",
    "PARTITION_CELLS": "searchtrace.analytics._rules",
    "partition_cell": "searchtrace.analytics._rules",
    "MADE_DEFAULT": "searchtrace.analytics._rules",
    "JudgeChoice": "searchtrace.analytics._rules",
    "choose_judge_run": "searchtrace.analytics._rules",
    "resolve_judge_run": "searchtrace.analytics._rules",
    "surface_support": "searchtrace.analytics._rules",
    "CORRECTED_ROWS": "searchtrace.analytics._table",
    "REPORT_ROWS": "searchtrace.analytics._table",
    "TESTS": "searchtrace.analytics._table",
    "render_table": "searchtrace.analytics._table",
    "exact_match": "searchtrace.analytics._textnorm",
    "alias_scores": "searchtrace.analytics._textnorm",
    "token_f1": "searchtrace.analytics._textnorm",
    "tokens": "searchtrace.analytics._textnorm",
    "uncertainty": "searchtrace.analytics._uncertainty",
    "ensure_views": "searchtrace.analytics._views",
}
# modules exported whole, as namespaces (`blobs.get(...)`)
_MODULES: dict[str, str] = {
    "html": "searchtrace.analytics._html",
    "projections": "searchtrace.analytics._projections",
    "shown": "searchtrace.analytics._shown",
    "sources": "searchtrace.analytics._sources",
    "views": "searchtrace.analytics._views",
}

__all__ = [
    "AGREEMENT",
    "ALL_ITEM_EVIDENCE_SQL",
    "ANSWERS_CTE",
    "AUDIT_CTE",
    "ArmMetrics",
    "AuditAgreement",
    "AuditPlan",
    "Built",
    "CELL_EVENT_TYPES",
    "COMPARED",
    "COMPLEMENTARITY",
    "CORRECTED_ROWS",
    "Cell",
    "Cells",
    "Complementarity",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_SEED",
    "Denominators",
    "Disagreement",
    "Discordant",
    "ITEMS_SQL",
    "Interval",
    "JudgeBatches",
    "JudgeChoice",
    "JudgeComparison",
    "JudgeItem",
    "JudgedCase",
    "LABEL_COUNTS",
    "LabelAgreement",
    "LabelTally",
    "LabelValues",
    "LeafTally",
    "MADE_DEFAULT",
    "MIN_LABELS",
    "OBSERVED_CELLS",
    "OutcomeCounts",
    "PARTITION",
    "Pair",
    "Partition",
    "ProviderComparison",
    "QueryOutcome",
    "REPORT_ROWS",
    "RUNS_SQL",
    "Report",
    "SUPPORTED_CELLS",
    "SideRates",
    "TESTS",
    "TRAJECTORIES_CTE",
    "Table2x2",
    "Tally",
    "TrajectoryStats",
    "Uncertainty",
    "VerdictLabels",
    "agreement",
    "alias_scores",
    "answer_scores",
    "provider_metrics",
    "answerable_cells",
    "audit_sample",
    "audit_status",
    "build_report",
    "catch_up",
    "choose_judge_run",
    "compare_judge_runs",
    "correction",
    "correction_labels",
    "counted_in",
    "decode_aliases",
    "design_event",
    "ensure_views",
    "exact_match",
    "extras_from_db",
    "fetch_cache_hit",
    "field_key",
    "first_verdicts",
    "html",
    "item_evidence",
    "judge_items",
    "judge_runs",
    "mismatched",
    "not_superseded",
    "pair_cells",
    "paired_qids",
    "partition_cell",
    "prepare_import",
    "projections",
    "rationales",
    "render",
    "render_table",
    "PARTITION_CELLS",
    "partition_cell",
    "resolve_judge_run",
    "run_metrics",
    "scoped",
    "shown",
    "sources",
    "surface_answerable",
    "surface_support",
    "to_json",
    "to_tsv",
    "token_f1",
    "tokens",
    "trajectory_arms",
    "trajectory_stats",
    "uncertainty",
    "views",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _MODULES)
