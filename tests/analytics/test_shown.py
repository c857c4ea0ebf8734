"""docs/concepts/shown.md "Shown": the replay's rule (URL raw or normalised, doc_id, long title, only after the search completed),
and the same outcome through the materialised table whichever way a store is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

from searchtrace import pipeline
from searchtrace.adapters import SearchHit, norm_url
from searchtrace.analytics import build_report, judge_items, projections, shown
from searchtrace.engine import Builder, canonical
from searchtrace.store import (
    EventLog,
    JudgeVerdict,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCompleted,
    SearchResult,
    Usage,
    digest,
)
from tests.builders import run_cli

TITLE = "The Long Title Of Result Two"  # 28 characters: long enough to count verbatim


def _result(call: str, doc: str, rank: int, url: str, title: str) -> SearchResult:
    return SearchResult(call_id=call, doc_id=doc, rank=rank, title=title, url=url, url_normalized=norm_url(url),
                        domain="example.org", snippet="s")


def _done(call: str, n: int) -> SearchCompleted:
    return SearchCompleted(call_id=call, status="ok", n_results=n, latency_ms=1.0)


def _asked(*messages: dict[str, Any]) -> tuple[ModelResponded, dict[str, Any]]:
    """A model turn whose request held `messages`, and those messages by digest."""
    by = {digest(canonical(m)): m for m in messages}
    return ModelResponded(iteration=1, text=None, request_messages=list(by)), by


R1 = _result("s1", "d1", 1, "https://Example.org/a/?utm_source=x&b=2", "Short one")
R2 = _result("s1", "d2", 2, "https://example.org/two", TITLE)
R3 = _result("s1", "d3", 3, "https://example.org/three", "Tiny title")  # 10 characters: too short to count
R4 = _result("s1", "d14", 4, "https://example.org/four", "Another Long Result Title")


def test_each_part_of_the_rule() -> None:
    early, m0 = _asked({"role": "user", "content": f"see https://example.org/a?b=2 and {TITLE}"})
    later, m1 = _asked(
        {"role": "user", "content": "question"},
        # the URL normalised (scheme/host case, trailing slash, utm_ dropped) inside a Markdown link
        {"role": "tool", "tool_call_id": "c1", "content": "[one](HTTPS://EXAMPLE.ORG/a?b=2)."},
        # the title verbatim, escaped inside JSON text of a tool result
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps({"results": [{"title": TITLE, "x": "é"}]})},
        # a short title does not count; d1 inside d14 is not d1; d14 as an argument does
        {"role": "assistant", "content": "Tiny title d10",
         "tool_calls": [{"id": "c3", "function": {"name": "fetch", "arguments": json.dumps({"doc_id": "d14"})}}]},
    )
    events: list[tuple[int, Payload]] = [(1, R1), (2, R2), (3, R3), (4, R4), (5, early), (6, _done("s1", 4)),
                                         (7, later)]
    got = shown.replay(events, {**m0, **m1})
    # the request at position 5 came before the search completed (6): it shows nothing, though it names R1 and R2
    assert got == {1: shown.Shown(7, "url"), 2: shown.Shown(7, "title"), 4: shown.Shown(7, "doc_id")}


def test_unknown_requests_count_as_showing() -> None:
    no_requests: list[tuple[int, Payload]] = [(1, R1), (2, _done("s1", 1)), (3, ModelResponded(iteration=1, text="x"))]
    assert shown.replay(no_requests, {}) == {1: shown.Shown(None, "assumed")}
    turn, msgs = _asked({"role": "user", "content": "nothing"})
    missing = ModelResponded(iteration=2, text=None, request_messages=["0" * 64])  # its blob is not in the store
    open_call = _result("s2", "d5", 1, "https://example.org/five", "t")
    events: list[tuple[int, Payload]] = [(1, R1), (2, _done("s1", 1)), (3, turn), (4, open_call), (6, missing)]
    assert shown.replay(events, msgs) == {1: shown.Shown(6, "assumed")}  # R2's call s2 never completed


def _store(db: Path) -> None:
    """One trajectory recorded through the Builder: 3 results, a model request that hands only the first on, and a
    fetch of the third that no request shows."""
    b = Builder("r:tavily:q1")
    b.start(qid="q1", provider="tavily", question="q?", gold_answer="g")
    hits = [SearchHit(rank=i, title=f"t{i}", url=f"https://example.org/{i}", snippet="s", domain="example.org")
            for i in (1, 2, 3)]
    b.model(text=None, usage=Usage(), latency_ms=1, finish_reason="tool_calls", raw=None,
            messages=[{"role": "user", "content": "q?"}])
    b.search(query="q", provider="tavily", status="ok", hits=hits, latency_ms=1)
    b.fetch(url="https://example.org/3", status="ok", content="g is the answer", n_tokens=4, latency_ms=1)
    b.model(text="FINAL ANSWER: g", usage=Usage(), latency_ms=1, finish_reason="stop", raw=None,
            messages=[{"role": "user", "content": "q?"}, {"role": "tool", "content": "https://example.org/1"}])
    b.final("g")
    b.finish("answered")
    payloads, blobs = b.take()
    with EventLog(db) as log:
        log.append([NewEvent(stream_id="traj:r:tavily:q1", run_id="r", payload=p) for p in payloads], blobs=blobs)


def test_every_reader_sees_the_same_table(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    _store(db)
    with EventLog(db, read_only=True) as log:  # read-only: the in-memory catalog's table
        cur = log.cursor()
        items = judge_items(cur)
        cur.close()
    assert [(i.url_normalized, i.snippet_shown, i.page_visible) for i in items] == [
        ("https://example.org/1", True, False), ("https://example.org/3", False, True)]  # shown, or fetched only
    judged = run_cli("judge", "--db", str(db), "--sandbox", "--json")
    assert judged.code == 0, judged.err
    with EventLog(db, read_only=True) as log:  # no snippet verdict for the URL never shown
        verdicts = {v.payload.item.url_normalized: v.payload for v in log.read(types=["judge.verdict"])
                    if isinstance(v.payload, JudgeVerdict)}
    one, three = verdicts["https://example.org/1"], verdicts["https://example.org/3"]
    assert one.labels is not None and one.labels.snippet is not None and one.labels.page is None
    assert three.labels is not None and three.labels.snippet is None and three.labels.page is not None
    with EventLog(db) as log:  # writable: the proj table (and the v_* views for `searchtrace sql`)
        cur = log.cursor()
        built = build_report(cur)
        cur.close()
    p = built.report.providers["tavily"]
    assert (p.results_returned, p.results_shown, p.shown_share) == (3, 1, pytest.approx(1 / 3))
    assert p.items == 2 and p.valid_items == 2
    assert not built.notes
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT rank, shown, shown_by FROM v_shown ORDER BY rank").fetchall()
        assert rows == [(1, True, "url"), (2, False, None), (3, False, None)]
        assert con.execute("SELECT url, snippet_shown, fetched FROM v_judge_items ORDER BY url").fetchall() == [
            ("https://example.org/1", True, False), ("https://example.org/3", False, True)]
    finally:
        con.close()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shown")
    anyio.run(lambda: pipeline.demo(out / "d.duckdb", out, 4, progress=False))
    return out / "d.duckdb"


def test_our_agent_shows_every_result(demo_db: Path) -> None:
    with EventLog(demo_db) as log:
        cur = log.cursor()
        built = build_report(cur)
        by = cur.execute("SELECT DISTINCT shown_by FROM v_shown").fetchall()
        cur.close()
    assert by == [("url",)]  # every result by a request that holds it, none assumed
    assert not any("without their model requests" in n for n in built.notes)
    for name, p in built.report.providers.items():
        assert p.results_returned > 0 and p.results_shown == p.results_returned, name
        assert p.shown_share == 1.0


def _shown_of(db: Path, *, read_only: bool) -> tuple[int, int]:
    with EventLog(db, read_only=read_only) as log:
        cur = log.cursor()
        p = build_report(cur, writable=not read_only).report.providers["tavily"]
        cur.close()
    return p.results_returned, p.results_shown


def test_a_store_with_the_old_shown_state_reads_the_same(tmp_path: Path) -> None:
    """Stores written before `shown` was a projection keep its state in `proj.shown_state`, not `projection_state`:
    readers ignore that table (read-only: the in-memory one; writable: `proj.shown` built again, the old table gone)."""
    db = tmp_path / "old.duckdb"
    _store(db)
    assert _shown_of(db, read_only=False) == (3, 1)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM projection_state WHERE name = 'shown'")  # the layout the earlier code left
    con.execute("CREATE TABLE proj.shown_state (version VARCHAR, last_position BIGINT)")
    con.execute("INSERT INTO proj.shown_state SELECT 'shown/1', max(position) FROM events")
    con.execute("UPDATE proj.shown SET shown = true, shown_by = 'url'")  # not trusted without a state row of its own
    con.close()
    assert _shown_of(db, read_only=True) == (3, 1)
    with EventLog(db, read_only=True) as log:
        assert not projections.is_current(log.cursor())
    assert _shown_of(db, read_only=False) == (3, 1)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert projections.is_current(con)
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'shown_state'").fetchone() == (0,)
        assert con.execute("SELECT last_position FROM projection_state WHERE name = 'shown' ORDER BY n DESC LIMIT 1"
                           ).fetchone() == con.execute("SELECT max(position) FROM events").fetchone()
    finally:
        con.close()
