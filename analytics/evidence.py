"""Per-item evidence for the explorer: each judge item of a trajectory with the verdict it counts with and its cell.

The cell is `rules.partition_cell`, the same expression the metrics count, and the verdict `rules.first_verdicts`,
the one the metrics use; run inside `analytics.sources.reading` (relations by their bare names).
"""

from __future__ import annotations

from typing import Any

import duckdb

from searchtrace.analytics.items import ITEMS_SQL
from searchtrace.analytics.rules import first_verdicts, partition_cell

ITEM_EVIDENCE_SQL = f"""
WITH it AS (SELECT * FROM ({ITEMS_SQL}) WHERE stream_id = $stream),
v AS ({first_verdicts("$run")})
SELECT it.url_normalized, it.first_position, it.rank, it.title, it.url, it.domain, it.n_appearances, it.n_fetches,
       it.fetched, it.page_visible, it.page_digest, v.valid, v.surface, v.invalid_reason,
       v.snippet_supports_gold, v.snippet_contradicts_gold, v.snippet_relevant, v.has_page,
       v.page_supports_gold, v.page_contradicts_gold, v.page_relevant, v.supports_final_answer,
       v.position AS verdict_position,
       CASE WHEN v.valid THEN {partition_cell("coalesce(v.snippet_supports_gold, false)", "it.fetched")} END AS part,
       coalesce(v.valid AND it.fetched AND NOT v.snippet_supports_gold AND v.page_supports_gold, false) AS discovered
FROM it LEFT JOIN v ON v.trajectory_id = it.trajectory_id AND v.url_normalized = it.url_normalized
ORDER BY it.first_position
"""
"""Every item of trajectory stream `$stream` with its verdict in judge run `$run`; `part` NULL unless valid."""


def rationales(con: duckdb.DuckDBPyConnection, positions: list[int]) -> dict[int, str | None]:
    """The judge's rationale of each verdict event (by position; the typed relation does not carry free text)."""
    if not positions:
        return {}
    rows = con.execute(
        "SELECT position, json_extract_string(payload, '$.labels.rationale') FROM events "
        "WHERE position IN (SELECT unnest(?::BIGINT[]))",
        [positions],
    ).fetchall()
    return {int(pos): text for pos, text in rows}


def item_evidence(con: duckdb.DuckDBPyConnection, stream_id: str, judge_run_id: str | None) -> list[dict[str, Any]]:
    """Rows of ITEM_EVIDENCE_SQL as dicts, each with its verdict's rationale."""
    cur = con.execute(ITEM_EVIDENCE_SQL, {"stream": stream_id, "run": judge_run_id})
    names = [d[0] for d in cur.description or []]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    why = rationales(con, [r["verdict_position"] for r in rows if r["verdict_position"] is not None])
    for r in rows:
        r["rationale"] = why.get(r["verdict_position"]) if r["verdict_position"] is not None else None
    return rows
