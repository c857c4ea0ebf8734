"""Evidence analytics over the event log: SPEC §4 judge items, §5 metrics, §8 report (reads only `store`).

Map: `relations` (typed columns per event type) -> `projections` (`proj_*` cache tables, caught up
incrementally) and `views` (`ev_*`/`v_*` SQL views, documented in VIEWS.md); `items` (judge items, the
judge's input); `metrics` + `textnorm` (every metric, exact integer sums); `report` (the §8 dict and its
canonical JSON); `table` (terminal form); `custom` (user metric files); `examples/` (a worked metric).
"""
