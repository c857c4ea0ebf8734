"""Every answer of the explorer's JSON API is exactly a Struct of analytics' read model: its body decodes strictly
into the route's Struct (every key known, every value of its declared type) and encodes back to the same bytes."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import msgspec

from searchtrace.analytics import (
    ApiError,
    CellRow,
    ComparePage,
    FetchRow,
    ItemRow,
    ItemsPage,
    JudgeRunRow,
    PairItemsPage,
    QuestionPage,
    QuestionRow,
    ReportLinks,
    ReportNotes,
    ResultRow,
    RunRow,
    SqlResult,
    TrajectoryListPage,
    TrajectoryPage,
    TrajectoryRow,
    Vocabulary,
)
from tests.analytics.test_cost_questions import db  # noqa: F401  # a store with a fetch cache hit
from tests.web.test_api import get_all


def test_every_route_answers_exactly_its_struct(demo_db: Path) -> None:
    (listed,) = get_all(demo_db, ("GET", "/api/trajectories?limit=500", None))
    rows = msgspec.json.decode(listed.content, type=TrajectoryListPage, strict=True).trajectories
    tid, qid = rows[0].trajectory_id, rows[0].qid
    providers = sorted({r.provider for r in rows})
    pair = quote(f"{providers[0]}|{providers[1]}")
    (judge,) = get_all(demo_db, ("GET", "/api/judge-runs", None))
    jr = quote(msgspec.json.decode(judge.content, type=list[JudgeRunRow])[0].judge_run_id)
    routes: list[tuple[str, str, object, type]] = [
        ("GET", "/api/runs", None, list[RunRow]),
        ("GET", "/api/judge-runs", None, list[JudgeRunRow]),
        ("GET", "/api/trajectories?partition=SMART&limit=3", None, TrajectoryListPage),
        ("GET", f"/api/trajectories/{quote(tid, safe='')}", None, TrajectoryPage),
        ("GET", f"/api/questions/{quote(qid, safe='')}", None, QuestionPage),
        ("GET", "/api/report-links", None, ReportLinks),
        ("GET", "/api/report-notes?bootstrap=0", None, ReportNotes),
        ("GET", "/api/items?label=correct", None, ItemsPage[TrajectoryRow]),
        ("GET", "/api/items?label=valid_items", None, ItemsPage[ItemRow]),
        ("GET", "/api/items?label=surface_supported_items&rank=1", None, ItemsPage[ItemRow]),
        ("GET", "/api/items?label=results_shown&limit=20", None, ItemsPage[ResultRow]),
        ("GET", f"/api/items?label=cells&pair={pair}", None, PairItemsPage[CellRow]),
        ("GET", f"/api/items?label=paired_questions&pair={pair}", None, PairItemsPage[QuestionRow]),
        ("GET", f"/api/judge-compare?a={jr}&b={jr}&limit=5", None, ComparePage),
        ("POST", "/api/sql", {"sql": "SELECT provider, count(*) AS n FROM v_trajectories GROUP BY 1"}, SqlResult),
        ("POST", "/api/sql", {"sql": "DELETE FROM events"}, ApiError),
        ("GET", "/api/items?label=nope", None, ApiError),
        ("GET", "/api/vocabulary", None, Vocabulary),
    ]
    answers = get_all(demo_db, *[(m, u, b) for m, u, b, _ in routes])
    kinds = set()
    for (_, url, _, kind), r in zip(routes, answers, strict=True):
        assert (r.status_code == 200) is (kind is not ApiError), (url, r.status_code, r.text[:200])
        body = msgspec.json.decode(r.content, type=kind, strict=True)
        assert msgspec.json.encode(body) == r.content, url  # no key the Struct lacks, none it adds, same order
        if isinstance(body, ItemsPage | PairItemsPage):
            kinds.add(body.kind)
            assert body.rows, url  # the demo has rows of every kind asked for: the row Structs are exercised
    assert kinds == {"trajectories", "items", "appearances", "results", "cells", "questions"}


def test_a_fetch_cache_hit_answers_exactly_its_struct(db: Path) -> None:  # noqa: F811
    (r,) = get_all(db, ("GET", "/api/items?label=fetch_cache_hits", None))
    page = msgspec.json.decode(r.content, type=ItemsPage[FetchRow], strict=True)
    assert msgspec.json.encode(page) == r.content
    assert page.kind == "fetches" and page.total == len(page.rows) == 1 and page.rows[0].cache_hit is True


def test_every_answer_has_a_json_schema() -> None:
    """The records generate a JSON Schema (a field typed `object` or a bare union of lists would not)."""
    answers = [RunRow, JudgeRunRow, TrajectoryListPage, TrajectoryPage, QuestionPage, ReportLinks, ReportNotes,
               ItemsPage[TrajectoryRow], ItemsPage[ItemRow], ItemsPage[FetchRow], ItemsPage[ResultRow],
               PairItemsPage[CellRow], PairItemsPage[QuestionRow], ComparePage, SqlResult, Vocabulary, ApiError]
    _, components = msgspec.json.schema_components(answers)
    assert {"TrajectoryRow", "ItemEvidence", "AlignedCell", "Cell", "Link", "Appearance"} <= set(components)
    assert components["CellRow"]["required"][3] == "class"  # the JSON key, not the attribute's name
