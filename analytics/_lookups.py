"""Narrow lookups for the audit and the HTML plots: the judge run to use, providers, verdicts, the current human
label per audit case, two aggregates.

Works on an EventLog or any DuckDB connection to the store, read-only included, whether the data was recorded
live or imported. Current trajectories and the HTML aggregates are SQL over the typed relations (the `proj`
tables when current, else views over the raw events: analytics._sources) with the rules of analytics._rules;
judge items (docs/concepts/judge.md) are not derived here: the audit reads them from `analytics.judge_items`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

import searchtrace.analytics._rules as rules
import searchtrace.analytics._sources as sources
from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import AuditLabel, BadInput, Cursor, JudgeVerdict, decode_payload


class HasCursor(Protocol):
    def cursor(self) -> Cursor: ...


CaseKey = tuple[str, str, str, str, str]  # judge_run_id, trajectory_id, url_normalized, surface, label


def label_key(a: AuditLabel) -> CaseKey:
    return (a.judge_run_id, a.item.trajectory_id, a.item.url_normalized, a.surface, a.label)


def current_labels(source: HasCursor, judge_run_id: str | None = None) -> dict[CaseKey, list[AuditLabel]]:
    """Every audit.label per case in append order (the last one is the human's current answer)."""
    cur = source.cursor()
    cur.execute(
        "SELECT payload FROM events WHERE type = 'audit.label' "
        f"AND (? IS NULL OR json_extract_string(payload, '$.judge_run_id') = ?) ORDER BY {rules.RECORDED_ORDER}",
        [judge_run_id, judge_run_id],
    )
    out: dict[CaseKey, list[AuditLabel]] = {}
    for (payload,) in cur.fetchall():
        a = decode_payload(payload)
        assert isinstance(a, AuditLabel)
        out.setdefault(label_key(a), []).append(a)
    cur.close()
    return out


def judge_run(source: HasCursor, judge_run_id: str | None) -> str:
    """The given judge run when the store has it, else the default one (analytics._rules); BadInput when none."""
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False):
            run, _ = rules.resolve_judge_run(cur, judge_run_id)
    finally:
        cur.close()
    if run is None:
        raise BadInput("no judge run with a valid verdict in this database; run `searchtrace judge` or import judgments first")
    return run


def known_judge_runs(source: HasCursor) -> set[str]:
    """The judge runs the report knows (a judge.started or a verdict names them)."""
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False):
            return {r.judge_run_id for r in rules.judge_runs(cur)}
    finally:
        cur.close()


def _per_trajectory(source: HasCursor, column: str) -> dict[str, str]:
    """trajectory_id -> `column` of every current trajectory (no superseded attempt)."""
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False):
            rows = cur.execute(f"WITH {TRAJECTORIES_CTE} SELECT trajectory_id, {column} FROM tr").fetchall()
    finally:
        cur.close()
    return {str(t): str(v) for t, v in rows}


def providers(source: HasCursor) -> dict[str, str]:
    """trajectory_id -> provider of every current trajectory (no superseded attempt)."""
    return _per_trajectory(source, "provider")


def trajectory_qids(source: HasCursor) -> dict[str, str]:
    """trajectory_id -> qid of every current trajectory (an audit plan clusters its cases by question)."""
    return _per_trajectory(source, "qid")


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


# -- set-based aggregates for the HTML page (SQL over the typed relations) ------------------------------------


def gold_rank_hist(
    source: HasCursor, judge_run_id: str | None, runs: Sequence[str] | None = None, by: str = "provider"
) -> dict[str, dict[int, int]]:
    """{arm: {rank: appearances}} over search.result appearances whose item's snippet supports gold (arms: the
    providers, or the axis `by` of docs/how-to/compare.md)."""
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False), rules.only_runs(cur, runs), rules.arm_variable(cur, by):
            return _gold_rank_hist(cur, judge_run_id)
    finally:
        cur.close()


def _gold_rank_hist(cur: Cursor, judge_run_id: str | None) -> dict[str, dict[int, int]]:
    with_tr = f"WITH {TRAJECTORIES_CTE}"
    providers = [r[0] for r in cur.execute(f"{with_tr} SELECT DISTINCT arm FROM tr").fetchall()]
    out: dict[str, dict[int, int]] = {p: {} for p in sorted(providers)}
    if judge_run_id is None:
        return out
    rows = cur.execute(
        f"""{with_tr},
v AS (
  SELECT trajectory_id, url_normalized, arg_min(coalesce(valid AND snippet_supports_gold, false), position) AS s
  FROM verdicts WHERE judge_run_id = ? GROUP BY 1, 2
)
SELECT tr.arm, r.rank, count(*) FROM search_results r
JOIN tr USING (stream_id)
JOIN v ON v.trajectory_id = tr.trajectory_id AND v.url_normalized = r.url_normalized
WHERE v.s GROUP BY 1, 2 ORDER BY 1, 2
""",
        [judge_run_id],
    ).fetchall()
    for provider, rank, n in rows:
        out.setdefault(provider, {})[int(rank)] = int(n)
    return out


PER_TRAJECTORY_SQL = f"""
WITH {TRAJECTORIES_CTE},
sc AS (SELECT stream_id, count(*) AS searches FROM search_calls GROUP BY stream_id),
fc AS (SELECT stream_id, count(*) AS fetches FROM fetch_calls GROUP BY stream_id),
mu AS (SELECT stream_id, coalesce(sum(input_tokens), 0) AS mi, coalesce(sum(output_tokens), 0) AS mo
       FROM model_responses GROUP BY stream_id),
fin AS (  -- the usage totals of trajectory.finished are not a relation column
  SELECT stream_id, max(CAST(j[1] AS BIGINT)) AS fi, max(CAST(j[2] AS BIGINT)) AS fo
  FROM (SELECT stream_id, json_extract_string(payload, ['$.usage.input_tokens', '$.usage.output_tokens']) AS j
        FROM events WHERE type = 'trajectory.finished')
  GROUP BY stream_id
)
SELECT tr.arm, tr.trajectory_id, coalesce(searches, 0), coalesce(fetches, 0),
       CASE WHEN coalesce(mi, 0) + coalesce(mo, 0) > 0 OR fi IS NULL THEN coalesce(mi, 0) ELSE fi END,
       CASE WHEN coalesce(mi, 0) + coalesce(mo, 0) > 0 OR fi IS NULL THEN coalesce(mo, 0) ELSE fo END
FROM tr LEFT JOIN sc USING (stream_id) LEFT JOIN fc USING (stream_id) LEFT JOIN mu USING (stream_id)
LEFT JOIN fin USING (stream_id) ORDER BY tr.arm, tr.trajectory_id
"""


def per_trajectory(
    source: HasCursor, runs: Sequence[str] | None = None, by: str = "provider"
) -> dict[str, list[dict[str, Any]]]:
    """{arm: [{trajectory_id, searches, fetches, input_tokens, output_tokens}]} ordered by trajectory id (arms: the
    providers, or the axis `by` of docs/how-to/compare.md).

    Tokens are the sum over model responses, or the trajectory.finished totals when it has no response usage.
    """
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False), rules.only_runs(cur, runs), rules.arm_variable(cur, by):
            rows = cur.execute(PER_TRAJECTORY_SQL).fetchall()
    finally:
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
