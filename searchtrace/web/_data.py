"""The explorer's JSON API (SPEC §16) as plain functions of a cursor: every figure comes from the analytics layer.

Trajectory lists read `metrics.trajectory_stats` (the per-trajectory integers the report averages), items and
their partition cell `analytics._evidence`, the report `analytics.build_report`; the timeline is the
trajectory's own events in order. Nothing here re-derives a metric.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, defaultdict
from typing import Any

import msgspec

from searchtrace.analytics import (
    ANSWERS_CTE,
    AUDIT_CTE,
    RUNS_SQL,
    TRAJECTORIES_CTE,
    Report,
    build_report,
    compare_judge_runs,
    exact_match,
    first_verdicts,
    item_evidence,
    judge_runs,
    rationales,
    resolve_judge_run,
    scoped,
    sources,
    token_f1,
    trajectory_stats,
)
from searchtrace.engine import Fetch, fold
from searchtrace.pipeline import query
from searchtrace.store import TIMEOUT_S, BadInput, Cursor, blobs, decode_payload, trajectory_stream

PAGE_CHARS = 200_000  # a fetched page beyond this is cut in the view (the blob keeps every byte)
SQL_ROWS = 1_000
COMPARE_ROWS = 500
LIST_MAX = 500

Row = dict[str, Any]


class NotFound(Exception):
    """The id names nothing in the store (HTTP 404)."""


def reading(cur: Cursor) -> contextlib.AbstractContextManager[str]:
    """The typed relations by their bare names: the report's projections when current, else views over the events."""
    return sources.reading(cur, writable=False)


def head(cur: Cursor) -> int:
    row = cur.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
    return int(row[0]) if row else 0


def _rows(cur: Cursor, sql: str, params: Any = None) -> list[Row]:
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def runs(cur: Cursor) -> list[Row]:
    """Every run id with its event, trajectory and verdict counts, newest first."""
    return _rows(
        cur,
        "SELECT run_id, count(*) AS events, count(*) FILTER (WHERE type = 'trajectory.started') AS trajectories, "
        "count(*) FILTER (WHERE type = 'judge.verdict') AS verdicts, min(position) AS first_position, "
        "max(position) AS last_position, CAST(min(recorded_at) AS VARCHAR) AS started_at, "
        "CAST(max(recorded_at) AS VARCHAR) AS last_at FROM events GROUP BY run_id ORDER BY min(position) DESC",
    )


def judge_run_list(cur: Cursor) -> list[Row]:
    """Judge runs, newest first, with model and verdict counts; `default` marks the report's default."""
    with reading(cur):
        runs = judge_runs(cur)
        default, _ = resolve_judge_run(cur, None)
        stats = {r["judge_run_id"]: r for r in _rows(
            cur, "SELECT judge_run_id, count(*) AS verdicts, count(*) FILTER (WHERE NOT valid) AS invalid "
                 "FROM verdicts GROUP BY judge_run_id")}
        models = {r["judge_run_id"]: r for r in _rows(
            cur, "SELECT judge_run_id, arg_max(model, position) AS model, arg_max(prompt_version, position) "
                 "AS prompt_version FROM judge_runs GROUP BY judge_run_id")}
    out = []
    for jr in sorted(runs, key=lambda r: r.latest, reverse=True):
        st, m = stats.get(jr.judge_run_id, {}), models.get(jr.judge_run_id, {})
        out.append({"judge_run_id": jr.judge_run_id, "model": m.get("model"), "prompt_version": m.get("prompt_version"),
                    "verdicts": st.get("verdicts", 0), "valid": jr.valid_verdicts, "invalid": st.get("invalid", 0),
                    "default": jr.judge_run_id == default})
    return out


def resolve(cur: Cursor, judge_run_id: str | None) -> str | None:
    """The judge run asked for (BadInput when unknown), else the report's default."""
    with reading(cur):
        return resolve_judge_run(cur, judge_run_id or None)[0]


