"""Backfill metrics per arm (docs/how-to/hosted.md), from the chosen judge run's `judge.backfill` events.

`judge --backfill-pages` fetches the page of each item whose text the caller never received and judges it as
surface `backfill`. These figures say what evidence stood behind the URLs an arm gave its caller; they are reported
apart and never enter the partition or any rate of what the caller saw. Per arm, over its current trajectories:

- `backfill_items`: items backfilled (one per item: its first `judge.backfill` in the judge run);
- `backfill_judged`: of them, with a valid verdict on the fetched page;
- `backfill_supports_gold`: judged items whose fetched page supports the gold answer / `backfill_judged`, with
  `_count` and `_ci` (the proportion interval clustered by question).

The keys are added (to every arm) only when the judge run backfilled some item, so a store without backfill
reports as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction

from searchtrace.analytics._model import ArmMetrics
from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import Cursor

BACKFILL_SQL = f"""
WITH {TRAJECTORIES_CTE},
b AS (
  SELECT json_extract_string(payload, '$.item.trajectory_id') AS trajectory_id,
         json_extract_string(payload, '$.item.url_normalized') AS url_normalized,
         CAST(json_extract(payload, '$.valid') AS BOOLEAN) AS valid,
         coalesce(CAST(json_extract(payload, '$.labels.page.supports_gold') AS BOOLEAN), false) AS supports_gold
  FROM events WHERE type = 'judge.backfill' AND json_extract_string(payload, '$.judge_run_id') = $run
  QUALIFY row_number() OVER (PARTITION BY trajectory_id, url_normalized ORDER BY position) = 1)
SELECT tr.arm, tr.qid, b.valid, b.supports_gold FROM tr JOIN b ON b.trajectory_id = tr.trajectory_id
ORDER BY tr.position
"""
"""Per backfilled item of a current trajectory: its arm, question, whether its verdict is valid and whether the
fetched page supports gold."""


def backfill_metrics(con: Cursor, judge_run_id: str | None, blocks: Mapping[str, ArmMetrics]) -> None:
    """Each block's backfill keys, and their denominator in `denominators`, when the judge run backfilled some
    item (run inside analytics._sources.reading): an arm it backfilled nothing of has 0 items and null shares."""
    if judge_run_id is None:
        return
    rows = con.execute(BACKFILL_SQL, {"run": judge_run_id}).fetchall()
    if not rows:
        return
    from searchtrace.analytics._uncertainty import proportion_interval

    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_q: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for arm, qid, valid, supports in rows:
        c = counts[arm]
        c["items"] += 1
        if valid:
            c["judged"] += 1
            c["supports"] += bool(supports)
            cell = per_q[arm][qid]
            cell[0] += bool(supports)
            cell[1] += 1
    for arm, block in blocks.items():
        block.denominators.backfill_supports_gold = "backfill_judged"
        c = counts.get(arm, {})
        cells = list(per_q[arm].values()) if arm in per_q else []
        interval, _ = proportion_interval([y for y, _ in cells], [m for _, m in cells]) if cells else (None, None)
        block.backfill_items, block.backfill_judged = c.get("items", 0), c.get("judged", 0)
        block.backfill_supports_gold = (float(Fraction(c["supports"], c["judged"])) if c.get("judged") else None)
        block.backfill_supports_gold_count = c.get("supports", 0)
        block.backfill_supports_gold_ci = None if interval is None else list(interval)
