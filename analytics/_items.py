"""Judge items of docs/concepts/judge.md: one per distinct normalised URL per trajectory, with its surface and fetch state.

docs/concepts/shown.md: the items are the URLs a model request was shown (analytics._shown) or the agent fetched; an item is
`snippet_shown` when any of its appearances was shown (a URL fetched and never shown has no snippet verdict).
An item's surface is its first shown `search.result` (lowest position) in the trajectory's stream, else its first;
every appearance stays counted (`n_appearances`, `n_rank1`). A `fetch.called` names a doc_id; it belongs to the item of the
latest earlier result in the same stream with that doc_id (doc_ids are unique within a trajectory, so this is
simply "the result it named"). The item is `fetched` when any fetch.called belongs to it, whatever its status
(a refused tool call is a `tool.refused` event, not a fetch), and `page_visible` when at least one of those
calls completed with status `ok`; `page_digest` is the content blob of the first such `ok` fetch.

`judge_items(con, ...)` is what the judge runs over; the same SQL (ITEMS_SQL) feeds the metrics and `v_judge_items`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

import searchtrace.analytics._sources as sources
from searchtrace.analytics._rules import ANSWERS_CTE, TRAJECTORIES_CTE, decode_aliases
from searchtrace.analytics._shown import SHOWN_CTE
from searchtrace.store import Cursor

SNIPPET_OBSERVED_SQL = "(r.surface IS NULL OR json_contains(r.surface, '\"snippet\"'))"
"""docs/how-to/hosted.md: the caller received the item's snippet (a result without `surface` came from a search API with one); an
item without is UNOBSERVED: it has no snippet verdict, which is unobservable, not false."""

ITEMS_SQL = f"""
WITH {TRAJECTORIES_CTE}, {SHOWN_CTE},
firsts AS (
  SELECT r.stream_id, r.url_normalized,
         coalesce(min(r.position) FILTER (WHERE sh.shown), min(r.position)) AS first_position,
         count(*) AS n_appearances, count(*) FILTER (WHERE r.rank = 1) AS n_rank1, bool_or(sh.shown) AS snippet_shown
  FROM search_results r JOIN sh ON sh.position = r.position GROUP BY r.stream_id, r.url_normalized
),
fx AS (
  SELECT f.stream_id, f.position AS fetch_position, f.call_id, f.doc_id, a.url_normalized
  FROM fetch_calls f
  JOIN search_results a ON a.stream_id = f.stream_id AND a.doc_id = f.doc_id AND a.position < f.position
  QUALIFY row_number() OVER (PARTITION BY f.stream_id, f.position ORDER BY a.position DESC) = 1
),
fc AS (
  SELECT stream_id, call_id, doc_id, arg_min(status, position) AS status,
         arg_min(content_digest, position) AS content_digest
  FROM fetch_completions GROUP BY stream_id, call_id, doc_id
),
fi AS (
  SELECT fx.stream_id, fx.url_normalized, count(*) AS n_fetches,
         count(*) FILTER (WHERE fc.status = 'ok') AS n_fetches_ok,
         arg_min(fc.content_digest, fx.fetch_position) FILTER (WHERE fc.status = 'ok') AS page_digest
  FROM fx LEFT JOIN fc ON fc.stream_id = fx.stream_id AND fc.call_id = fx.call_id AND fc.doc_id = fx.doc_id
  GROUP BY fx.stream_id, fx.url_normalized
)
SELECT tr.trajectory_id, tr.provider, tr.qid, tr.epoch, s.stream_id, s.url_normalized, s.first_position,
       r.call_id, r.doc_id, r.rank, r.title, r.url, r.domain, r.snippet, r.metadata,
       s.n_appearances, s.n_rank1, s.snippet_shown, r.surface, r.model_saw_more,
       {SNIPPET_OBSERVED_SQL} AS snippet_observed,
       coalesce(fi.n_fetches, 0) AS n_fetches,
       coalesce(fi.n_fetches, 0) > 0 AS fetched,
       coalesce(fi.n_fetches_ok, 0) > 0 AS page_visible,
       fi.page_digest, tr.run_id, tr.model, tr.prompt_sha256