class TrajectoryIndex:
    """Every current trajectory's list row for one judge run, and the judge run a request means, both kept until
    the log's head moves (a store of millions of events is not aggregated again for each page)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, str | None] | None = None
        self._rows: list[Row] = []
        self.facets: Row = facets([])
        self._runs: dict[tuple[int, str | None], str | None] = {}

    def resolve(self, cur: Cursor, judge_run_id: str | None) -> str | None:
        """`resolve` for the current head (BadInput for an unknown run is never kept)."""
        key = (head(cur), judge_run_id or None)
        with self._lock:
            if key in self._runs:
                return self._runs[key]
        run = resolve(cur, judge_run_id)
        with self._lock:
            self._runs = {k: v for k, v in self._runs.items() if k[0] == key[0]}
            self._runs[key] = run
        return run

    def rows(self, cur: Cursor, judge_run_id: str | None) -> list[Row]:
        key = (head(cur), judge_run_id)
        with self._lock:
            if self._key == key:
                return self._rows
        rows = self._build(cur, judge_run_id)
        choices = facets(rows)
        with self._lock:
            self._key, self._rows, self.facets = key, rows, choices
        return rows

    @staticmethod
    def _build(cur: Cursor, judge_run_id: str | None) -> list[Row]:
        with reading(cur):
            meta = {r["stream_id"]: r for r in _rows(cur, f"""WITH {TRAJECTORIES_CTE},
fin AS (SELECT stream_id, arg_max(reason, position) AS finish_reason FROM finishes GROUP BY stream_id)
SELECT tr.stream_id, tr.question, tr.position, e.run_id, fin.finish_reason
FROM tr JOIN events e ON e.position = tr.position LEFT JOIN fin ON fin.stream_id = tr.stream_id""")}
            stats = trajectory_stats(cur, judge_run_id)
        out: list[Row] = []
        for s in stats:
            m = meta.get(s.stream_id, {})
            out.append({
                "trajectory_id": s.trajectory_id, "provider": s.provider, "qid": s.qid,
                "question": m.get("question", ""), "run_id": m.get("run_id"), "epoch": s.epoch,
                "position": m.get("position", 0), "finish_reason": m.get("finish_reason"),
                "final_answer": s.final_answer, "gold_answer": s.gold_answer, "correct": s.semantic_match,
                "searches": s.searches, "fetches": s.fetches, "input_tokens": s.input_tokens,
                "output_tokens": s.output_tokens, "items": s.items, "valid_items": s.valid,
                "partition": {"SMART": s.smart, "MISSED": s.missed, "BLIND": s.blind, "NO-OP": s.noop},
            })
        out.sort(key=lambda r: r["position"], reverse=True)
        return out


class Filters(msgspec.Struct, kw_only=True):
    run: str | None = None
    provider: str | None = None
    epoch: int | None = None
    correct: str | None = None  # true / false / unaudited
    partition: str | None = None  # a cell: trajectories with at least one item in it
    q: str | None = None
    limit: int = 50
    offset: int = 0


def _keep(r: Row, f: Filters, q: str | None) -> bool:
    if f.run and r["run_id"] != f.run or f.provider and r["provider"] != f.provider:
        return False
    if f.epoch is not None and r["epoch"] != f.epoch:
        return False
    if f.correct:
        state = "unaudited" if r["correct"] is None else str(bool(r["correct"])).lower()
        if state != f.correct:
            return False
    if f.partition and not r["partition"].get(f.partition):
        return False
    if q:
        text = " ".join(str(r[k] or "") for k in ("question", "qid", "trajectory_id", "final_answer")).lower()
        return q in text
    return True


def list_trajectories(rows: list[Row], f: Filters, choices: Row) -> Row:
    """One page of matching rows (newest first), their `total`, and counts over all matches for the filter bar."""
    if f.limit < 1 or f.limit > LIST_MAX or f.offset < 0:
        raise BadInput(f"limit must be 1..{LIST_MAX} and offset >= 0")
    _check_filters(f, choices)
    q = (f.q or "").strip().lower() or None
    filtered = any((f.run, f.provider, f.epoch is not None, f.correct, f.partition, q))
    hits = [r for r in rows if _keep(r, f, q)] if filtered else rows
    parts = dict.fromkeys(_PARTITIONS, 0)
    correct: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    for r in hits:
        for k, v in r["partition"].items():
            parts[k] += v
        correct["unaudited" if r["correct"] is None else "true" if r["correct"] else "false"] += 1
        providers[r["provider"]] += 1
    return {
        "total": len(hits),
        "offset": f.offset,
        "limit": f.limit,
        "trajectories": hits[f.offset : f.offset + f.limit],
        "counts": {
            "providers": dict(providers),
            "correct": dict(correct),
            "partition": parts,
        },
        "facets": choices,
    }


_CORRECT = ("true", "false", "unaudited")
_PARTITIONS = ("SMART", "MISSED", "BLIND", "NO-OP")


def _check_filters(f: Filters, choices: Row) -> None:
    """A filter value that names nothing (`correct=maybe`, a run the store does not hold) is a 400 naming the
    choices, not an empty list that looks like an answer."""
    def one_of(name: str, value: object, known: list[Any] | tuple[Any, ...]) -> None:
        if value is not None and value not in known:
            shown = ", ".join(str(k) for k in known[:20]) + (", …" if len(known) > 20 else "")
            raise BadInput(f"{name}={str(value)[:80]!r} is not one of: {shown or 'none in this store'}")

    one_of("correct", f.correct, _CORRECT)
    one_of("partition", f.partition, _PARTITIONS)
    one_of("run", f.run, choices["runs"])
    one_of("provider", f.provider, choices["providers"])
    one_of("epoch", f.epoch, choices["epochs"])


def facets(rows: list[Row]) -> Row:
    """The filter bar's choices over every row."""
    return {"providers": sorted({r["provider"] for r in rows}), "runs": sorted({r["run_id"] for r in rows if r["run_id"]}),
            "epochs": sorted({r["epoch"] for r in rows})}


