"""The documented SQL views `v_*` over the raw events (always current; columns documented in analytics/VIEWS.md).

`ensure_views(con)` installs them in the database (import and report do, so `searchtrace sql` can use them): the
raw relation views and the `v_*` definitions in schema `ev` (bare relation names resolve there), and under the
documented flat names in `main` one-line aliases: `ev_<relation>` and `v_<name>`. On a read-only connection
(`temp=True`) the same objects go into the in-memory catalog of analytics._sources, and the connection's
search_path points at its `main`. For heavy work prefer the `proj` tables the report keeps (same columns).
"""

from __future__ import annotations

import hashlib

import searchtrace.analytics._shown as shown
from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._projections import PROJ, STATE_DDL, catch_up_shown
from searchtrace.analytics._relations import RELATIONS
from searchtrace.analytics._rules import (
    ANSWERS_CTE,
    AUDIT_CTE,
    SUPERSEDED_IDS,
    TRAJECTORIES_CTE,
    surface_chars_sql,
)
from searchtrace.analytics._shown import SHOWN_CTE
from searchtrace.analytics._sources import EV, LOCK, MEMORY, memory_catalog, relation_views
from searchtrace.store import Cursor

VIEWS_STATE = "__views"  # the projection_state row that records which version of the views is installed


def _user_views() -> dict[str, str]:
    with_tr = f"WITH {TRAJECTORIES_CTE}"
    return {
        "v_trajectories": f"""{with_tr}, {AUDIT_CTE}, {ANSWERS_CTE},
fin AS (SELECT stream_id, arg_max(reason, position) AS finish_reason, arg_max(iterations, position) AS iterations
        FROM finishes GROUP BY stream_id),
sc AS (SELECT stream_id, count(*) AS n_searches FROM search_calls GROUP BY stream_id),
fc AS (SELECT stream_id, count(*) AS n_fetches FROM fetch_calls GROUP BY stream_id),
mu AS (SELECT stream_id, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
              sum(reasoning_tokens) AS reasoning_tokens FROM model_responses GROUP BY stream_id)
SELECT tr.trajectory_id, tr.stream_id, tr.provider, tr.qid, tr.attempt, tr.supersedes, tr.question, tr.gold_answer,
       fa.final_answer, tr.epoch,
       fin.finish_reason, fin.iterations, coalesce(sc.n_searches, 0) AS n_searches, coalesce(fc.n_fetches, 0) AS n_fetches,
       coalesce(mu.input_tokens, 0) AS input_tokens, coalesce(mu.output_tokens, 0) AS output_tokens,
       coalesce(mu.reasoning_tokens, 0) AS reasoning_tokens, aud.semantic_match, aud.audit_source,
       tr.position AS started_position, tr.run_id, tr.model, tr.prompt_sha256
FROM tr LEFT JOIN fa USING (stream_id) LEFT JOIN fin USING (stream_id) LEFT JOIN sc USING (stream_id)
LEFT JOIN fc USING (stream_id) LEFT JOIN mu USING (stream_id) LEFT JOIN aud USING (stream_id)""",
        "v_search_results": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, r.stream_id, r.call_id, r.doc_id, r.rank, r.title, r.url,
       r.url_normalized, r.domain, r.snippet, r.metadata, r.position, {surface_chars_sql("r")} AS surface_chars
FROM search_results r JOIN tr USING (stream_id)""",
        "v_searches": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, c.stream_id, c.call_id, c.iteration, c.query, d.status, d.n_results,
       d.latency_ms, c.position
FROM search_calls c JOIN tr USING (stream_id)
LEFT JOIN search_completions d ON d.stream_id = c.stream_id AND d.call_id = c.call_id""",
        "v_fetches": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, f.stream_id, f.call_id, f.iteration, f.doc_id, f.url, d.status,
       d.content_digest, d.n_bytes, d.n_tokens, d.cache_hit, d.latency_ms, f.position
FROM fetch_calls f JOIN tr USING (stream_id)
LEFT JOIN fetch_completions d ON d.stream_id = f.stream_id AND d.call_id = f.call_id AND d.doc_id = f.doc_id""",
        "v_shown": f"""{with_tr}, {SHOWN_CTE}
SELECT tr.trajectory_id, tr.provider, tr.qid, r.stream_id, r.call_id, r.doc_id, r.rank, r.title, r.url,
       r.url_normalized, r.position, sh.shown, sh.shown_position, sh.shown_by
FROM search_results r JOIN tr USING (stream_id) JOIN sh ON sh.position = r.position""",
        "v_judge_items": f"SELECT * FROM ({ITEMS_SQL})",
        "v_judge_runs": """SELECT judge_run_id, model, prompt_version, prompt_sha256, schema_version, position
FROM judge_runs""",
        "v_verdicts": f"""{with_tr}
SELECT v.judge_run_id, v.trajectory_id, tr.provider, tr.qid, v.url_normalized, v.surface, v.valid,
       v.snippet_supports_gold, v.snippet_contradicts_gold, v.snippet_relevant, v.has_page,
       v.page_supports_gold, v.page_contradicts_gold, v.page_relevant, v.supports_final_answer, v.invalid_reason,
       v.input_tokens, v.cached_tokens, v.output_tokens, v.latency_ms, v.position,
       tr.epoch, tr.run_id, tr.model, tr.prompt_sha256
FROM verdicts v LEFT JOIN tr ON tr.trajectory_id = v.trajectory_id
WHERE v.trajectory_id NOT IN ({SUPERSEDED_IDS})""",
        "v_usage": f"""{with_tr}
SELECT tr.trajectory_id, tr.provider, tr.qid, m.stream_id, m.iteration, m.input_tokens, m.output_tokens,
       m.reasoning_tokens, m.cached_tokens, m.latency_ms, m.finish_reason, m.position
FROM model_responses m JOIN tr USING (stream_id)""",
        "v_answers": f"""{with_tr}, {AUDIT_CTE}, {ANSWERS_CTE}
SELECT tr.trajectory_id, tr.provider, tr.qid, tr.gold_answer, fa.final_answer, aud.semantic_match, aud.audit_source
FROM tr LEFT JOIN fa USING (stream_id) LEFT JOIN aud USING (stream_id)""",
        "v_audits": """SELECT trajectory_id, provider, qid, epoch, semantic_match, source, position FROM audits""",
    }


USER_VIEWS: tuple[str, ...] = tuple(_user_views())


def view_sql(name: str) -> str:
    """The SELECT of view `name` over bare relation names: a reader that chose the relations' schema
    (analytics._sources) runs it over the projections when they are current."""
    return _user_views()[name]


def _exists(con: Cursor, catalog: str, name: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name = 'main' AND view_name = ?",
        [catalog, name],
    ).fetchone()
    return bool(row and row[0])


def views_version() -> str:
    """Digest of every view's SQL: views of another version are replaced."""
    text = "\n".join([rel.select_sql() for rel in RELATIONS] + [f"{k}:{v}" for k, v in _user_views().items()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _database(con: Cursor) -> str:
    row = con.execute("SELECT current_database()").fetchone()
    return str(row[0]) if row else ""


def _current(con: Cursor) -> bool:
    db = _database(con)
    state = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = ? AND table_schema = 'main' "
        "AND table_name = 'projection_state'",
        [db],
    ).fetchone()
    if not (state and state[0]) or not all(_exists(con, db, v) for v in USER_VIEWS):
        return False
    row = con.execute(
        "SELECT arg_max(version, n) FROM main.projection_state WHERE name = ?", [VIEWS_STATE]
    ).fetchone()
    return bool(row and row[0] == _stamp(con, db))


def _stamp(con: Cursor, db: str) -> str:
    """The views' version and a digest of their SQL as stored: a view replaced by hand no longer matches."""
    rows = con.execute(
        "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal "
        "AND schema_name IN ('main', ?) ORDER BY 1, 2", [db, EV]
    ).fetchall()
    return f"{views_version()}:{hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}"


def _install(con: Cursor, catalog: str) -> None:
    """Relation views and `v_*` definitions in `catalog`.ev, flat aliases `ev_*` / `v_*` in `catalog`.main (the
    in-memory catalog has its relation views already: `memory_catalog` made them, of this same version)."""
    if catalog != MEMORY:  # there `shown` is a table of its own (analytics._shown); here the database's cache
        relation_views(con, f"{catalog}.{EV}", replace=True)
        con.execute(f"CREATE OR REPLACE VIEW {catalog}.{EV}.{shown.TABLE} AS SELECT * FROM {catalog}.{PROJ}.{shown.TABLE}")
    for name, sql in _user_views().items():
        con.execute(f"CREATE OR REPLACE VIEW {catalog}.{EV}.{name} AS {sql}")
    for rel in RELATIONS:
        con.execute(f"CREATE OR REPLACE VIEW {catalog}.main.ev_{rel.name} AS SELECT * FROM {catalog}.{EV}.{rel.name}")
    for name in USER_VIEWS:
        con.execute(f"CREATE OR REPLACE VIEW {catalog}.main.{name} AS SELECT * FROM {catalog}.{EV}.{name}")


def ensure_views(con: Cursor, *, temp: bool = False) -> None:
    """Install (or refresh) the `ev_*` and `v_*` views; `temp=True` on a read-only connection (see the docstring)."""
    if temp:
        with LOCK:
            catalog = memory_catalog(con)
            if not all(_exists(con, catalog, v) for v in USER_VIEWS):
                _install(con, catalog)
        con.execute(f"SET search_path = '{catalog}.main,main'")
        return
    catch_up_shown(con, PROJ)  # what `ev.shown` reads
    if _current(con):
        return
    con.execute("BEGIN")
    try:
        _install(con, f'"{_database(con)}"')
        con.execute(STATE_DDL)
        n = con.execute("SELECT coalesce(max(n), 0) + 1 FROM main.projection_state").fetchone()
        con.execute(
            "INSERT INTO main.projection_state VALUES (?, ?, 0, ?)",
            [VIEWS_STATE, _stamp(con, _database(con)), n[0] if n else 1],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
