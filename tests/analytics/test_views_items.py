"""The documented views (every column in VIEWS.md) and `judge_items`, the judge's input (docs/concepts/judge.md)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from searchtrace.analytics import judge_items
from searchtrace.analytics._views import USER_VIEWS
from searchtrace.store import EventLog
from tests.analytics.analytics_fixture import import_fixture

DOC = (Path(__file__).resolve().parents[2] / "analytics" / "VIEWS.md").read_text(encoding="utf-8")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "v.duckdb"
    import_fixture(path, tmp_path / "in")
    return path


def test_every_view_column_is_documented(db: Path) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        for view in USER_VIEWS:
            section = DOC.split(f"## {view} ", 1)
            assert len(section) == 2, f"{view} has no section in VIEWS.md"
            body = section[1].split("\n## ", 1)[0]
            words = set(re.findall(r"[a-z_0-9]+", body))
            cols = [d[0] for d in con.execute(f"SELECT * FROM {view} LIMIT 0").description]
            missing = [c for c in cols if c not in words]
            assert not missing, f"{view}: undocumented columns {missing}"
    finally:
        con.close()


def test_views_agree_with_the_fixture(db: Path) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        items = con.execute(
            "SELECT url_normalized, n_appearances, n_rank1, n_fetches, fetched, page_visible FROM v_judge_items "
            "WHERE trajectory_id = 't-a1' ORDER BY first_position"
        ).fetchall()
        answers = dict(con.execute("SELECT trajectory_id, semantic_match FROM v_answers").fetchall())
        traj = con.execute(
            "SELECT n_searches, n_fetches, input_tokens, finish_reason FROM v_trajectories WHERE trajectory_id = 't-a2'"
        ).fetchone()
        fetches = con.execute("SELECT status FROM v_fetches WHERE trajectory_id = 't-a1' ORDER BY position").fetchall()
    finally:
        con.close()
    assert items == [
        ("https://example.com/a", 2, 2, 0, False, False),
        ("https://other.org/b", 1, 0, 2, True, True),
        ("https://third.net/c", 1, 0, 0, False, False),
        ("https://fourth.io/d", 1, 0, 1, True, False),
    ]
    assert answers == {"t-a1": True, "t-a2": False, "t-b1": None, "t-g1": False, "t-g2": True}
    assert traj == (1, 0, 50, "max_iterations")
    assert [f[0] for f in fetches] == ["ok", "timeout", "ok"]


def test_judge_items_for_the_judge(db: Path) -> None:
    with EventLog(db) as log:
        cur = log.cursor()
        items = judge_items(cur)
        pending = judge_items(cur, without_verdict_in="j2", trajectory_ids=["t-a1"])
        fast = judge_items(cur, use_projections=True)
        cur.close()
        assert fast == items
        assert len(items) == 4 + 2 + 2 + 2
        first = items[0]
        assert (first.trajectory_id, first.url_normalized, first.doc_id, first.rank) == (
            "t-a1", "https://example.com/a", "d1", 1
        )
        assert first.url == "https://Example.com/a?utm_source=x" and first.metadata == {"age": "1d"}
        assert (first.question, first.gold_answer, first.final_answer) == ("What is q1?", "Paris", "paris.")
        page_item = next(i for i in items if i.url_normalized == "https://other.org/b" and i.trajectory_id == "t-a1")
        assert page_item.fetched and page_item.page_visible and page_item.page_digest is not None
        assert log.get_blob(page_item.page_digest) == b"page b says Paris"
        failed = next(i for i in items if i.url_normalized == "https://fourth.io/d")
        assert failed.fetched and not failed.page_visible and failed.page_digest is None
        assert next(i for i in items if i.trajectory_id == "t-a2").final_answer is None
        assert [i.url_normalized for i in pending] == [
            "https://other.org/b", "https://third.net/c", "https://fourth.io/d"
        ]


def test_fetch_on_a_later_appearance_and_refused_calls(tmp_path: Path) -> None:
    """A fetch of any appearance's doc_id makes the item fetched; a refused tool call is not a fetch."""
    from searchtrace.analytics import build_report
    from searchtrace.store import (
        FetchCalled,
        FetchCompleted,
        NewEvent,
        Payload,
        SearchCalled,
        SearchResult,
        ToolRefused,
        TrajectoryStarted,
    )

    def res(doc: str, rank: int, url: str, norm: str) -> SearchResult:
        return SearchResult(call_id="s1", doc_id=doc, rank=rank, title="t", url=url, url_normalized=norm,
                            domain="a.org", snippet="s")

    payloads: list[Payload] = [
        TrajectoryStarted(trajectory_id="t1", qid="q1", provider="p", question="Q", gold_answer="G"),
        SearchCalled(call_id="s1", iteration=1, query="q"),
        res("d1", 1, "https://a.org/x", "https://a.org/x"),
        res("d2", 2, "https://b.org/y", "https://b.org/y"),
        SearchCalled(call_id="s2", iteration=2, query="q2"),
        res("d3", 1, "https://A.org/x/#top", "https://a.org/x"),
        ToolRefused(call_id="f0", iteration=2, name="fetch_page", arguments='{"doc_id": "d9"}', reason="unknown doc_id"),
        FetchCalled(call_id="f1", iteration=2, doc_id="d3", url="https://A.org/x/#top"),
        FetchCompleted(call_id="f1", doc_id="d3", status="http_error", content_digest=None, n_bytes=0, n_tokens=0,
                       cache_hit=False, latency_ms=5.0),
        FetchCalled(call_id="f2", iteration=3, doc_id="d3", url="https://A.org/x/#top"),
        FetchCompleted(call_id="f2", doc_id="d3", status="ok", content_digest="c" * 64, n_bytes=5, n_tokens=2,
                       cache_hit=False, latency_ms=5.0),
    ]
    with EventLog(tmp_path / "f.duckdb") as log:
        log.append([NewEvent(stream_id="traj:t1", run_id="r", payload=p) for p in payloads])
        cur = log.cursor()
        items = {i.url_normalized: i for i in judge_items(cur)}
        rep = build_report(cur).report
        cur.close()
    assert set(items) == {"https://a.org/x", "https://b.org/y"}
    x = items["https://a.org/x"]
    assert (x.doc_id, x.n_appearances, x.fetched, x.page_visible, x.page_digest) == ("d1", 2, True, True, "c" * 64)
    assert not items["https://b.org/y"].fetched
    p = rep.providers["p"]
    assert p.fetches_per_trajectory == 2.0 and p.searches_per_trajectory == 2.0 and p.items == 2