def _answer_row(cur: Cursor, schema: str, trajectory_id: str) -> Row:
    stream = trajectory_stream(trajectory_id)
    found = _rows(
        cur,
        f"""WITH {scoped(schema, "SELECT $stream", "SELECT $tid")}, {TRAJECTORIES_CTE}, {AUDIT_CTE}, {ANSWERS_CTE}
SELECT tr.question, tr.gold_answer, fa.final_answer, aud.semantic_match, aud.audit_source
FROM tr LEFT JOIN aud USING (stream_id) LEFT JOIN fa USING (stream_id) WHERE tr.stream_id = $stream""",
        {"stream": stream, "tid": trajectory_id},
    )
    return found[0] if found else {}


def _pages(cur: Cursor, digests: list[str]) -> dict[str, Row]:
    """Fetched pages by digest as text (cut at PAGE_CHARS for the view; the blob keeps every byte)."""
    found = blobs.get_many(cur, digests)
    out: dict[str, Row] = {}
    for d in digests:
        raw = found.get(d)
        text = None if raw is None else raw.decode("utf-8", errors="replace")
        out[d] = {"text": None if text is None else text[:PAGE_CHARS], "n_bytes": 0 if raw is None else len(raw),
                  "truncated": text is not None and len(text) > PAGE_CHARS}
    return out


