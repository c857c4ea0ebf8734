"""Narrow reads of the events for the audit and the HTML plots: judge runs, providers, verdicts, two aggregates.

Reads only the events table (through an EventLog or any DuckDB connection to the store), so it works
whether the data was recorded live or imported, and does not depend on the typed projections. Judge items
(SPEC §4) are not derived here: the audit reads them from `analytics.items.judge_items`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

import duckdb

from store.errors import BadInput
from store.events import JudgeVerdict, decode_payload


class HasCursor(Protocol):
    def cursor(self) -> duckdb.DuckDBPyConnection: ...


# One row per current trajectory stream: a trajectory that a later attempt of its cell supersedes (it ended in
# `error` and `record` recorded the cell again) is left out, as in analytics.shared_sql.trajectories_cte.
_TRAJ = """
WITH ts AS (
  SELECT stream_id, position, j[1] AS trajectory_id, j[2] AS provider, j[3] AS supersedes
  FROM (SELECT stream_id, position, json_extract_string(payload, ['$.trajectory_id', '$.provider', '$.supersedes']) AS j
        FROM events WHERE type = 'trajectory.started')
)
SELECT stream_id, arg_min(trajectory_id, position) AS trajectory_id, arg_min(provider, position) AS provider
FROM ts t WHERE NOT EXISTS (SELECT 1 FROM ts sup WHERE sup.supersedes = t.trajectory_id AND sup.position > t.position)
GROUP BY stream_id
"""


def latest_judge_run(source: HasCursor) -> str:
    """The judge run of the last judge.started (as the report picks it), else of the last verdict; BadInput when none."""
    row = (
        source.cursor()
        .execute(
            "SELECT json_extract_string(payload, '$.judge_run_id') FROM events "
            "WHERE type IN ('judge.started', 'judge.verdict') "
            "ORDER BY (type = 'judge.started') DESC, position DESC LIMIT 1"
        )
        .fetchone()
    )
    if row is None or row[0] is None:
        raise BadInput("no judge run in this database; run `searchtrace judge` or import judgments first")
    return str(row[0])


def providers(source: HasCursor) -> dict[str, str]:
    """trajectory_id -> provider, from the trajectory.started events alone."""
    cur = source.cursor()
    rows = cur.execute(f"SELECT trajectory_id, provider FROM ({_TRAJ})").fetchall()
    cur.close()
    return {str(t): str(p) for t, p in rows}


def verdicts(
    source: HasCursor, judge_run_id: str, only: Collection[str] | None = None
) -> dict[tuple[str, str], JudgeVerdict]:
    """The first verdict per item of one judge run (only verdict events are decoded); of `only`'s trajectories when
    given (an audit TSV names a few, not millions)."""
    cur = source.cursor()
    where = ""
    params: list[object] = [judge_run_id]
    if only is not None:
        where = " AND json_extract_string(payload, '$.item.trajectory_id') IN (SELECT unnest(?::VARCHAR[]))"
        params.append(sorted(set(only)))
    cur.execute(
        "SELECT payload FROM events WHERE type = 'judge.verdict' "
        f"AND json_extract_string(payload, '$.judge_run_id') = ?{where} ORDER BY position",
        params,
    )
    out: dict[tuple[str, str], JudgeVerdict] = {}
    while rows := cur.fetchmany(10_000):
        for (payload,) in rows:
            v = decode_payload(payload)
            assert isinstance(v, JudgeVerdict)
            out.setdefault((v.item.trajectory_id, v.item.url_normalized), v)
    cur.close()
    return out


# -- set-based aggregates for the HTML page (SQL, so they stay fast at millions of events) -----------------


def gold_rank_hist(source: HasCursor, judge_run_id: str | None) -> dict[str, dict[int, int]]:
    """{provider: {rank: appearances}} over search.result appearances whose item's snippet supports gold."""
    cur = source.cursor()
    providers = [r[0] for r in cur.execute(f"SELECT DISTINCT provider FROM ({_TRAJ})").fetchall()]
    out: dict[str, dict[int, int]] = {p: {} for p in sorted(providers)}
    if judge_run_id is None:
        cur.close()
        return out
    rows = cur.execute(
        f"""
WITH tr AS ({_TRAJ}),
v AS (
  SELECT j[1] AS trajectory_id, j[2] AS url_normalized,
         arg_min(coalesce(j[3] = 'true' AND j[4] = 'true', false), position) AS s
  FROM (SELECT position, json_extract_string(payload,
          ['$.item.trajectory_id', '$.item.url_normalized', '$.valid', '$.labels.snippet.supports_gold']) AS j
        FROM events WHERE type = 'judge.verdict' AND json_extract_string(payload, '$.judge_run_id') = ?)
  GROUP BY 1, 2
),
res AS (
  SELECT stream_id, j[1] AS url_normalized, CAST(j[2] AS INTEGER) AS rank
  FROM (SELECT stream_id, json_extract_string(payload, ['$.url_normalized', '$.rank']) AS j
        FROM events WHERE type = 'search.result')
)
SELECT tr.provider, res.rank, count(*) FROM res
JOIN tr USING (stream_id)
JOIN v ON v.trajectory_id = tr.trajectory_id AND v.url_normalized = res.url_normalized
WHERE v.s GROUP BY 1, 2 ORDER BY 1, 2
""",
        [judge_run_id],
    ).fetchall()
    cur.close()
    for provider, rank, n in rows:
        out.setdefault(provider, {})[int(rank)] = int(n)
    return out


