"""Evidence analytics over the event log: SPEC §4 judge items, §5 metrics, §8 report (reads only `store`).

Where things are:
- `relations`: the typed relations, one per event type (`trajectories`, `verdicts`, ...): named once, as SQL.
- `sources`: where those names resolve, chosen with DuckDB's search_path: the `proj` tables, or views over
  the raw events (an in-memory catalog, so read-only stores work too).
- `projections`: the `proj` tables, caught up incrementally (caches, never a source of truth).
- `rules`: the domain rules every reader shares, in SQL and in Python (latest attempt, final answer, deciding
  audit, default judge run).
- `items`: SPEC §4 judge items (the judge's input; ITEMS_SQL also feeds metrics and `v_judge_items`).
- `metrics` + `textnorm`: every §5 metric, exact integer sums; `report`: the §8 dict and its canonical JSON.
- `views`: the documented `v_*` / `ev_*` views for `searchtrace sql` (VIEWS.md); `custom`: user metric files.
- `lookups`: narrow reads for the audit and the HTML page; `audit`: SPEC §7 oracle validation.
- `table` (terminal form), `html` (the HTML page), `examples/` (a worked metric).
"""

from searchtrace.analytics.html import extras_from_db, render
from searchtrace.analytics.items import JudgeItem, judge_items
from searchtrace.analytics.projections import catch_up
from searchtrace.analytics.report import build_report, to_json
from searchtrace.analytics.rules import resolve_judge_run
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
    "render",
    "render_table",
    "resolve_judge_run",
    "to_json",
    "token_f1",
    "tokens",
]