def trajectory(cur: Cursor, trajectory_id: str, run: str | None) -> Row:
    """The trajectory's events in order (the timeline), its items with verdicts, fetched pages, answer and audit."""
    stream = trajectory_stream(trajectory_id)
    events = _rows(
        cur,
        "SELECT position, stream_seq, type, run_id, CAST(recorded_at AS VARCHAR) AS recorded_at, payload FROM events "
        "WHERE stream_id = ? ORDER BY position",
        [stream],
    )
    if not events:
        raise NotFound(f"trajectory {trajectory_id!r} is not in the store")
    # the timeline shows each payload as recorded (its JSON); what the page needs besides comes from the fold
    steps = [{**{k: v for k, v in e.items() if k != "payload"}, "payload": msgspec.json.decode(e["payload"])} for e in events]
    f = fold(decode_payload(e["payload"]) for e in events)
    started = f.started
    with reading(cur) as schema:
        items = item_evidence(cur, schema, [trajectory_id], run)
        ans = _answer_row(cur, schema, trajectory_id)
    pages = _pages(cur, [g.completed.content_digest for g in f.steps
                         if isinstance(g, Fetch) and g.completed is not None and g.completed.content_digest])
    final = ans.get("final_answer")
    gold = ans.get("gold_answer") or (started.gold_answer if started else "") or ""
    parts = Counter(i["part"] for i in items if i["part"])
    return {
        "trajectory_id": trajectory_id,
        "provider": started.provider if started else None,
        "qid": started.qid if started else None,
        "question": ans.get("question") or (started.question if started else "") or "",
        "run_id": events[0]["run_id"],
        "judge_run_id": run,
        "current": bool(ans),
        "steps": steps,
        "items": items,
        "partition": {k: parts.get(k, 0) for k in ("SMART", "MISSED", "BLIND", "NO-OP")},
        "pages": pages,
        "answer": {
            "final": final,
            "gold": gold,
            "exact_match": exact_match(final, gold),
            "token_f1": float(token_f1(final, gold)),
            "semantic_match": ans.get("semantic_match"),
            "audit_source": ans.get("audit_source"),
        },
    }


def question(cur: Cursor, qid: str, run: str | None) -> Row:
    """Every provider's current trajectories for one question: searches with results, items, answers, shared URLs."""
    with reading(cur) as schema:
        return _question(cur, schema, qid, run)


def _question(cur: Cursor, schema: str, qid: str, run: str | None) -> Row:
    trs = _rows(cur, f"WITH {TRAJECTORIES_CTE}, {AUDIT_CTE}, {ANSWERS_CTE} "
                     "SELECT tr.stream_id, tr.trajectory_id, tr.provider, tr.epoch, tr.question, tr.gold_answer, "
                     "fa.final_answer, "
                     "aud.semantic_match FROM tr LEFT JOIN aud USING (stream_id) LEFT JOIN fa USING (stream_id) "
                     "WHERE tr.qid = ? ORDER BY tr.epoch, tr.provider, tr.position", [qid])
    if not trs:
        raise NotFound(f"question {qid!r} has no trajectory in the store")
    streams = [t["stream_id"] for t in trs]
    calls = _rows(cur, "SELECT c.stream_id, c.call_id, c.iteration, c.query, d.status, d.n_results "
                       "FROM search_calls c LEFT JOIN search_completions d "
                       "ON d.stream_id = c.stream_id AND d.call_id = c.call_id "
                       "WHERE c.stream_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY c.position", [streams])
    results = _rows(cur, "SELECT stream_id, call_id, rank, title, url, url_normalized, domain, snippet "
                         "FROM search_results WHERE stream_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY position",
                    [streams])
    by_call: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in results:
        by_call[(r["stream_id"], r["call_id"])].append(r)
    seen: dict[str, set[str]] = defaultdict(set)
    out = []
    per_stream: dict[str, dict[str, Row]] = defaultdict(dict)
    for i in item_evidence(cur, schema, [t["trajectory_id"] for t in trs], run):
        per_stream[i["stream_id"]][i["url_normalized"]] = i
    for t in trs:
        items = per_stream[t["stream_id"]]
        for u in items:
            seen[u].add(t["provider"])
        searches = [
            {**c, "results": [{**r, "fetched": items.get(r["url_normalized"], {}).get("fetched"),
                               "part": items.get(r["url_normalized"], {}).get("part")}
                              for r in by_call[(t["stream_id"], c["call_id"])]]}
            for c in calls if c["stream_id"] == t["stream_id"]
        ]
        out.append({**t, "searches": searches, "n_items": len(items)})
    shared = {u: sorted(ps) for u, ps in seen.items() if len(ps) > 1}
    return {"qid": qid, "question": trs[0]["question"], "gold_answer": trs[0]["gold_answer"], "judge_run_id": run,
            "trajectories": out, "shared_urls": shared}


