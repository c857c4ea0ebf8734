"""The explorer's JSON API (docs/how-to/explorer.md) as plain functions of a cursor: every figure comes from the analytics layer.

Trajectory lists read `metrics.trajectory_stats` (the per-trajectory integers the report averages), items and
their partition cell `analytics._evidence`, the report `analytics.build_report`; the timeline is the
trajectory's own events in order. Nothing here re-derives a metric.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

import msgspec

from searchtrace.analytics import (
    ALL_ITEM_EVIDENCE_SQL,
    ANSWERS_CTE,
    AUDIT_CTE,
    COMPARED,
    COMPLEMENTARITY,
    CORRECTED_MARKER,
    CORRECTED_PAIR_COLUMNS,
    CORRECTED_ROWS,
    DEFAULT_BOOTSTRAP,
    LABEL_COUNTS,
    PAIRED_COLUMNS,
    PARTITION,
    REPORT_ROWS,
    RUNS_SQL,
    TESTS,
    TRAJECTORIES_CTE,
    VERDICT_KEYS,
    AlignedCell,
    AlignedRow,
    AnswerBlock,
    Appearance,
    CellRow,
    CellSide,
    ChooseRun,
    ComparePage,
    CompareRow,
    Facets,
    FetchedPage,
    FetchRow,
    ItemEvidence,
    ItemRow,
    ItemsPage,
    JudgeRunRow,
    Link,
    ListCounts,
    PairItemsPage,
    PairTrajectory,
    QuestionPage,
    QuestionRow,
    QuestionSide,
    QuestionTrajectory,
    Report,
    ReportLinks,
    ResultRow,
    RunRow,
    SearchResultRow,
    SearchRow,
    SqlResult,
    Step,
    TrajectoryListPage,
    TrajectoryPage,
    TrajectoryRow,
    TrajectoryStats,
    alias_scores,
    answerable_cells,
    arm_key,
    build_report,
    choose_judge_run,
    compare_judge_runs,
    correction_labels,
    counted_in,
    decode_aliases,
    fetch_cache_hit,
    first_verdicts,
    item_evidence,
    judge_runs,
    pair_cells,
    pair_key,
    paired_qids,
    rationales,
    resolve_judge_run,
    scoped,
    shown,
    sources,
    surface_answerable,
    trajectory_arms,
    trajectory_stats,
)
from searchtrace.engine import Fetch, fold
from searchtrace.pipeline import query
from searchtrace.store import (
    TIMEOUT_S,
    BadInput,
    Cursor,
    ModelResponded,
    blobs,
    decode_payload,
    trajectory_stream,
)

PAGE_CHARS = 200_000  # a fetched page beyond this is cut in the view (the blob keeps every byte)
SQL_ROWS = 1_000
COMPARE_ROWS = 50  # judge compare: rows per page
LIST_MAX = 500
CELLS = tuple(c.name for c in PARTITION)  # the partition's cells, in order

S = TypeVar("S", bound=msgspec.Struct)
T = TypeVar("T")


class NotFound(Exception):
    """The id names nothing in the store (HTTP 404)."""


def reading(cur: Cursor) -> contextlib.AbstractContextManager[str]:
    """The typed relations by their bare names: the report's projections when current, else views over the events."""
    return sources.reading(cur, writable=False)


def head(cur: Cursor) -> int:
    row = cur.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
    return int(row[0]) if row else 0


