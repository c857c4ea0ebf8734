"""Evidence analytics over the event log: SPEC §4 judge items, §5 metrics, §8 report (reads only `store`).

Map: `relations` (typed columns per event type) -> `projections` (`proj_*` cache tables, caught up
incrementally) and `views` (`ev_*`/`v_*` SQL views, documented in VIEWS.md); `items` (judge items, the
judge's input); `metrics` + `textnorm` (every metric, exact integer sums); `report` (the §8 dict and its
canonical JSON); `table` (terminal form); `custom` (user metric files); `examples/` (a worked metric).
"""

from analytics.html import extras_from_db, render
from analytics.items import JudgeItem, judge_items
from analytics.projections import catch_up
from analytics.report import build_report, latest_judge_run, to_json
from analytics.sample import read_questions, sample
from analytics.table import render_table
from analytics.textnorm import exact_match, token_f1, tokens
from analytics.views import ensure_views

__all__ = [
    "JudgeItem",
    "build_report",
    "catch_up",
    "ensure_views",
    "exact_match",
    "extras_from_db",
    "judge_items",
    "latest_judge_run",
    "read_questions",
    "render",
    "render_table",
    "sample",
    "to_json",
    "token_f1",
    "tokens",
]