def report(cur: Cursor, judge_run_id: str | None, runs: list[str] | None = None, by: str = "provider") -> Report | Row:
    """The §8 report (and every extra key the report carries) for the judge run and the chosen runs. A store of
    several runs with none chosen answers the runs to choose from (`choose_run`), as `report` would ask for
    `--run-id`: runs are never merged silently, and the explorer shows the choice instead of failing."""
    with reading(cur):
        known = [str(r[0]) for r in cur.execute(RUNS_SQL).fetchall()]
    if len(known) > 1 and not runs:
        return {"choose_run": True, "runs": known}
    return build_report(cur, judge_run_id=judge_run_id or None, writable=False, run_ids=runs or (), by=by).report


_LABELS = ("valid", "snippet_supports_gold", "snippet_contradicts_gold", "snippet_relevant", "page_supports_gold",
           "supports_final_answer")


def judge_compare(cur: Cursor, a: str, b: str) -> Row:
    """Two judge runs item by item: each run's labels side by side, disagreements first (per-label agreement counts)."""
    cols = ", ".join(f"a.{c} AS a_{c}, b.{c} AS b_{c}" for c in _LABELS)
    with reading(cur):
        known = {r.judge_run_id for r in judge_runs(cur)}
        for jr in (a, b):
            if jr not in known:
                raise BadInput(f"judge run {jr!r} not found in the database (known: {', '.join(sorted(known)) or 'none'})")
        rows = _rows(cur, f"""WITH a AS ({first_verdicts("$a")}), b AS ({first_verdicts("$b")})
SELECT coalesce(a.trajectory_id, b.trajectory_id) AS trajectory_id, coalesce(a.url_normalized, b.url_normalized)
       AS url_normalized, {cols}, a.position AS a_position, b.position AS b_position
FROM a FULL OUTER JOIN b ON a.trajectory_id = b.trajectory_id AND a.url_normalized = b.url_normalized""",
                 {"a": a, "b": b})
    agree: Counter[str] = Counter()
    both: Counter[str] = Counter()
    for r in rows:
        r["disagree"] = [c for c in _LABELS if r[f"a_{c}"] is not None and r[f"b_{c}"] is not None
                         and r[f"a_{c}"] != r[f"b_{c}"]]
        for c in _LABELS:
            if r[f"a_{c}"] is not None and r[f"b_{c}"] is not None:
                both[c] += 1
                agree[c] += r[f"a_{c}"] == r[f"b_{c}"]
    rows.sort(key=lambda r: (not r["disagree"], r["trajectory_id"], r["url_normalized"]))
    shown = rows[:COMPARE_ROWS]
    why = rationales(cur, [r[k] for r in shown for k in ("a_position", "b_position") if r[k] is not None])
    for r in shown:
        r["a_rationale"], r["b_rationale"] = why.get(r["a_position"]), why.get(r["b_position"])
    return {"a": a, "b": b, "items": len(rows), "disagreeing": sum(1 for r in rows if r["disagree"]),
            "labels": {c: {"both": both[c], "agree": agree[c]} for c in _LABELS}, "rows": shown,
            "truncated": len(rows) > COMPARE_ROWS,
            # SPEC §12's comparison (Cohen's kappa, 2x2 tables, partitions under A and B), as `judge compare` prints it
            "comparison": compare_judge_runs(cur, a, b)}


def run_sql(cur: Cursor, sql: str) -> Row:
    """Rows of a read-only query (pipeline._querying: the rules of `searchtrace sql`), at most SQL_ROWS of them."""
    result = query(cur, sql, limit=SQL_ROWS, seconds=TIMEOUT_S)  # a run's read session has the same limit
    return {"columns": result.columns, "rows": [list(r) for r in result.rows], "truncated": result.truncated}
