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
- `metrics` + `textnorm`: every §5 metric, exact integer sums; `report`: the §8 dict and its canonical JSON.
- `arms`: docs/how-to/compare.md `report --by`: the runs an axis reads, the refusals that keep runs apart, `trajectory_arms`.
- `views`: the documented `v_*` / `ev_*` views for `searchtrace sql` (VIEWS.md); `custom`: user metric files.
- `lookups`: narrow reads for the audit and the HTML page; `audit`: docs/how-to/audit.md oracle validation; `correction`:
  docs/concepts/statistics.md judge-error correction of the snippet rates by the human labels (`JudgedCase`).
- `table` (terminal form), `html` (the HTML page), `examples/` (a worked metric).
"""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
