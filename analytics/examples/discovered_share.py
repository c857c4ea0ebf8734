"""Share of fetched items whose page showed gold support the snippet did not (discovered support), per provider.

Use: `searchtrace report --metric analytics/examples/discovered_share.py`. It reads only the documented views
(analytics/VIEWS.md): `v_judge_items` (one row per item, with `fetched`) and `v_verdicts` (the judge's labels).
Denominator: fetched items with a valid verdict in the report's judge run; null when a provider has none.
"""

from __future__ import annotations

from typing import Any


def metric(con: Any, judge_run_id: str | None) -> dict[str, float | None]:
    rows = con.execute(
        """
        SELECT i.provider,
               count(*) FILTER (WHERE v.valid AND i.fetched) AS fetched,
               count(*) FILTER (WHERE v.valid AND i.fetched AND NOT v.snippet_supports_gold
                                AND coalesce(v.page_supports_gold, false)) AS discovered
        FROM v_judge_items i
        LEFT JOIN (SELECT * FROM v_verdicts WHERE judge_run_id = ?
                   QUALIFY row_number() OVER (PARTITION BY trajectory_id, url_normalized ORDER BY position) = 1) v
          ON v.trajectory_id = i.trajectory_id AND v.url_normalized = i.url_normalized
        GROUP BY i.provider ORDER BY i.provider
        """,
        [judge_run_id],
    ).fetchall()
    return {provider: (discovered / fetched if fetched else None) for provider, fetched, discovered in rows}
