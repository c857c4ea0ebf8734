"""Evidence analytics over the event log: SPEC §4 judge items, §5 metrics, §8 report (reads only `store`).

Map: `relations` (typed columns per event type) -> `projections` (`proj_*` cache tables, caught up
incrementally) and `views` (`ev_*`/`v_*` SQL views, documented in VIEWS.md); `items` (judge items, the
judge's input); `metrics` + `textnorm` (every metric, exact integer sums); `report` (the §8 dict and its
canonical JSON); `table` (terminal form); `custom` (user metric files); `examples/` (a worked metric).
"""

from searchtrace.analytics.html import extras_from_db, render
from searchtrace.analytics.items import JudgeItem, judge_items
from searchtrace.analytics.projections import catch_up
from searchtrace.analytics.report import build_report, latest_judge_run, to_json
from searchtrace.analytics.table import render_table
from searchtrace.analytics.textnorm import exact_match, token_f1, tokens
from searchtrace.analytics.views import ensure_views

__all__ = [
    "JudgeItem",
    "build_report",
    "catch_up",
    "ensure_views",
    "exact_match",
    "extras_from_db",
    "judge_items",
    "latest_judge_run",
    "render",
    "render_table",
    "to_json",
    "token_f1",
    "tokens",
]