def _records(cur: Cursor, sql: str, params: object = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A query's column names and rows (values as DuckDB returns them)."""
    cur.execute(sql, params) if params is not None else cur.execute(sql)
    return [d[0] for d in cur.description or []], cur.fetchall()


def _rows(cur: Cursor, sql: str, params: object, into: type[S]) -> list[S]:
    """A query's rows as Structs `into`, whose fields its columns name."""
    names, rows = _records(cur, sql, params)
    return [into(**dict(zip(names, r, strict=True))) for r in rows]


def runs(cur: Cursor) -> list[RunRow]:
    """Every run id with its event, trajectory and verdict counts, newest first."""
    return _rows(
        cur,
        "SELECT run_id, count(*) AS events, count(*) FILTER (WHERE type = 'trajectory.started') AS trajectories, "
        "count(*) FILTER (WHERE type = 'judge.verdict') AS verdicts, min(position) AS first_position, "
        "max(position) AS last_position, CAST(min(recorded_at) AS VARCHAR) AS started_at, "
        "CAST(max(recorded_at) AS VARCHAR) AS last_at FROM events GROUP BY run_id ORDER BY min(position) DESC",
        None, RunRow,
    )


def judge_run_list(cur: Cursor) -> list[JudgeRunRow]:
    """Judge runs, newest first, with model and verdict counts; `default` marks the report's default, `chosen_by`
    says why it is."""
    with reading(cur):
        runs = judge_runs(cur)
        choice = choose_judge_run(cur, None)
        stats = {r[0]: (r[1], r[2]) for r in cur.execute(
            "SELECT judge_run_id, count(*), count(*) FILTER (WHERE NOT valid) FROM verdicts GROUP BY judge_run_id"
        ).fetchall()}
        models = {r[0]: (r[1], r[2]) for r in cur.execute(
            "SELECT judge_run_id, arg_max(model, position), arg_max(prompt_version, position) FROM judge_runs "
            "GROUP BY judge_run_id").fetchall()}
    out = []
    for jr in sorted(runs, key=lambda r: r.latest, reverse=True):
        (verdicts, invalid), (model, prompt) = stats.get(jr.judge_run_id, (0, 0)), models.get(jr.judge_run_id, (None, None))
        out.append(JudgeRunRow(judge_run_id=jr.judge_run_id, model=model, prompt_version=prompt, verdicts=verdicts,
                               valid=jr.valid_verdicts, invalid=invalid, default=jr.judge_run_id == choice.judge_run_id,
                               # docs/how-to/judge-runs.md: why it is the default ("first" or "judge --default"), on that row only
                               chosen_by=choice.how if jr.judge_run_id == choice.judge_run_id else None))
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
        self._rows: list[TrajectoryRow] = []
        self.facets = facets([])
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

    def rows(self, cur: Cursor, judge_run_id: str | None) -> list[TrajectoryRow]:
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
    def _build(cur: Cursor, judge_run_id: str | None) -> list[TrajectoryRow]:
        with reading(cur):
            meta = {r[0]: r[1:] for r in cur.execute(f"""WITH {TRAJECTORIES_CTE},
fin AS (SELECT stream_id, arg_max(reason, position) AS finish_reason FROM finishes GROUP BY stream_id)
SELECT tr.stream_id, tr.question, tr.position, e.run_id, fin.finish_reason
FROM tr JOIN events e ON e.position = tr.position LEFT JOIN fin ON fin.stream_id = tr.stream_id""").fetchall()}
            stats = trajectory_stats(cur, judge_run_id)
        out: list[TrajectoryRow] = []
        for s in stats:
            question, position, run_id, finish_reason = meta.get(s.stream_id, ("", 0, None, None))
            out.append(TrajectoryRow(
                trajectory_id=s.trajectory_id, stream_id=s.stream_id, provider=s.provider, qid=s.qid,
                question=question, run_id=run_id, epoch=s.epoch, position=position, finish_reason=finish_reason,
                final_answer=s.final_answer, gold_answer=s.gold_answer, correct=s.semantic_match,
                searches=s.searches, fetches=s.fetches, input_tokens=s.input_tokens, output_tokens=s.output_tokens,
                items=s.items, valid_items=s.valid, supported=s.supported, answerable=surface_answerable(s),
                exact_match=alias_scores(s.final_answer, s.answers)[0], partition=cell_counts(s),
            ))
        out.sort(key=lambda r: r.position, reverse=True)
        return out


def cell_counts(s: TrajectoryStats) -> dict[str, int]:
    """A trajectory's valid items per partition cell, keyed and ordered as PARTITION names them."""
    return {c.name: n for c, n in s.partition.cells()}


class Filters(msgspec.Struct, kw_only=True):
    runs: list[str] = []  # any of these runs (none: every run)
    provider: str | None = None
    epoch: int | None = None
    correct: str | None = None  # true / false / unaudited
    partition: str | None = None  # a cell: trajectories with at least one item in it
    q: str | None = None
    limit: int = 50
    offset: int = 0


def _keep(r: TrajectoryRow, f: Filters, q: str | None) -> bool:
    if f.runs and r.run_id not in f.runs or f.provider and r.provider != f.provider:
        return False
    if f.epoch is not None and r.epoch != f.epoch:
        return False
    if f.correct:
        state = "unaudited" if r.correct is None else str(bool(r.correct)).lower()
        if state != f.correct:
            return False
    if f.partition and not r.partition.get(f.partition):
        return False
    if q:
        text = " ".join(str(v or "") for v in (r.question, r.qid, r.trajectory_id, r.final_answer)).lower()
        return q in text
    return True


def list_trajectories(rows: list[TrajectoryRow], f: Filters, choices: Facets,
                      judge_run_id: str | None) -> TrajectoryListPage:
    """One page of matching rows (newest first), their `total`, and counts over all matches for the filter bar."""
    if f.limit < 1 or f.limit > LIST_MAX or f.offset < 0:
        raise BadInput(f"limit must be 1..{LIST_MAX} and offset >= 0")
    _check_filters(f, choices)
    q = (f.q or "").strip().lower() or None
    filtered = any((f.runs, f.provider, f.epoch is not None, f.correct, f.partition, q))
    hits = [r for r in rows if _keep(r, f, q)] if filtered else rows
    parts = dict.fromkeys(CELLS, 0)
    correct: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    by_run: Counter[str] = Counter()
    for r in hits:
        by_run[r.run_id or ""] += 1
        for k, v in r.partition.items():
            parts[k] += v
        correct["unaudited" if r.correct is None else "true" if r.correct else "false"] += 1
        providers[r.provider] += 1
    return TrajectoryListPage(
        total=len(hits), offset=f.offset, limit=f.limit, trajectories=hits[f.offset : f.offset + f.limit],
        counts=ListCounts(providers=dict(providers), runs=dict(by_run), correct=dict(correct), partition=parts),
        facets=choices, judge_run_id=judge_run_id,
    )


_CORRECT = ("true", "false", "unaudited")


def _check_filters(f: Filters, choices: Facets) -> None:
    """A filter value that names nothing (`correct=maybe`, a run the store does not hold) is a 400 naming the
    choices, not an empty list that looks like an answer."""
    def one_of(name: str, value: object, known: list[str] | list[int] | tuple[str, ...]) -> None:
        if value is not None and value not in known:
            shown = ", ".join(str(k) for k in known[:20]) + (", …" if len(known) > 20 else "")
            raise BadInput(f"{name}={str(value)[:80]!r} is not one of: {shown or 'none in this store'}")

    one_of("correct", f.correct, _CORRECT)
    one_of("partition", f.partition, CELLS)
    for run in f.runs:
        one_of("run", run, choices.runs)
    one_of("provider", f.provider, choices.providers)
    one_of("epoch", f.epoch, choices.epochs)


def facets(rows: list[TrajectoryRow]) -> Facets:
    """The filter bar's choices over every row."""
    return Facets(providers=sorted({r.provider for r in rows}), runs=sorted({r.run_id for r in rows if r.run_id}),
                  epochs=sorted({r.epoch for r in rows}))


class _Answered(msgspec.Struct, kw_only=True):
    """A current trajectory's answer and audit, as the report reads them."""

    question: str | None
    gold_answer: str | None
    gold_aliases: str | None
    final_answer: str | None
    semantic_match: bool | None
    audit_source: str | None


def _answer_row(cur: Cursor, schema: str, trajectory_id: str) -> _Answered | None:
    """None when the trajectory is not current (superseded by a later attempt)."""
    stream = trajectory_stream(trajectory_id)
    found = _rows(
        cur,
        f"""WITH {scoped(schema, "SELECT $stream", "SELECT $tid")}, {TRAJECTORIES_CTE}, {AUDIT_CTE}, {ANSWERS_CTE}
SELECT tr.question, tr.gold_answer, tr.gold_aliases, fa.final_answer, aud.semantic_match, aud.audit_source
FROM tr LEFT JOIN aud USING (stream_id) LEFT JOIN fa USING (stream_id) WHERE tr.stream_id = $stream""",
        {"stream": stream, "tid": trajectory_id}, _Answered,
    )
    return found[0] if found else None


def _pages(cur: Cursor, digests: list[str]) -> dict[str, FetchedPage]:
    """Fetched pages by digest as text (cut at PAGE_CHARS for the view; the blob keeps every byte)."""
    found = blobs.get_many(cur, digests)
    out: dict[str, FetchedPage] = {}
    for d in digests:
        raw = found.get(d)
        text = None if raw is None else raw.decode("utf-8", errors="replace")
        out[d] = FetchedPage(text=None if text is None else text[:PAGE_CHARS], n_bytes=0 if raw is None else len(raw),
                             truncated=text is not None and len(text) > PAGE_CHARS)
    return out


def _requests(cur: Cursor, turns: list[ModelResponded]) -> tuple[dict[str, object], dict[str, object]]:
    """What the model was sent (docs/concepts/shown.md): each request message and tool list by digest, decoded from its blob once
    (a turn's `request_messages` name them in order; a digest not stored maps to None)."""
    wanted = [d for t in turns if not isinstance(t.request_messages, msgspec.UnsetType) for d in t.request_messages]
    tools = [t.tools_digest for t in turns if isinstance(t.tools_digest, str)]
    found = blobs.get_many(cur, sorted({*wanted, *tools}))

    def decoded(d: str) -> object:
        raw = found.get(d)
        if raw is None:
            return None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return raw.decode("utf-8", errors="replace")

    return {d: decoded(d) for d in dict.fromkeys(wanted)}, {d: decoded(d) for d in dict.fromkeys(tools)}


def trajectory(cur: Cursor, trajectory_id: str, run: str | None) -> TrajectoryPage:
    """The trajectory's events in order (the timeline), its items with verdicts, fetched pages, answer and audit."""
    stream = trajectory_stream(trajectory_id)
    _, events = _records(
        cur,
        "SELECT position, stream_seq, type, run_id, CAST(recorded_at AS VARCHAR), payload FROM events "
        "WHERE stream_id = ? ORDER BY position",
        [stream],
    )
    if not events:
        raise NotFound(f"trajectory {trajectory_id!r} is not in the store")
    # the timeline shows each payload as recorded (its JSON); what the page needs besides comes from the fold
    payloads: list[Any] = [msgspec.json.decode(e[5]) for e in events]
    steps = [Step(position=e[0], stream_seq=e[1], type=e[2], run_id=e[3], recorded_at=e[4], payload=p)
             for e, p in zip(events, payloads, strict=True)]
    f = fold(decode_payload(e[5]) for e in events)
    started = f.started
    with reading(cur) as schema:
        items = item_evidence(cur, schema, [trajectory_id], run)
        ans = _answer_row(cur, schema, trajectory_id)
    pages = _pages(cur, [g.completed.content_digest for g in f.steps
                         if isinstance(g, Fetch) and g.completed is not None and g.completed.content_digest])
    final = ans.final_answer if ans else None
    gold = (ans.gold_answer if ans else None) or (started.gold_answer if started else "") or ""
    aliases = decode_aliases(ans.gold_aliases if ans else None) or [gold]
    em, f1 = alias_scores(final, aliases)  # docs/how-to/compare.md: the best of the accepted answers, as the report scores
    messages, tools = _requests(cur, f.turns)
    answers = [p for s, p in zip(steps, payloads, strict=True) if s.type == "answer.final"]
    cited = {c.get("item") for c in (answers[-1].get("citations") or [] if answers else [])}
    for i in items if cited else ():  # docs/how-to/hosted.md: the items the final answer cites
        i.cited = i.url_normalized in cited
    parts = Counter(i.part for i in items if i.part)
    return TrajectoryPage(
        trajectory_id=trajectory_id,
        provider=started.provider if started else None,
        qid=started.qid if started else None,
        question=(ans.question if ans else None) or (started.question if started else "") or "",
        run_id=events[0][3],
        judge_run_id=run,
        current=ans is not None,
        steps=steps,
        items=items,
        partition={k: parts.get(k, 0) for k in CELLS},
        pages=pages,
        messages=messages,
        tools=tools,
        answer=AnswerBlock(final=final, gold=gold, aliases=aliases, exact_match=em, token_f1=float(f1),
                           semantic_match=ans.semantic_match if ans else None,
                           audit_source=ans.audit_source if ans else None),
    )


def question(cur: Cursor, qid: str, run: str | None) -> QuestionPage:
    """Every provider's current trajectories for one question: searches with results, items, answers, shared URLs."""
    with reading(cur) as schema:
        return _question(cur, schema, qid, run)


def _question(cur: Cursor, schema: str, qid: str, run: str | None) -> QuestionPage:
    trs = _rows(cur, f"WITH {TRAJECTORIES_CTE}, {AUDIT_CTE}, {ANSWERS_CTE} "
                     "SELECT tr.stream_id, tr.trajectory_id, tr.provider, tr.epoch, tr.question, tr.gold_answer, "
                     "fa.final_answer, "
                     "aud.semantic_match FROM tr LEFT JOIN aud USING (stream_id) LEFT JOIN fa USING (stream_id) "
                     "WHERE tr.qid = ? ORDER BY tr.epoch, tr.provider, tr.position", [qid], QuestionTrajectory)
    if not trs:
        raise NotFound(f"question {qid!r} has no trajectory in the store")
    streams = [t.stream_id for t in trs]
    calls = _rows(cur, "SELECT c.stream_id, c.call_id, c.iteration, c.query, d.status, d.n_results "
                       "FROM search_calls c LEFT JOIN search_completions d "
                       "ON d.stream_id = c.stream_id AND d.call_id = c.call_id "
                       "WHERE c.stream_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY c.position", [streams], SearchRow)
    results = _rows(cur, "SELECT stream_id, call_id, rank, title, url, url_normalized, domain, snippet "
                         "FROM search_results WHERE stream_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY position",
                    [streams], SearchResultRow)
    by_call: dict[tuple[str, str], list[SearchResultRow]] = defaultdict(list)
    for r in results:
        by_call[(r.stream_id, r.call_id)].append(r)
    seen: dict[str, set[str]] = defaultdict(set)
    per_stream: dict[str, dict[str, ItemEvidence]] = defaultdict(dict)
    for i in item_evidence(cur, schema, [t.trajectory_id for t in trs], run):
        per_stream[i.stream_id][i.url_normalized] = i
    for t in trs:
        items = per_stream[t.stream_id]
        for u in items:
            seen[u].add(t.provider)
        t.searches = [msgspec.structs.replace(c, results=[
            msgspec.structs.replace(r, fetched=hit.fetched if (hit := items.get(r.url_normalized)) else None,
                                    part=hit.part if hit else None)
            for r in by_call[(t.stream_id, c.call_id)]]) for c in calls if c.stream_id == t.stream_id]
        t.n_items = len(items)
    shared = {u: sorted(ps) for u, ps in seen.items() if len(ps) > 1}
    return QuestionPage(qid=qid, question=trs[0].question, gold_answer=trs[0].gold_answer, judge_run_id=run,
                        trajectories=trs, shared_urls=shared, aligned=_aligned(trs, results, per_stream))


def _aligned(trs: list[QuestionTrajectory], results: list[SearchResultRow],
             per_stream: dict[str, dict[str, ItemEvidence]]) -> list[AlignedRow]:
    """One row per URL any trajectory of the question returned: per trajectory its best rank and its item's
    verdict (labels, cell, rationale) in the judge run; URLs most trajectories share first, then by best rank."""
    first: dict[str, SearchResultRow] = {}
    ranks: dict[str, dict[str, tuple[int, int]]] = {}  # URL -> stream -> (best rank, appearances)
    for r in results:
        first.setdefault(r.url_normalized, r)
        per = ranks.setdefault(r.url_normalized, {})
        best, n = per.get(r.stream_id, (r.rank, 0))
        per[r.stream_id] = (min(best, r.rank), n + 1)
    tid = {t.stream_id: t.trajectory_id for t in trs}
    rows = []
    for u, per in ranks.items():
        cells = {}
        for stream, (rank, n) in per.items():
            item = per_stream.get(stream, {}).get(u)
            cells[tid[stream]] = AlignedCell(rank=rank, appearances=n, **(
                {k: getattr(item, k) for k in VERDICT_KEYS} if item else {"item": False}))
        r = first[u]
        rows.append(AlignedRow(url_normalized=u, url=r.url, title=r.title, domain=r.domain, cells=cells))
    return sorted(rows, key=lambda r: (-len(r.cells), min(c.rank for c in r.cells.values()), r.url_normalized))


def report(cur: Cursor, judge_run_id: str | None, runs: list[str] | None = None, by: str = "provider",
           bootstrap: int = DEFAULT_BOOTSTRAP) -> tuple[Report | ChooseRun, list[str]]:
    """The report (and every extra key the report carries: the intervals and paired tests from `bootstrap`
    replicates, as `report` prints them) for the judge run, the chosen runs and the arms `by`. A store of several
    runs with none chosen, by provider, answers the runs to choose from (`choose_run`), as `report` would ask for
    `--run-id`: runs are never merged silently, and the explorer shows the choice instead of failing. With another
    `by` and no run chosen every run is reported (each run's trajectories fall in their arms). Second: the notes
    `report` prints to stderr (audits not applied, partial judge coverage, ...)."""
    with reading(cur):
        known = [str(r[0]) for r in cur.execute(RUNS_SQL).fetchall()]
    if len(known) > 1 and not runs:
        if by == "provider":
            return ChooseRun(runs=known), []
        runs = known
    built = build_report(cur, judge_run_id=judge_run_id or None, writable=False, run_ids=runs or (), by=by,
                         bootstrap=bootstrap)
    return built.report, built.notes


class ReportCache:
    """The last few reports by (head, judge run, runs, by, bootstrap): a report with 2,000 replicates is drawn once
    per state of the store, not once per page view."""

    def __init__(self, size: int = 8) -> None:
        self._lock = threading.Lock()
        self._size = size
        self._kept: dict[tuple[object, ...], tuple[Report | ChooseRun, list[str]]] = {}

    def get(self, cur: Cursor, judge_run_id: str | None, runs: list[str], by: str,
            bootstrap: int) -> Report | ChooseRun:
        return self.built(cur, judge_run_id, runs, by, bootstrap)[0]

    def built(self, cur: Cursor, judge_run_id: str | None, runs: list[str], by: str,
              bootstrap: int) -> tuple[Report | ChooseRun, list[str]]:
        """The report and its notes (`report`'s stderr lines), drawn once per key."""
        key = (head(cur), judge_run_id or None, tuple(runs), by, bootstrap)
        with self._lock:
            if key in self._kept:
                return self._kept[key]
        body = report(cur, judge_run_id, runs, by, bootstrap)
        with self._lock:
            self._kept = {k: v for k, v in list(self._kept.items())[-(self._size - 1):] if k[0] == key[0]}
            self._kept[key] = body
        return body


# -- the items behind each count of the report (GET /api/items) ------------------------------------------------

_VALID, _INVALID, _PAGE, _DISCOVERED, _CONTRA, _SHOWN, _FETCHED, _SUPPORTS, _RELEVANT, _PAGE_SUPPORTS, \
    _PAGE_CONTRA, _FINAL, _PAGE_VISIBLE = (1 << i for i in range(13))
_BITS = {  # the verdict's labels and the item's states, by the item_evidence_sql column they come from
    "has_page": _PAGE, "discovered": _DISCOVERED, "snippet_contradicts_gold": _CONTRA, "snippet_shown": _SHOWN,
    "fetched": _FETCHED, "snippet_supports_gold": _SUPPORTS, "snippet_relevant": _RELEVANT,
    "page_supports_gold": _PAGE_SUPPORTS, "page_contradicts_gold": _PAGE_CONTRA, "supports_final_answer": _FINAL,
    "page_visible": _PAGE_VISIBLE,
}
_PART_CODE = {p: i for i, p in enumerate(CELLS)}

# report key -> which of a trajectory's items it counts (TrajectoryStats' definitions, over the item rows of
# ALL_ITEM_EVIDENCE_SQL: `ok` is a valid verdict; S, the surface support, is the SMART or MISSED cell)
ALL_CELLS = frozenset(range(len(CELLS)))
ItemTest = tuple[int, int, frozenset[int]]  # flags it needs, flags it must not have, the cells it may be in
ITEM_LABELS: dict[str, ItemTest] = {
    "items": (0, 0, frozenset({-1, *ALL_CELLS})),
    "valid_items": (_VALID, 0, ALL_CELLS),
    "invalid_items": (_INVALID, 0, frozenset({-1})),
    "snippet_only_items": (_VALID, _PAGE, ALL_CELLS),
    "page_visible_items": (_VALID | _PAGE, 0, ALL_CELLS),
    "partition": (_VALID, 0, ALL_CELLS),  # with `partition=` the cell asked for
    "discovered_support": (_DISCOVERED, 0, ALL_CELLS),
    "surface_supported_items": (_VALID, 0, frozenset({0, 1})),  # S: SMART or MISSED
    "surface_contradicted_items": (_VALID | _CONTRA | _SHOWN, 0, ALL_CELLS),
    "fetched_items": (_FETCHED, 0, frozenset({-1, *ALL_CELLS})),
}
# report key -> which trajectories it counts (the rows of the trajectory list)
TRAJECTORY_LABELS: dict[str, Callable[[TrajectoryRow], bool]] = {
    "trajectories": lambda t: True,
    "audited": lambda t: t.correct is not None,
    "correct": lambda t: bool(t.correct),
    "incorrect": lambda t: t.correct is False,
    "exact_matches": lambda t: bool(t.exact_match),
    "surface_answerable_queries": lambda t: t.answerable,
}
RESULT_LABELS = ("results_returned", "results_shown")  # search results (appearances), shown to the model or not
FETCH_LABELS = ("fetch_cache_hits",)  # fetch calls answered from the cache (analytics.fetch_cache_hit)



# each linkable count or rate of the report -> the query of the rows behind it (a rate: its numerator)
LINKS: dict[str, Link] = {
    **{k: Link(label=k) for k in TRAJECTORY_LABELS if k not in ("incorrect", "exact_matches")},
    arm_key(lambda m: m.accuracy): Link(label="correct"),
    arm_key(lambda m: m.exact_match): Link(label="exact_matches"),
    arm_key(lambda m: m.token_f1): Link(label="trajectories"),
    **{k: Link(label=k) for k in ITEM_LABELS if k not in ("partition", "fetched_items")},
    **{f"partition.{p}": Link(label="partition", partition=p) for p in _PART_CODE},
    arm_key(lambda m: m.surface_support_rate): Link(label="surface_supported_items"),
    arm_key(lambda m: m.contradiction_gold_ratio): Link(label="surface_contradicted_items"),
    arm_key(lambda m: m.gold_rank1_share): Link(label="surface_supported_items", rank="1"),
    arm_key(lambda m: m.results_returned): Link(label="results_returned"),
    arm_key(lambda m: m.results_shown): Link(label="results_shown"),
    arm_key(lambda m: m.shown_share): Link(label="results_shown"),
    arm_key(lambda m: m.fetch_cache_hits): Link(label="fetch_cache_hits"),
    **{k: Link(label=k) for k in LABEL_COUNTS},  # the human labels the judge-error correction rests on
    **{arm_key(get): Link(label="trajectories") for get in (  # the per-trajectory means: every trajectory
        lambda m: m.searches_per_trajectory, lambda m: m.fetches_per_trajectory, lambda m: m.input_tokens_per_trajectory,
        lambda m: m.output_tokens_per_trajectory, lambda m: m.reasoning_tokens_per_trajectory,
        lambda m: m.page_tokens_per_trajectory, lambda m: m.latency_ms_per_trajectory,
        lambda m: m.distinct_domains_per_trajectory)},
}

Span = tuple[int, int, int, int]  # a stream's search results: returned, shown, first and last position
# stream_id, url_normalized, flags, part code (-1: none), n_rank1, position of its surface result, of its verdict (-1)
Item = tuple[str, str, int, int, int, int, int]


class ItemIndex:
    """Every current judge item of one judge run as a compact row, and each stream's search results returned and
    shown, kept until the log's head moves (the report's counts are sums over these)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, str | None] | None = None
        self._items: dict[str, list[Item]] = {}
        self._results: dict[str, Span] = {}
        self._hits: dict[tuple[object, ...], list[tuple[Item, int]]] = {}  # the last few queries' rows, for paging
        # the last few arm pairs' rows, by list row set
        self._pairs: dict[tuple[object, ...], tuple[list[TrajectoryRow], Any]] = {}

    def get(self, cur: Cursor, judge_run_id: str | None) -> tuple[dict[str, list[Item]], dict[str, Span]]:
        key = (head(cur), judge_run_id)
        with self._lock:
            if self._key == key:
                return self._items, self._results
        items: dict[str, list[Item]] = defaultdict(list)
        with reading(cur):
            cur.execute(ALL_ITEM_EVIDENCE_SQL, {"run": judge_run_id})
            names = [d[0] for d in cur.description or []]
            col = {n: i for i, n in enumerate(names)}
            bits = [(col[name], bit) for name, bit in _BITS.items()]
            at = [col[k] for k in ("valid", "part", "stream_id", "url_normalized", "n_rank1", "first_position",
                                   "verdict_position")]
            for r in cur.fetchall():
                valid, part, stream, url, rank1, first, verdict = (r[i] for i in at)
                flags = (_VALID if valid is True else 0) | (_INVALID if valid is False else 0)
                for i, bit in bits:
                    if r[i]:
                        flags |= bit
                items[stream].append((stream, url, flags, -1 if part is None else _PART_CODE[part], int(rank1),
                                      int(first), -1 if verdict is None else int(verdict)))
            results = {str(st): (int(n), int(k), int(lo), int(hi)) for st, n, k, lo, hi in cur.execute(
                f"WITH {shown.SHOWN_CTE} SELECT stream_id, count(*), count(*) FILTER (WHERE shown), min(position), "
                "max(position) FROM sh GROUP BY stream_id").fetchall()}
        with self._lock:
            self._key, self._items, self._results, self._hits = key, dict(items), results, {}
        return self._items, results

    def pairs(self, rows: list[TrajectoryRow], query: tuple[object, ...], build: Callable[[], T]) -> T:
        """What `build` finds for one arm pair over the trajectory list `rows`, found once while `rows` is the list
        index's current set (the list is kept here, so its identity cannot be taken by another)."""
        with self._lock:
            got = self._pairs.get(query)
            if got is not None and got[0] is rows:
                return got[1]  # type: ignore[no-any-return]  # kept by the same query, so of the type it built
        found = build()
        with self._lock:
            self._pairs = {k: v for k, v in list(self._pairs.items())[-31:] if v[0] is rows}
            self._pairs[query] = (rows, found)
        return found

    def hits(self, query: tuple[object, ...], find: Callable[[], list[tuple[Item, int]]]) -> list[tuple[Item, int]]:
        """The rows of one query (all its pages), found once while the head stays where it is."""
        key = (self._key, *query)
        with self._lock:
            if key in self._hits:
                return self._hits[key]
        found = find()
        with self._lock:
            self._hits = {k: v for k, v in list(self._hits.items())[-15:] if k[0] == self._key}
            self._hits[key] = found
        return found


class ItemQuery(msgspec.Struct, kw_only=True):
    label: str
    arm: str | None = None
    by: str = "provider"
    runs: list[str] = []
    partition: str | None = None
    rank: int | None = None
    shown: bool | None = None
    pair: str | None = None  # a pair key of the report, "<A>|<B>" (the labels of PAIR_LINKS)
    cell: str | None = None  # label=cells: one class of COMPLEMENTARITY (none: every cell both arms ran)
    limit: int = 50
    offset: int = 0


# each count of an arm pair (the report's `complementarity` and `paired` blocks) -> the rows behind it, given pair=
PAIR_LINKS: dict[str, Link] = {
    **{k: Link(label="cells", cell=k) for k in COMPLEMENTARITY},  # the (qid, epoch) cells of each class
    pair_key(lambda c: c.paired_questions): Link(label="paired_questions"),  # the paired accuracy test's questions
    # the questions the corrected support-rate difference rests on: every question both arms ran
    pair_key(lambda c: c.surface_support_rate_corrected_diff_questions): Link(label="common_questions"),
}


def link_labels() -> ReportLinks:
    """What the report page links each key to, and the labels the CLI's table gives each key (one definition)."""
    counts = [k for k, v in LINKS.items() if v.label == k or k.startswith("partition.")]  # the rest: rates
    return ReportLinks(links=LINKS, counts=counts, pair_links=PAIR_LINKS, rows=REPORT_ROWS, corrected=CORRECTED_ROWS,
                       corrected_marker=CORRECTED_MARKER,
                       tests=TESTS, paired=PAIRED_COLUMNS, corrected_paired=CORRECTED_PAIR_COLUMNS)


def arm_names(cur: Cursor, by: str, runs: list[str]) -> Callable[[TrajectoryRow], str]:
    """The arm of a trajectory under `by` (docs/how-to/compare.md), as the report groups it (analytics.trajectory_arms; BadInput
    where the report refuses the axis); by provider, its provider."""
    if by == "provider":
        return lambda t: t.provider
    arms = trajectory_arms(cur, by, runs)
    return lambda t: arms.get(t.trajectory_id, "")


ItemsAnswer = (ItemsPage[TrajectoryRow] | ItemsPage[ItemRow] | ItemsPage[FetchRow] | ItemsPage[ResultRow]
               | PairItemsPage[CellRow] | PairItemsPage[QuestionRow])  # GET /api/items, by kind


class _Who(TypedDict):
    """The keys of its trajectory an items row carries."""

    trajectory_id: str
    provider: str
    run_id: str | None
    qid: str
    epoch: int


def _who(t: TrajectoryRow) -> _Who:
    return {"trajectory_id": t.trajectory_id, "provider": t.provider, "run_id": t.run_id, "qid": t.qid,
            "epoch": t.epoch}


def items(cur: Cursor, trajectories: list[TrajectoryRow], index: ItemIndex, judge_run_id: str | None,
          q: ItemQuery) -> ItemsAnswer:
    """The trajectories, judge items or search results one count of the report counts, `total` equal to that count
    (every epoch, the chosen runs, the arm), one page of them in order."""
    if q.limit < 1 or q.limit > LIST_MAX or q.offset < 0:
        raise BadInput(f"limit must be 1..{LIST_MAX} and offset >= 0")
    if q.partition is not None and q.partition not in _PART_CODE:
        raise BadInput(f"partition={q.partition[:40]!r} is not one of: {', '.join(_PART_CODE)}")
    if q.rank is not None and q.rank < 1:
        raise BadInput("rank is a search rank, 1 or more")
    known = {r.run_id for r in trajectories if r.run_id}
    for run in q.runs:
        if run not in known:
            raise BadInput(f"run {run[:80]!r} not found in the database (known: {', '.join(sorted(known)) or 'none'})")
    arm_of = arm_names(cur, q.by, q.runs)
    if q.label in _PAIR_LABELS:
        return _pair_rows(trajectories, arm_of, index, judge_run_id, q)
    if q.pair is not None or q.cell is not None:
        raise BadInput(f"label={q.label[:80]}: pair and cell select the counts of an arm pair "
                       f"(label={' or '.join(_PAIR_LABELS)})")
    trs = [t for t in trajectories if (not q.runs or t.run_id in q.runs)
           and (q.arm is None or arm_of(t) == q.arm)]
    if q.arm is not None and not trs and q.arm not in {arm_of(t) for t in trajectories}:
        raise BadInput(f"arm={q.arm[:80]!r}: no trajectory of the chosen runs is in it (by {q.by})")
    trs.sort(key=lambda t: t.position)

    def page(kind: str, found: tuple[int, list[S]]) -> ItemsPage[S]:
        return ItemsPage(label=q.label, arm=q.arm, by=q.by, judge_run_id=judge_run_id, offset=q.offset,
                         limit=q.limit, partition=q.partition, rank=q.rank, shown=q.shown, kind=kind,
                         total=found[0], rows=found[1])

    if q.label in TRAJECTORY_LABELS:
        if q.partition or q.rank or q.shown is not None:
            raise BadInput(f"label={q.label}: counts trajectories (partition, rank and shown select items)")
        keep = TRAJECTORY_LABELS[q.label]
        kept = [t for t in trs if keep(t)]
        return page("trajectories", (len(kept), kept[q.offset: q.offset + q.limit]))
    if q.label in FETCH_LABELS:
        if q.partition or q.rank or q.shown is not None:
            raise BadInput(f"label={q.label}: counts fetch calls (partition, rank and shown select items)")
        return page("fetches", _cache_hits(cur, trs, q))
    by_stream, results = index.get(cur, judge_run_id)
    of = {t.stream_id: t for t in trs}
    if q.label in LABEL_COUNTS:
        if q.partition or q.rank or q.shown is not None:
            raise BadInput(f"label={q.label}: counts human audit labels (partition, rank and shown select items)")
        return page("labels", _labelled(cur, trajectories, trs, index, (by_stream, results), judge_run_id, q))
    if q.label in RESULT_LABELS:
        if q.partition or q.rank:
            raise BadInput(f"label={q.label}: counts search results (partition and rank select items)")
        want = True if q.label == "results_shown" else q.shown
        return page("results", _results(cur, trs, results, want, q))
    if q.label not in ITEM_LABELS:
        choices = [*TRAJECTORY_LABELS, *ITEM_LABELS, *RESULT_LABELS, *FETCH_LABELS, *LABEL_COUNTS, *_PAIR_LABELS]
        raise BadInput(f"label={q.label[:80]!r} is not one of: {', '.join(choices)}")
    need, forbid, cells = ITEM_LABELS[q.label]
    if q.partition is not None:
        cells = cells & {_PART_CODE[q.partition]}
    if q.shown is not None:
        need, forbid = (need | _SHOWN, forbid) if q.shown else (need, forbid | _SHOWN)

    def find() -> list[tuple[Item, int]]:
        """(item, how many rows it stands for: 1, or its appearances at `rank`), in trajectory order."""
        picked = [it for t in trs for it in by_stream.get(t.stream_id, ())
                  if it[2] & need == need and not it[2] & forbid and it[3] in cells]
        if q.rank is None:
            return [(it, 1) for it in picked]
        counts = _rank_counts(cur, picked, q.rank)
        return [(it, n) for it in picked if (n := counts.get((it[0], it[1]), 0))]

    hits = index.hits((tuple(q.runs), q.by, q.arm, q.label, q.partition, q.rank, q.shown), find)
    total = sum(n for _, n in hits)
    window: list[tuple[Item, int]] = []  # (item, index of the appearance) on this page
    seen = 0
    for it, n in hits:
        if seen + n > q.offset and len(window) < q.limit:
            for k in range(max(0, q.offset - seen), n):
                if len(window) < q.limit:
                    window.append((it, k))
        seen += n
        if len(window) >= q.limit:
            break
    return page("items" if q.rank is None else "appearances", (total, _item_rows(cur, window, of, q.rank, results)))


_PAIR_LABELS = ("cells", "paired_questions", "common_questions")


def _pair_of(key: str, arms: set[str], by: str) -> tuple[str, str]:
    """The two arms of a report pair key "<A>|<B>" (A before B in code-point order; a name may hold '|')."""
    for i, ch in enumerate(key):
        if ch == "|" and key[:i] in arms and key[i + 1:] in arms and key[:i] < key[i + 1:]:
            return key[:i], key[i + 1:]
    shown = ", ".join(sorted(arms)[:20]) or "none"
    raise BadInput(f"pair={key[:80]!r} is not two arms A|B of the chosen runs (by {by}: {shown})")


# per arm: its trajectories by (qid, epoch) for `cells`, by qid for `paired_questions`; its answerable cells, or its
# audited trajectories per qid
ArmsFound = tuple[dict[str, dict[Any, list[TrajectoryRow]]], dict[str, Any]]


def _pair_rows(trajectories: list[TrajectoryRow], arm_of: Callable[[TrajectoryRow], str], index: ItemIndex,
               judge_run_id: str | None, q: ItemQuery) -> PairItemsPage[CellRow] | PairItemsPage[QuestionRow]:
    """What a count of an arm pair counts: the (qid, epoch) cells both arms ran (`cells`, of one complementarity
    class with `cell=`), the questions the paired accuracy test rests on (`paired_questions`) or every question both
    ran (`common_questions`, the corrected difference's), each row with both sides' trajectories; by the analytics'
    own rules (answerable_cells, pair_cells, paired_qids)."""
    if q.pair is None:
        raise BadInput(f"label={q.label}: counts an arm pair, give pair=A|B (a key of the report's pairs)")
    if q.arm is not None or q.partition is not None or q.rank is not None or q.shown is not None:
        raise BadInput(f"label={q.label}: counts an arm pair (arm, partition, rank and shown select items)")
    if q.cell is not None and (q.label != "cells" or q.cell not in COMPLEMENTARITY):
        raise BadInput(f"cell={q.cell[:40]!r}: label=cells takes cell= one of: {', '.join(COMPLEMENTARITY)}")
    pair = q.pair
    cells = q.label == "cells"

    def by_arm() -> ArmsFound:
        """ArmsFound in one pass over the list rows, once for every pair of a report's scope."""
        groups: dict[str, dict[Any, list[TrajectoryRow]]] = defaultdict(lambda: defaultdict(list))
        audited: dict[str, Counter[str]] = defaultdict(Counter)  # audited trajectories per qid: the paired tests'
        for t in trajectories:
            if not q.runs or t.run_id in q.runs:
                arm = arm_of(t)
                groups[arm][(t.qid, t.epoch) if cells else t.qid].append(t)
                if not cells and t.correct is not None:
                    audited[arm][t.qid] += 1
        if cells:
            return dict(groups), answerable_cells((arm, c, t.answerable) for arm, per in groups.items()
                                                  for c, ts in per.items() for t in ts)
        return dict(groups), dict(audited)

    groups, per = index.pairs(trajectories, (q.label, tuple(q.runs), q.by), by_arm)
    a, b = _pair_of(pair, set(groups), q.by)
    keys: list[Any] = index.pairs(trajectories, (q.label, tuple(q.runs), q.by, a, b), lambda: (
        pair_cells(per, a, b) if cells
        else paired_qids(*({q: len(ts) for q, ts in groups[arm].items()} for arm in (a, b))) if q.label == "common_questions"
        else paired_qids(per.get(a, Counter()), per.get(b, Counter()))))  # an arm with none audited has no question

    def listed(ts: list[TrajectoryRow]) -> list[PairTrajectory]:
        return [PairTrajectory(trajectory_id=t.trajectory_id, provider=t.provider, run_id=t.run_id, epoch=t.epoch,
                               correct=t.correct, supported=t.supported, answerable=t.answerable)
                for t in sorted(ts, key=lambda t: t.position)]

    def page(kind: str, total: int, rows: list[S]) -> PairItemsPage[S]:
        return PairItemsPage(label=q.label, pair=pair, a=a, b=b, by=q.by, judge_run_id=judge_run_id, cell=q.cell,
                             offset=q.offset, limit=q.limit, kind=kind, total=total, rows=rows)

    if cells:
        found = keys if q.cell is None else [(c, kind) for c, kind in keys if kind == q.cell]

        def side(arm: str, c: tuple[str, int]) -> CellSide:
            return CellSide(arm=arm, answerable=per[arm][c], trajectories=listed(groups[arm][c]))

        return page("cells", len(found), [
            CellRow(qid=c[0], epoch=c[1], question=groups[a][c][0].question, kind=kind, a=side(a, c), b=side(b, c))
            for c, kind in found[q.offset: q.offset + q.limit]])

    def paired(arm: str, qid: str) -> QuestionSide:
        ts = groups[arm][qid]
        return QuestionSide(arm=arm, audited=per.get(arm, Counter())[qid], correct=sum(bool(t.correct) for t in ts),
                            trajectories=listed(ts))

    return page("questions", len(keys), [
        QuestionRow(qid=qid, question=groups[a][qid][0].question, a=paired(a, qid), b=paired(b, qid))
        for qid in keys[q.offset: q.offset + q.limit]])


def _rank_counts(cur: Cursor, picked: list[Item], rank: int) -> dict[tuple[str, str], int]:
    """Appearances at `rank` of each picked item (rank 1: the item row's own count, `n_rank1`)."""
    if rank == 1:
        return {(it[0], it[1]): it[4] for it in picked}
    streams = sorted({it[0] for it in picked})
    with reading(cur):
        rows = cur.execute("SELECT stream_id, url_normalized, count(*) FROM search_results WHERE rank = ? "
                           "AND stream_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY 1, 2", [rank, streams]).fetchall()
    return {(str(a), str(b)): int(n) for a, b, n in rows}


def _item_rows(cur: Cursor, window: list[tuple[Item, int]], of: dict[str, TrajectoryRow], rank: int | None,
               results: dict[str, Span]) -> list[ItemRow]:
    """The page's items in full: the index row's labels and cell, its surface result (by position) and the
    verdict's rationale (by position), so a page reads a few rows, not the items of its trajectories."""
    if not window:
        return []
    positions = sorted({it[5] for it, _ in window})
    with reading(cur) as schema:  # position ranges let DuckDB skip the row groups the page has nothing in
        names, found = _records(
            cur, f"SELECT position, rank, title, url, domain, snippet FROM {schema}.search_results "
                 "WHERE position BETWEEN $lo AND $hi AND position IN (SELECT unnest($p::BIGINT[]))",
            {"p": positions, "lo": positions[0], "hi": positions[-1]})
        surface = {r[0]: dict(zip(names, r, strict=True)) for r in found}
        where: dict[tuple[str, str], list[str | None]] = {}  # the query of each appearance at `rank`
        if rank is not None:
            streams = sorted({it[0] for it, _ in window})
            near = "position BETWEEN $lo AND $hi AND stream_id IN (SELECT unnest($s::VARCHAR[]))"
            span = {"lo": min(of[st].position for st in streams), "hi": max(results.get(st, (0, 0, 0, 0))[3] for st in streams)}
            for stream, url, query in cur.execute(
                    f"WITH search_results AS (SELECT * FROM {schema}.search_results WHERE {near}), "
                    f"search_calls AS (SELECT * FROM {schema}.search_calls WHERE {near}) "
                    "SELECT r.stream_id, r.url_normalized, c.query FROM search_results r "
                    "LEFT JOIN search_calls c ON c.stream_id = r.stream_id AND c.call_id = r.call_id "
                    "WHERE r.rank = $rank ORDER BY r.position", {"s": streams, "rank": rank, **span}).fetchall():
                where.setdefault((stream, url), []).append(query)
    why = rationales(cur, [it[6] for it, _ in window if it[6] >= 0])
    out = []
    for it, k in window:
        t, flags = of[it[0]], it[2]
        valid = True if flags & _VALID else False if flags & _INVALID else None
        labels: dict[str, Any] = {name: bool(flags & bit) for name, bit in _BITS.items()}  # ItemRow keywords
        row = ItemRow(**surface.get(it[5], {}), url_normalized=it[1], **_who(t), question=t.question, valid=valid,
                      part=CELLS[it[3]] if it[3] >= 0 else None, n_rank1=it[4],
                      rationale=why.get(it[6]) if it[6] >= 0 else None, **labels)
        if rank is not None:
            queries = where.get((it[0], it[1]), [])
            row.appearance = Appearance(rank=rank, index=k + 1, of=len(queries),
                                        query=queries[k] if k < len(queries) else None)
        out.append(row)
    return out


def _labelled(cur: Cursor, trajectories: list[TrajectoryRow], trs: list[TrajectoryRow], index: ItemIndex,
              found_items: tuple[dict[str, list[Item]], dict[str, Span]], judge_run_id: str | None,
              q: ItemQuery) -> tuple[int, list[ItemRow]]:
    """The human audit labels one label count of the judge-error correction counts (analytics `counted_in`), each
    with its judge item in full, in trajectory order: total and one page."""
    cases = index.pairs(trajectories, ("labels", judge_run_id, tuple(q.runs), q.by),
                        lambda: correction_labels(cur, judge_run_id=judge_run_id, run_ids=q.runs, by=q.by))
    order = {t.trajectory_id: i for i, t in enumerate(trs)}
    found = sorted((c for c in cases if c.trajectory_id in order and q.label in counted_in(c)),
                   key=lambda c: (order[c.trajectory_id], c.url_normalized, c.label))
    page = found[q.offset: q.offset + q.limit]
    by_stream, results = found_items  # the item index its caller read
    of = {t.stream_id: t for t in trs}
    stream = {t.trajectory_id: t.stream_id for t in trs}
    at = {(it[0], it[1]): it for c in page for it in by_stream.get(stream[c.trajectory_id], ())}
    window = [(at[key], 0) for c in page if (key := (stream[c.trajectory_id], c.url_normalized)) in at]
    full = {(r.trajectory_id, r.url_normalized): r for r in _item_rows(cur, window, of, None, results)}
    rows = []
    for c in page:  # an item the index lacks (none should) keeps its row, with what the case knows
        row = full.get((c.trajectory_id, c.url_normalized)) or ItemRow(
            url_normalized=c.url_normalized, **_who(of[stream[c.trajectory_id]]))
        rows.append(msgspec.structs.replace(row, audit_label=c.label, judge_value=c.judge_value,
                                            human_value=c.human_value))
    return len(found), rows


def _cache_hits(cur: Cursor, trs: list[TrajectoryRow], q: ItemQuery) -> tuple[int, list[FetchRow]]:
    """The fetches of the trajectories answered from the cache (`fetch_cache_hits`), in order: total and one page."""
    of = {t.stream_id: t for t in trs}
    with reading(cur):
        names, got = _records(cur, "SELECT c.stream_id, c.position, c.call_id, c.doc_id, c.status, c.cache_hit, c.n_tokens, f.url "
                         "FROM fetch_completions c LEFT JOIN (SELECT stream_id, call_id, doc_id, any_value(url) AS url "
                         "FROM fetch_calls GROUP BY ALL) f ON f.stream_id = c.stream_id AND f.call_id = c.call_id "
                         f"AND f.doc_id IS NOT DISTINCT FROM c.doc_id WHERE {fetch_cache_hit('c')} "
                         "AND c.stream_id IN (SELECT unnest($s::VARCHAR[])) ORDER BY c.position", {"s": list(of)})
    rows = [FetchRow(**dict(zip(names, r, strict=True)), **_who(of[r[0]])) for r in got[q.offset: q.offset + q.limit]]
    return len(got), rows


def _results(cur: Cursor, trs: list[TrajectoryRow], results: dict[str, Span], want: bool | None,
             q: ItemQuery) -> tuple[int, list[ResultRow]]:
    """Search results of the trajectories (all, or those shown / not shown to the model): total and one page."""
    def n(st: str) -> int:
        got = results.get(st, (0, 0, 0, 0))
        return got[0] if want is None else got[1] if want else got[0] - got[1]

    total = sum(n(t.stream_id) for t in trs)
    streams, seen = [], 0
    for t in trs:  # the streams this page's rows come from, in order
        k = n(t.stream_id)
        if k and seen + k > q.offset:
            streams.append(t)
        seen += k
        if seen >= q.offset + q.limit:
            break
    skip = q.offset - sum(n(t.stream_id) for t in trs[: trs.index(streams[0])]) if streams else 0
    rows: list[ResultRow] = []
    if streams:
        of = {t.stream_id: t for t in streams}
        cond = "" if want is None else "AND sh.shown" if want else "AND NOT sh.shown"
        # every event of a stream comes after its trajectory.started: the range lets DuckDB skip most row groups
        lo = min(t.position for t in streams)
        hi = max(results[st][3] for st in of if st in results)
        near = "position BETWEEN $lo AND $hi AND stream_id IN (SELECT unnest($s::VARCHAR[]))"
        with reading(cur) as schema:  # the relations narrowed to the page's streams, under their own names
            names, got = _records(cur, f"WITH search_results AS (SELECT * FROM {schema}.search_results WHERE {near}), "
                             f"search_calls AS (SELECT * FROM {schema}.search_calls WHERE {near}), shown AS "
                             f"(SELECT * FROM {schema}.shown WHERE {near}), "
                             f"{shown.SHOWN_CTE} SELECT r.stream_id, r.position, r.rank, r.title, r.url, "
                             "r.url_normalized, r.domain, sh.shown, sh.shown_by, c.query FROM search_results r "
                             "JOIN sh ON sh.position = r.position LEFT JOIN search_calls c ON c.stream_id = r.stream_id "
                             f"AND c.call_id = r.call_id WHERE true {cond} ORDER BY r.position", {"s": list(of), "lo": lo, "hi": hi})
        order = {st: i for i, st in enumerate(of)}
        got.sort(key=lambda r: (order[r[0]], r[1]))  # by stream, then position
        rows = [ResultRow(**dict(zip(names, r, strict=True)), **_who(of[r[0]])) for r in got[skip: skip + q.limit]]
    return total, rows

def judge_compare(cur: Cursor, a: str, b: str, offset: int = 0, limit: int = COMPARE_ROWS) -> ComparePage:
    """Two judge runs item by item with docs/concepts/statistics.md comparison (`judge compare`: its agreement, kappa and
    disagreeing items, the one definition): the disagreeing items first, then those valid in both, then the rest
    (a verdict in one run only, or invalid in one), one page of rows with both runs' labels and rationales."""
    if limit < 1 or limit > LIST_MAX or offset < 0:
        raise BadInput(f"limit must be 1..{LIST_MAX} and offset >= 0")
    comparison = compare_judge_runs(cur, a, b)  # BadInput for an unknown judge run
    differs = {(d.trajectory_id, d.url): d.differs for d in comparison.disagreements}
    cols = ", ".join(f"{s}.{c} AS {s}_{c}" for s in ("a", "b") for c in (
        "valid", "snippet_supports_gold", "snippet_contradicts_gold", "snippet_relevant", "has_page", "page_supports_gold"))
    with reading(cur):
        names, found = _records(cur, f"""WITH a AS ({first_verdicts("$a")}), b AS ({first_verdicts("$b")}), {TRAJECTORIES_CTE}
SELECT coalesce(a.trajectory_id, b.trajectory_id) AS trajectory_id, coalesce(a.url_normalized, b.url_normalized)
       AS url_normalized, {cols}, a.position AS a_position, b.position AS b_position, tr.provider, tr.qid
FROM a FULL OUTER JOIN b ON a.trajectory_id = b.trajectory_id AND a.url_normalized = b.url_normalized
LEFT JOIN tr ON tr.trajectory_id = coalesce(a.trajectory_id, b.trajectory_id)""", {"a": a, "b": b})
    rows = [dict(zip(names, r, strict=True)) for r in found]  # each item's columns, by name, while it is sorted
    for r in rows:
        key = (r["trajectory_id"], r["url_normalized"])
        r["differs"] = differs.get(key, [])
        both = bool(r["a_valid"]) and bool(r["b_valid"]) and r["provider"] is not None
        r["status"] = "disagree" if r["differs"] else "agree" if both else (
            "not current" if r["provider"] is None else "only in B" if r["a_valid"] is None
            else "only in A" if r["b_valid"] is None else "invalid in A" if not r["a_valid"] else "invalid in B")
        for side in ("a", "b"):
            r[side] = None if not r[f"{side}_valid"] else {
                f"{s}.{c}": (r[f"{side}_page_{c}"] if r[f"{side}_has_page"] else None) if s == "page"
                else r[f"{side}_snippet_{c}"] for s, c in COMPARED}
    rank = {"disagree": 0, "agree": 1}
    rows.sort(key=lambda r: (rank.get(r["status"], 2), r["trajectory_id"], r["url_normalized"]))
    page = rows[offset: offset + limit]
    why = rationales(cur, [r[k] for r in page for k in ("a_position", "b_position") if r[k] is not None])
    with reading(cur):
        urls = dict(cur.execute(
            "SELECT url_normalized, arg_min(url, position) FROM search_results WHERE url_normalized IN "
            "(SELECT unnest(?::VARCHAR[])) GROUP BY 1", [[r["url_normalized"] for r in page]]).fetchall()) if page else {}
    out = [CompareRow(trajectory_id=r["trajectory_id"], url_normalized=r["url_normalized"],
                      url=urls.get(r["url_normalized"], r["url_normalized"]), provider=r["provider"], qid=r["qid"],
                      status=r["status"], differs=r["differs"], a=r["a"], b=r["b"],
                      a_rationale=why.get(r["a_position"]), b_rationale=why.get(r["b_position"])) for r in page]
    return ComparePage(a=a, b=b, items=len(rows), valid_in_both=comparison.items_valid_in_both,
                       disagreeing=len(comparison.disagreements), offset=offset, limit=limit, rows=out,
                       # docs/concepts/statistics.md comparison (Cohen's kappa, 2x2 tables, partitions under A and B),
                       # as `judge compare` prints it
                       comparison=comparison.summary())


def run_sql(cur: Cursor, sql: str) -> SqlResult:
    """Rows of a read-only query (pipeline._querying: the rules of `searchtrace sql`), at most SQL_ROWS of them."""
    result = query(cur, sql, limit=SQL_ROWS, seconds=TIMEOUT_S)  # a run's read session has the same limit
    return SqlResult(columns=result.columns, rows=[list(r) for r in result.rows], truncated=result.truncated)
