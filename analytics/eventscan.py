"""One pass over the events for the audit and the HTML plots: trajectories, judge items (SPEC §4) and verdicts.

Reads only the events table (through an EventLog or any DuckDB connection to the store), so it works
whether the data was recorded live or imported, and does not depend on the typed projections.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import duckdb

from store.errors import BadInput
from store.events import (
    DatasetQuestion,
    FetchCalled,
    FetchCompleted,
    JudgeVerdict,
    ModelResponded,
    Payload,
    SearchCalled,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
    decode_payload,
)


class HasCursor(Protocol):
    def cursor(self) -> duckdb.DuckDBPyConnection: ...


@dataclass
class Item:
    """One distinct normalised URL within one trajectory; its surface is the first appearance."""

    trajectory_id: str
    url_normalized: str
    url: str
    title: str
    domain: str
    snippet: str
    rank: int
    ranks: list[int] = field(default_factory=list)
    fetched: bool = False
    page_digest: str | None = None

    @property
    def page_visible(self) -> bool:
        return self.page_digest is not None


@dataclass
class Trajectory:
    trajectory_id: str
    provider: str
    qid: str
    question: str
    gold_answer: str
    items: dict[str, Item] = field(default_factory=dict)
    searches: int = 0
    fetches: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    finished_usage: tuple[int, int] | None = None
    _docs: dict[str, str] = field(default_factory=dict)  # doc_id -> url_normalized
    _fetch_docs: dict[str, str] = field(default_factory=dict)  # fetch call_id -> url_normalized

    @property
    def tokens(self) -> tuple[int, int]:
        """(input, output) tokens: the sum over model responses, else the finished totals."""
        if (self.input_tokens or self.output_tokens) or self.finished_usage is None:
            return self.input_tokens, self.output_tokens
        return self.finished_usage


@dataclass
class Scan:
    judge_run_id: str | None
    trajectories: dict[str, Trajectory]
    verdicts: dict[tuple[str, str], JudgeVerdict]  # first verdict per item in the judge run

    def item(self, trajectory_id: str, url_normalized: str) -> Item | None:
        traj = self.trajectories.get(trajectory_id)
        return traj.items.get(url_normalized) if traj else None


_TYPES = [
    "dataset.question",
    "trajectory.started",
    "model.responded",
    "search.called",
    "search.result",
    "fetch.called",
    "fetch.completed",
    "trajectory.finished",
    "judge.verdict",
]


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


def _events(
    source: HasCursor, judge_run_id: str | None, trajectories: Collection[str] | None
) -> Iterator[tuple[str, Payload]]:
    """The events a scan needs, in order; only those of `trajectories` (and their verdicts) when given."""
    cur = source.cursor()
    where = "type IN (SELECT unnest(?::VARCHAR[])) AND (type <> 'judge.verdict' OR json_extract_string(payload, '$.judge_run_id') = ?)"
    params: list[object] = [_TYPES, judge_run_id or ""]
    if trajectories is not None:
        tids = sorted(set(trajectories))
        where += (
            " AND (type = 'dataset.question'"
            " OR (type = 'judge.verdict' AND json_extract_string(payload, '$.item.trajectory_id') IN (SELECT unnest(?::VARCHAR[])))"
            f" OR stream_id IN (SELECT stream_id FROM ({_TRAJ}) WHERE trajectory_id IN (SELECT unnest(?::VARCHAR[]))))"
        )
        params += [tids, tids]
    cur.execute(f"SELECT stream_id, payload FROM events WHERE {where} ORDER BY position", params)
    while rows := cur.fetchmany(10_000):
        for stream_id, payload in rows:
            yield stream_id, decode_payload(payload)
    cur.close()


def providers(source: HasCursor) -> dict[str, str]:
    """trajectory_id -> provider, from the trajectory.started events alone."""
    cur = source.cursor()
    rows = cur.execute(f"SELECT trajectory_id, provider FROM ({_TRAJ})").fetchall()
    cur.close()
    return {str(t): str(p) for t, p in rows}


def verdicts(source: HasCursor, judge_run_id: str) -> dict[tuple[str, str], JudgeVerdict]:
    """The first verdict per item of one judge run (only verdict events are decoded)."""
    cur = source.cursor()
    cur.execute(
        "SELECT payload FROM events WHERE type = 'judge.verdict' "
        "AND json_extract_string(payload, '$.judge_run_id') = ? ORDER BY position",
        [judge_run_id],
    )
    out: dict[tuple[str, str], JudgeVerdict] = {}
    while rows := cur.fetchmany(10_000):
        for (payload,) in rows:
            v = decode_payload(payload)
            assert isinstance(v, JudgeVerdict)
            out.setdefault((v.item.trajectory_id, v.item.url_normalized), v)
    cur.close()
    return out


def scan(source: HasCursor, judge_run_id: str | None, only: Collection[str] | None = None) -> Scan:
    """Current trajectories (no superseded attempt) with their judge items, counts and tokens, plus the verdicts of
    one judge run.

    With `only` (trajectory ids), only those (and their verdicts) are read: the audit needs a few, not millions.
    """
    superseded: set[str] = set()
    by_stream: dict[str, Trajectory] = {}
    questions: dict[str, DatasetQuestion] = {}
    trajectories: dict[str, Trajectory] = {}
    verdicts: dict[tuple[str, str], JudgeVerdict] = {}
    for stream_id, p in _events(source, judge_run_id, only):
        if isinstance(p, JudgeVerdict):
            verdicts.setdefault((p.item.trajectory_id, p.item.url_normalized), p)
            continue
        if isinstance(p, DatasetQuestion):
            questions.setdefault(p.qid, p)
            continue
        if isinstance(p, TrajectoryStarted):
            q = questions.get(p.qid)
            t = Trajectory(
                trajectory_id=p.trajectory_id,
                provider=p.provider,
                qid=p.qid,
                question=p.question or (q.question if q else ""),
                gold_answer=p.gold_answer or (q.gold_answer if q else ""),
            )
            by_stream[stream_id] = trajectories[p.trajectory_id] = t
            if p.supersedes is not None and p.supersedes in trajectories:
                superseded.add(p.supersedes)
            continue
        traj = by_stream.get(stream_id)
        if traj is not None:
            _apply(traj, p)
    current = {tid: t for tid, t in trajectories.items() if tid not in superseded}
    return Scan(judge_run_id=judge_run_id, trajectories=current, verdicts=verdicts)


def _apply(t: Trajectory, p: Any) -> None:
    if isinstance(p, SearchResult):
        t._docs[p.doc_id] = p.url_normalized  # a fetch names the latest earlier result with that doc_id
        item = t.items.get(p.url_normalized)
        if item is None:
            item = t.items[p.url_normalized] = Item(
                trajectory_id=t.trajectory_id,
                url_normalized=p.url_normalized,
                url=p.url,
                title=p.title,
                domain=p.domain,
                snippet=p.snippet,
                rank=p.rank,
            )
        item.ranks.append(p.rank)
    elif isinstance(p, SearchCalled):
        t.searches += 1
    elif isinstance(p, FetchCalled):
        t.fetches += 1
        url_n = t._docs.get(p.doc_id)
        if url_n is not None:
            t._fetch_docs[p.call_id] = url_n
            t.items[url_n].fetched = True
    elif isinstance(p, FetchCompleted):
        url_n = t._fetch_docs.get(p.call_id) or t._docs.get(p.doc_id)
        if p.status == "ok" and url_n is not None and t.items[url_n].page_digest is None:
            t.items[url_n].page_digest = p.content_digest or ""
    elif isinstance(p, ModelResponded):
        t.input_tokens += p.usage.input_tokens
        t.output_tokens += p.usage.output_tokens
    elif isinstance(p, TrajectoryFinished):
        t.finished_usage = (p.usage.input_tokens, p.usage.output_tokens)


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
