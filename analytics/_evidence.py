"""Per-item evidence for the explorer: each judge item of a trajectory with the verdict it counts with and its cell.

The items are `items.ITEMS_SQL`, the cell `rules.partition_cell` (the expression the metrics count), the verdict
`rules.first_verdicts` (the one the metrics use); `scoped` narrows the relations to the trajectories asked for,
so one trajectory of millions of events reads only its own rows.
"""

from __future__ import annotations

from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._model import ItemEvidence
from searchtrace.analytics._rules import first_verdicts, partition_cell, surface_support
from searchtrace.store import Cursor, trajectory_stream

PER_STREAM = ("search_results", "search_calls", "search_completions", "fetch_calls", "fetch_completions",
              "model_responses", "answers", "finishes")


def scoped(schema: str, streams: str, trajectory_ids: str) -> str:
    """CTEs that narrow the relations in `schema` to some trajectories (SQL list expressions of their stream ids and
    trajectory ids), under the relations' own names, so the shared SQL reads only their rows. Exact for those
    trajectories: `trajectories` keeps every row that supersedes another (the latest-attempt rule looks at them) and
    the other epochs of their cells (the audit rule of analytics._rules, AUDIT_CTE, counts a cell's epochs)."""
    parts = [f"{r} AS (SELECT * FROM {schema}.{r} WHERE stream_id IN ({streams}))" for r in PER_STREAM]
    parts.append(f"trajectories AS (SELECT * FROM {schema}.trajectories t "
                 f"WHERE stream_id IN ({streams}) OR supersedes IS NOT NULL OR EXISTS (SELECT 1 FROM "
                 f"{schema}.trajectories c WHERE c.stream_id IN ({streams}) AND c.run_id = t.run_id "
                 "AND c.provider = t.provider AND c.qid = t.qid))")
    parts.append(f"verdicts AS (SELECT * FROM {schema}.verdicts WHERE trajectory_id IN ({trajectory_ids}))")
    return ",\n".join(parts)


_EVIDENCE = f"""
it AS ({ITEMS_SQL}),
v AS ({first_verdicts("$run")})
SELECT it.stream_id, it.trajectory_id, it.url_normalized, it.first_position, it.rank, it.title, it.url, it.domain,
       it.n_appearances, it.n_rank1, it.snippet_shown, it.n_fetches, it.fetched, it.page_visible, it.page_digest, v.valid, v.surface, v.invalid_reason,
       v.snippet_supports_gold, v.snippet_contradicts_gold, v.snippet_relevant, v.has_page,
       v.page_supports_gold, v.page_contradicts_gold, v.page_relevant, v.supports_final_answer,
       v.position AS verdict_position,
       CASE WHEN v.valid THEN {partition_cell(surface_support("v", "it"), "it.fetched", "it.snippet_observed")} END AS part,
       coalesce(v.valid AND it.fetched AND NOT {surface_support("v", "it")} AND v.page_supports_gold, false) AS discovered
FROM it LEFT JOIN v ON v.trajectory_id = it.trajectory_id AND v.url_normalized = it.url_normalized
ORDER BY it.first_position
"""

ALL_ITEM_EVIDENCE_SQL = f"WITH {_EVIDENCE}"
"""Every item of every current trajectory with its verdict in judge run `$run` (the rows of `item_evidence_sql`
over the whole store: the explorer's `/api/items` lists what each report count counts)."""


def item_evidence_sql(schema: str) -> str:
    """Every item of the trajectories `$streams` / `$tids` with its verdict in judge run `$run`; `part` NULL unless
    the verdict is valid."""
    return f"""
WITH {scoped(schema, "SELECT unnest($streams::VARCHAR[])", "SELECT unnest($tids::VARCHAR[])")},{_EVIDENCE}"""


def rationales(con: Cursor, positions: list[int]) -> dict[int, str | None]:
    """The judge's rationale of each verdict event (by position; the typed relation does not carry free text)."""
    if not positions:
        return {}
    rows = con.execute(
        "SELECT position, json_extract_string(payload, '$.labels.rationale') FROM events "
        "WHERE position IN (SELECT unnest(?::BIGINT[]))",
        [positions],
    ).fetchall()
    return {int(pos): text for pos, text in rows}


def item_evidence(
    con: Cursor, schema: str, trajectory_ids: list[str], judge_run_id: str | None
) -> list[ItemEvidence]:
    """Rows of `item_evidence_sql` for some trajectories (in `analytics._sources.reading`, which names `schema`),
    each with its verdict's rationale."""
    streams = [trajectory_stream(t) for t in trajectory_ids]
    cur = con.execute(item_evidence_sql(schema), {"streams": streams, "tids": trajectory_ids, "run": judge_run_id})
    names = [d[0] for d in cur.description or []]
    rows = [ItemEvidence(**dict(zip(names, r, strict=True))) for r in cur.fetchall()]
    why = rationales(con, [r.verdict_position for r in rows if r.verdict_position is not None])
    for r in rows:
        r.rationale = why.get(r.verdict_position) if r.verdict_position is not None else None
    return rows
