from searchtrace.analytics import _html, _projections, _shown, _sources, _table, _views
from searchtrace.analytics._agreement import COMPARED as COMPARED
from searchtrace.analytics._agreement import compare_judge_runs as compare_judge_runs
from searchtrace.analytics._arms import trajectory_arms as trajectory_arms
from searchtrace.analytics._audit import agreement as agreement
from searchtrace.analytics._audit import audit_sample as audit_sample
from searchtrace.analytics._audit import audit_status as audit_status
from searchtrace.analytics._audit import design_event as design_event
from searchtrace.analytics._audit import prepare_import as prepare_import
from searchtrace.analytics._audit import to_tsv as to_tsv
from searchtrace.analytics._audit_plan import AGREEMENT as AGREEMENT
from searchtrace.analytics._audit_plan import AuditPlan as AuditPlan
from searchtrace.analytics._correction import LABEL_COUNTS as LABEL_COUNTS
from searchtrace.analytics._correction import MIN_LABELS as MIN_LABELS
from searchtrace.analytics._correction import JudgedCase as JudgedCase
from searchtrace.analytics._correction import correction as correction
from searchtrace.analytics._correction import counted_in as counted_in
from searchtrace.analytics._custom import run_metrics as run_metrics
from searchtrace.analytics._defaults import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
from searchtrace.analytics._defaults import DEFAULT_SEED as DEFAULT_SEED
from searchtrace.analytics._evidence import ALL_ITEM_EVIDENCE_SQL as ALL_ITEM_EVIDENCE_SQL
from searchtrace.analytics._evidence import item_evidence as item_evidence
from searchtrace.analytics._evidence import rationales as rationales
from searchtrace.analytics._evidence import scoped as scoped
from searchtrace.analytics._html import extras_from_db as extras_from_db
from searchtrace.analytics._html import render as render
from searchtrace.analytics._items import ITEMS_SQL as ITEMS_SQL
from searchtrace.analytics._items import JudgeItem as JudgeItem
from searchtrace.analytics._items import judge_items as judge_items
from searchtrace.analytics._latency import fetch_cache_hit as fetch_cache_hit
from searchtrace.analytics._metrics import COMPLEMENTARITY as COMPLEMENTARITY
from searchtrace.analytics._metrics import TrajectoryStats as TrajectoryStats
from searchtrace.analytics._metrics import answer_scores as answer_scores
from searchtrace.analytics._metrics import answerable_cells as answerable_cells
from searchtrace.analytics._metrics import pair_cells as pair_cells
from searchtrace.analytics._metrics import paired_qids as paired_qids
from searchtrace.analytics._metrics import surface_answerable as surface_answerable
from searchtrace.analytics._metrics import trajectory_stats as trajectory_stats
from searchtrace.analytics._projections import catch_up as catch_up
from searchtrace.analytics._projections import mismatched as mismatched
from searchtrace.analytics._report import Built as Built
from searchtrace.analytics._report import Report as Report
from searchtrace.analytics._report import build_report as build_report
from searchtrace.analytics._report import correction_labels as correction_labels
from searchtrace.analytics._report import to_json as to_json
from searchtrace.analytics._rules import ANSWERS_CTE as ANSWERS_CTE
from searchtrace.analytics._rules import AUDIT_CTE as AUDIT_CTE
from searchtrace.analytics._rules import CELL_EVENT_TYPES as CELL_EVENT_TYPES
from searchtrace.analytics._rules import MADE_DEFAULT as MADE_DEFAULT
from searchtrace.analytics._rules import PARTITION_CELLS as PARTITION_CELLS
from searchtrace.analytics._rules import RUNS_SQL as RUNS_SQL
from searchtrace.analytics._rules import TRAJECTORIES_CTE as TRAJECTORIES_CTE
from searchtrace.analytics._rules import Cells as Cells
from searchtrace.analytics._rules import JudgeChoice as JudgeChoice
from searchtrace.analytics._rules import choose_judge_run as choose_judge_run
from searchtrace.analytics._rules import decode_aliases as decode_aliases
from searchtrace.analytics._rules import first_verdicts as first_verdicts
from searchtrace.analytics._rules import judge_runs as judge_runs
from searchtrace.analytics._rules import not_superseded as not_superseded
from searchtrace.analytics._rules import partition_cell as partition_cell
from searchtrace.analytics._rules import resolve_judge_run as resolve_judge_run
from searchtrace.analytics._rules import surface_support as surface_support
from searchtrace.analytics._table import CORRECTED_ROWS as CORRECTED_ROWS
from searchtrace.analytics._table import TESTS as TESTS
from searchtrace.analytics._table import render_table as render_table
from searchtrace.analytics._textnorm import alias_scores as alias_scores
from searchtrace.analytics._textnorm import exact_match as exact_match
from searchtrace.analytics._textnorm import token_f1 as token_f1
from searchtrace.analytics._textnorm import tokens as tokens
from searchtrace.analytics._uncertainty import uncertainty as uncertainty
from searchtrace.analytics._views import ensure_views as ensure_views

REPORT_ROWS = _table.ROWS
html = _html
projections = _projections
shown = _shown
sources = _sources
views = _views
