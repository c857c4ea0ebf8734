"""Documented SQL views over the raw events table (always current; columns documented in analytics/VIEWS.md).

`ensure_views(con)` creates them in the database (import and report do, so `searchtrace sql` can use them);
on a read-only connection it creates them as TEMP views for that connection only. Every view reads the JSON
payloads, so for heavy work prefer the typed `proj_*` tables the report keeps (same columns as `ev_*`).
"""

from __future__ import annotations

import hashlib

import duckdb

from searchtrace.analytics.items import items_sql
from searchtrace.analytics.projections import STATE_DDL
from searchtrace.analytics.relations import RELATIONS
from searchtrace.analytics.shared_sql import answers_cte, audit_cte, superseded_ids, trajectories_cte

EV = "ev_"
VIEWS_STATE = "__views"  # the projection_state row that records which version of the views is installed


def _user_views() -> dict[str, str]:
    p = EV
    with_tr = f"WITH {trajectories_cte(p)}"
    return {
        "v_trajectories": f"""{with_tr}, {audit_cte(p)}, {answers_cte(p)},
fin AS (SELECT stream_id, arg_max(reason, position) AS finish_reason, arg_max(iterations, position) AS iterations
        FROM {p}finishes GROUP BY stream_id),
sc AS (SELECT stream_id, count(*) AS n_searches FROM {p}search_calls GROUP BY stream_id),
fc AS (SELECT stream_id, count(*) AS n_fetches FROM {p}fetch_calls GROUP BY stream_id),
mu AS (SELECT stream_id, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
              sum(reasoning_tokens) AS reasoning_tokens FROM {p}model_responses GROUP BY stream_id)
SELECT tr.trajectory_id, tr.stream_id, tr.provider, tr.qid, tr.attempt, tr.supersedes, tr.question, tr.gold_answer,
       fa.final_answer, tr.epoch,
       fin.finish_reason, fin.iterations, coalesce(sc.n_searches, 0) AS n_searches, coalesce(fc.n_fetches, 0) AS n_fetches,
       coalesce(mu.input_tokens, 0) AS input_tokens, coalesce(mu.output_tokens, 0) AS output_tokens,
       coalesce(mu.reasoning_tokens, 0) AS reasoning_tokens, aud.semantic_match, aud.audit_source,
       tr.position AS started_position
FROM tr LEFT JOIN fa USING (stream_id) LEFT JOIN fin USING (stream_id) LEFT JOIN sc USING (stream_id)
LEFT JOIN fc USING (stream_id) LEFT JOIN mu USING (stream_id) LEFT JOIN aud USING (stream_id)""",
        "v_search_results": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, r.stream_id, r.call_id, r.doc_id, r.rank, r.title, r.url,
       r.url_normalized, r.domain, r.snippet, r.metadata, r.position
FROM {p}search_results r JOIN tr USING (stream_id)""",
        "v_searches": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, c.stream_id, c.call_id, c.iteration, c.query, d.status, d.n_results,
       d.latency_ms, c.position
FROM {p}search_calls c JOIN tr USING (stream_id)
LEFT JOIN {p}search_completions d ON d.stream_id = c.stream_id AND d.call_id = c.call_id""",
        "v_fetches": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, f.stream_id, f.call_id, f.iteration, f.doc_id, f.url, d.status,
       d.content_digest, d.n_bytes, d.n_tokens, d.cache_hit, d.latency_ms, f.position
FROM {p}fetch_calls f JOIN tr USING (stream_id)
LEFT JOIN {p}fetch_completions d ON d.stream_id = f.stream_id AND d.call_id = f.call_id AND d.doc_id = f.doc_id""",
        "v_judge_items": f"SELECT * FROM ({items_sql(p)})",
        "v_judge_runs": f"""SELECT judge_run_id, model, prompt_version, prompt_sha256, schema_version, position
FROM {p}judge_runs""",
        "v_verdicts": f"""{with_tr}
SELECT v.judge_run_id, v.trajectory_id, tr.provider, tr.qid, v.url_normalized, v.surface, v.valid,
       v.snippet_supports_gold, v.snippet_contradicts_gold, v.snippet_relevant, v.has_page,
       v.page_supports_gold, v.page_contradicts_gold, v.page_relevant, v.supports_final_answer, v.invalid_reason,
       v.input_tokens, v.output_tokens, v.latency_ms, v.position
FROM {p}verdicts v LEFT JOIN tr ON tr.trajectory_id = v.trajectory_id
WHERE v.trajectory_id NOT IN ({superseded_ids(p)})""",
        "v_usage": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, m.stream_id, m.iteration, m.input_tokens, m.output_tokens,
       m.reasoning_tokens, m.cached_tokens, m.latency_ms, m.finish_reason, m.position
FROM {p}model_responses m JOIN tr USING (stream_id)""",
        "v_answers": f"""{with_tr}, {audit_cte(p)}, {answers_cte(p)}
SELECT tr.trajectory_id, tr.provider, tr.qid, tr.gold_answer, fa.final_answer, aud.semantic_match, aud.audit_source
FROM tr LEFT JOIN fa USING (stream_id) LEFT JOIN aud USING (stream_id)""",
        "v_audits": f"""SELECT trajectory_id, provider, qid, semantic_match, source, position FROM {p}audits""",
    }


USER_VIEWS: tuple[str, ...] = tuple(_user_views())


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()
    return bool(row and row[0])


def views_version() -> str:
    """Digest of every view's SQL: views of another version are replaced."""
    text = "\n".join([rel.select_sql() for rel in RELATIONS] + [f"{k}:{v}" for k, v in _user_views().items()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _current(con: duckdb.DuckDBPyConnection) -> bool:
    if not _exists(con, "projection_state") or not all(_exists(con, v) for v in USER_VIEWS):
        return False
    row = con.execute(
        "SELECT arg_max(version, n) FROM projection_state WHERE name = ?", [VIEWS_STATE]
    ).fetchone()
    return bool(row and row[0] == views_version())


def ensure_views(con: duckdb.DuckDBPyConnection, *, temp: bool = False) -> None:
    """Create (or refresh) the `ev_*` and `v_*` views; `temp=True` on a read-only connection."""
    if temp and all(_exists(con, v) for v in USER_VIEWS):
        return
    if not temp and _current(con):
        return
    kind = "TEMP VIEW" if temp else "VIEW"
    if not temp:
        con.execute("BEGIN")
    try:
        for rel in RELATIONS:
            con.execute(f"CREATE OR REPLACE {kind} {EV}{rel.name} AS {rel.select_sql()}")
        for name, sql in _user_views().items():
            con.execute(f"CREATE OR REPLACE {kind} {name} AS {sql}")
        if not temp:
            con.execute(STATE_DDL)
            n = con.execute("SELECT coalesce(max(n), 0) + 1 FROM projection_state").fetchone()
            con.execute(
                "INSERT INTO projection_state VALUES (?, ?, 0, ?)", [VIEWS_STATE, views_version(), n[0] if n else 1]
            )
            con.execute("COMMIT")
    except BaseException:
        if not temp:
            con.execute("ROLLBACK")
        raise