FROM firsts s
JOIN search_results r ON r.stream_id = s.stream_id AND r.position = s.first_position
JOIN tr ON tr.stream_id = s.stream_id
LEFT JOIN fi ON fi.stream_id = s.stream_id AND fi.url_normalized = s.url_normalized
WHERE s.snippet_shown OR fi.n_fetches > 0
"""
"""SELECT of every judge item over the typed relations (whichever schema the search_path names)."""


class JudgeItem(msgspec.Struct, kw_only=True, frozen=True):
    """Everything the judge needs for one item (render with engine.document_block; page from the blob)."""

    trajectory_id: str
    provider: str
    qid: str
    question: str
    gold_answer: str
    final_answer: str | None
    url_normalized: str
    doc_id: str
    rank: int
    title: str
    url: str
    domain: str
    snippet: str
    metadata: dict[str, Any]
    call_id: str
    n_appearances: int
    fetched: bool
    page_visible: bool
    page_digest: str | None  # content blob of the first ok fetch; `log.get_blob(digest)` gives the page
    epoch: int = 1  # docs/concepts/statistics.md: the epoch of the item's trajectory
    snippet_shown: bool = True  # docs/concepts/shown.md: a model request showed it (False: fetched only; no snippet verdict)
    gold_aliases: list[str] = []  # docs/how-to/compare.md: every accepted answer when the dataset gave several (else empty)
    surface: list[str] | None = None  # docs/how-to/hosted.md: the fields the caller received (None: url, title, snippet)
    snippet_observed: bool = True  # docs/how-to/hosted.md: False: no snippet reached the caller, so no snippet verdict


def judge_items(
    con: Cursor,
    *,
    trajectory_ids: Sequence[str] | None = None,
    without_verdict_in: str | None = None,
    use_projections: bool = False,
) -> list[JudgeItem]:
    """Every judge item in first-appearance order; `without_verdict_in=RUN` keeps those RUN has no verdict for (resume).

    `con` is a connection or a `log.cursor()` of its own. By default it reads the views over the raw events
    (analytics._sources: no write, safe while another thread appends); `use_projections=True` catches up and reads the
    typed projections instead (faster at large volume; needs a writable database).
    """
    where: list[str] = []
    params: list[object] = []
    if trajectory_ids is not None:
        where.append("i.trajectory_id IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(trajectory_ids))
    if without_verdict_in is not None:
        where.append(
            "NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.judge_run_id = ? AND v.trajectory_id = i.trajectory_id "
            "AND v.url_normalized = i.url_normalized)"
        )
        params.append(without_verdict_in)
    sql = f"""
WITH {TRAJECTORIES_CTE}, {ANSWERS_CTE}, i AS ({ITEMS_SQL})
SELECT i.trajectory_id, i.provider, i.qid, tr.question, tr.gold_answer, fa.final_answer,
       i.url_normalized, i.doc_id, i.rank, i.title, i.url, i.domain, i.snippet,
       i.metadata, i.call_id, i.n_appearances, i.fetched, i.page_visible, i.page_digest, i.epoch, i.snippet_shown,
       tr.gold_aliases, i.surface, i.snippet_observed
FROM i JOIN tr ON tr.stream_id = i.stream_id
LEFT JOIN fa ON fa.stream_id = i.stream_id
{"WHERE " + " AND ".join(where) if where else ""}
ORDER BY i.first_position
"""
    with sources.reading(con, writable=True) if use_projections else sources.reading_raw(con):
        cur = con.execute(sql, params)
        names = [d[0] for d in cur.description or ()]
        rows = cur.fetchall()
    out: list[JudgeItem] = []
    for row in rows:
        rec = dict(zip(names, row, strict=True))
        rec["metadata"] = msgspec.json.decode(rec["metadata"]) if rec["metadata"] else {}
        rec["gold_aliases"] = decode_aliases(rec["gold_aliases"])
        rec["surface"] = msgspec.json.decode(rec["surface"]) if rec["surface"] else None
        out.append(JudgeItem(**rec))
    return out