def per_trajectory(source: HasCursor) -> dict[str, list[dict[str, Any]]]:
    """{provider: [{trajectory_id, searches, fetches, input_tokens, output_tokens}]} ordered by trajectory id.

    Tokens are the sum over model responses, or the trajectory.finished totals when it has no response usage.
    """
    cur = source.cursor()
    rows = cur.execute(
        f"""
WITH tr AS ({_TRAJ}),
ev AS (
  SELECT stream_id, type, j[1] AS i, j[2] AS o
  FROM (SELECT stream_id, type, json_extract_string(payload, ['$.usage.input_tokens', '$.usage.output_tokens']) AS j
        FROM events WHERE type IN ('search.called', 'fetch.called', 'model.responded', 'trajectory.finished'))
),
agg AS (
  SELECT stream_id,
         count(*) FILTER (WHERE type = 'search.called') AS searches,
         count(*) FILTER (WHERE type = 'fetch.called') AS fetches,
         coalesce(sum(CAST(i AS BIGINT)) FILTER (WHERE type = 'model.responded'), 0) AS mi,
         coalesce(sum(CAST(o AS BIGINT)) FILTER (WHERE type = 'model.responded'), 0) AS mo,
         max(CAST(i AS BIGINT)) FILTER (WHERE type = 'trajectory.finished') AS fi,
         max(CAST(o AS BIGINT)) FILTER (WHERE type = 'trajectory.finished') AS fo
  FROM ev GROUP BY stream_id
)
SELECT tr.provider, tr.trajectory_id, coalesce(searches, 0), coalesce(fetches, 0),
       CASE WHEN coalesce(mi, 0) + coalesce(mo, 0) > 0 OR fi IS NULL THEN coalesce(mi, 0) ELSE fi END,
       CASE WHEN coalesce(mi, 0) + coalesce(mo, 0) > 0 OR fi IS NULL THEN coalesce(mo, 0) ELSE fo END
FROM tr LEFT JOIN agg USING (stream_id) ORDER BY tr.provider, tr.trajectory_id
"""
    ).fetchall()
    cur.close()
    out: dict[str, list[dict[str, Any]]] = {}
    for provider, tid, searches, fetches, inp, outp in rows:
        out.setdefault(provider, []).append(
            {
                "trajectory_id": tid,
                "searches": int(searches),
                "fetches": int(fetches),
                "input_tokens": int(inp),
                "output_tokens": int(outp),
            }  # fmt: skip
        )
    return out
