"""docs/how-to/compare.md in a real headless Chromium: the report page's every count opens the items it counts (as many as it
says), judge compare shows the disagreements of two judge runs that differ, a runaway trajectory stays bounded,
every page fits 400 px without horizontal scrolling; no console error, no request leaves the app."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import duckdb
import pytest

from searchtrace.analytics import Vocabulary, build_report
from searchtrace.store import EventLog
from tests.analytics.test_audit import read_tsv, write_tsv
from tests.builders import result, run_cli, search, traj, write_jsonl
from tests.web.servers import View, start_view
from tests.web.test_browser import ARGS, CHROMIUM, playwright_sync

FLIPPED = 5  # items whose snippet.supports_gold the second judge run reverses
TURNS = 400  # model turns of the runaway trajectory
WORDS = Vocabulary()
ROWS = {"trajectories": "trajectory-row", "cells": "cell-row", "questions": "question-row"}  # else item-row
# every numeric cell of the report page: a link to what it counts, or marked as no count (a rate, interval, p, ...)
BARE = ("() => [...document.querySelectorAll('#main table td.num')].filter((td) => !td.querySelector("
        "'[data-testid=count-link], [data-not-count]')).map((td) => td.closest('tr').firstChild.textContent)")


@pytest.fixture(scope="module")
def store(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store, a second judge run that reverses FLIPPED snippet labels and leaves the last item without a
    verdict (the report notes it), human labels on an audit sample of it (clear ones, two unclear: the judge-error
    correction's counts), and an imported runaway trajectory of TURNS turns of ten results each (so the store holds
    two runs)."""
    tmp = tmp_path_factory.mktemp("explorer-report")
    db = tmp / "s.duckdb"
    shutil.copyfile(demo_db, db)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT payload FROM events WHERE type = 'judge.verdict' ORDER BY position").fetchall()
    con.close()
    flipped = []
    for (payload,) in rows:
        v = json.loads(payload)
        labels = v["labels"]
        if labels is not None and v["valid"] and len(flipped) < FLIPPED:
            labels["snippet"]["supports_gold"] = not labels["snippet"]["supports_gold"]
            labels["rationale"] = "flipped on purpose"
        flipped.append({"judge_run_id": "j-flip", "trajectory_id": v["item"]["trajectory_id"],
                        "url": v["item"]["url_normalized"], "valid": v["valid"], "labels": labels,
                        "invalid_reason": v.get("invalid_reason")})
    steps: list[dict[str, Any]] = []
    for i in range(1, TURNS + 1):
        steps.append({"kind": "model", "iteration": i, "usage": {"input_tokens": 10, "output_tokens": 5,
                                                                 "reasoning_tokens": 0}, "latency_ms": 5})
        steps.append(search(i, f"c{i}", [result(f"d{i}-{k}", k, f"https://loop.example/{i}/{k}", "again " * 30)
                                         for k in range(1, 11)]))
    runaway = traj("runaway", "brave", "loop", "never", None, steps, stop="max_iterations")
    for args in (("--judgments", str(write_jsonl(tmp / "j.jsonl", flipped[:-1]))),
                 (str(write_jsonl(tmp / "t.jsonl", [runaway])),)):
        code, _, err = run_cli("import", "--db", str(db), *args)
        assert code == 0, err
    tsv = tmp / "audit.tsv"
    code, _, err = run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(tsv))
    assert code == 0, err
    rows = [r for r in read_tsv(tsv) if r["surface"] == "snippet"]
    flip = {"true": "false", "false": "true"}
    write_tsv(tsv, [dict(r, human_value="unclear" if i < 2 else flip[r["judge_value"]] if i % 3 == 0 else r["judge_value"])
                    for i, r in enumerate(rows)])
    code, _, err = run_cli("audit", "import", "--db", str(db), str(tsv))
    assert code == 0, err
    return db


@pytest.fixture(scope="module")
def served(store: Path) -> Iterator[View]:
    v = start_view(store)
    try:
        yield v
    finally:
        v.proc.terminate()
        v.proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def page(served: View) -> Iterator[tuple[Any, list[str]]]:
    """One browser, one tab for the module, with every console error, page error, failed or outside request noted."""
    problems: list[str] = []
    with playwright_sync.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            p = b.new_page(viewport={"width": 1100, "height": 820})
            p.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
            p.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            p.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            p.on("request", lambda r: None if r.url.startswith((served.root, "data:", "blob:")) else problems.append(f"outside: {r.url}"))
            p.goto(f"{served.root}/?token={served.token}")  # the printed URL; the cookie carries the rest
            p.get_by_test_id("trajectory-row").first.wait_for()
            yield p, problems
        finally:
            b.close()


def show(p: Any, hash_: str) -> None:
    """Navigate inside the app and wait until the page is drawn."""
    p.evaluate("h => { document.body.dataset.ready = ''; location.hash = h; }", hash_)
    p.wait_for_function("h => document.body.dataset.ready === h", arg=hash_)


def recorded_run(store: Path) -> str:
    con = duckdb.connect(str(store), read_only=True)
    row = con.execute("SELECT run_id FROM events WHERE type = 'run.started'").fetchone()
    con.close()
    assert row is not None
    return str(row[0])


def test_every_count_of_the_report_opens_exactly_what_it_counts(page: tuple[Any, list[str]], store: Path) -> None:
    p, problems = page
    show(p, "#/report")
    assert "2 runs" in p.get_by_test_id("choose-run").inner_text()  # several runs: the chooser, not raw JSON
    run = recorded_run(store)
    p.locator(f'[data-testid="report-run"]:text-is("{run}")').click()
    p.get_by_test_id("report-table").wait_for()
    assert "95% interval" in p.get_by_test_id("report-table").inner_text()  # the intervals
    assert p.get_by_test_id("paired").locator("tbody tr").count() == 3  # three provider pairs, with p and Holm
    assert "p Holm" in p.get_by_test_id("paired").inner_text()
    links = p.get_by_test_id("count-link")
    counts = [(links.nth(i).get_attribute("href"), links.nth(i).get_attribute("data-key"),
               links.nth(i).get_attribute("data-count")) for i in range(links.count())]
    counted = [(h, k, int(n)) for h, k, n in counts if n is not None]
    keys = {k for _, k, _ in counted}
    assert {"trajectories", "audited", "correct", "items", "valid_items", "partition.SMART", "partition.MISSED",
            "partition.BLIND", "partition.NO-OP", "discovered_support", "surface_supported_items",
            "surface_contradicted_items", "surface_answerable_queries", "results_returned", "results_shown",
            "fetch_cache_hits", "complementarity.a_only", "complementarity.b_only", "complementarity.both",
            "complementarity.neither", "paired.paired_questions", "surface_support_rate_corrected_labels",
            "corrected_unclear"} <= keys, keys
    # per provider pair: four cells and the paired tests' n, and the corrected difference's n (human labels)
    assert sum(k.startswith(("complementarity.", "paired.")) for _, k, _ in counted) == 3 * 6
    assert any(k == "gold_rank1_share" for _, k, _ in counts)  # a rate links too (to its numerator)
    assert p.evaluate(BARE) == []  # no count on the page is left without its link
    with EventLog(store, read_only=True) as log:  # what `report` prints to stderr, on the page too
        cur = log.cursor()
        notes = build_report(cur, writable=False, run_ids=[run]).notes
        cur.close()
    assert notes and p.get_by_test_id("report-notes").locator("li").all_inner_texts() == notes
    paged = False
    for href, key, n in counted:
        assert href and f"run={run}" in href  # the scope travels with the link
        show(p, href)
        total = p.get_by_test_id("items-total")
        assert int(total.get_attribute("data-total") or -1) == n, (key, href)
        # the page names what it lists in the read model's words (GET /api/vocabulary), not in a copy of its own
        query = parse_qs(href.split("?", 1)[1])
        label = query["label"][0]
        named = query["partition"][0] if label == "partition" else \
            getattr(WORDS.classes, query["cell"][0]) if "cell" in query else getattr(WORDS.counts, label)
        assert named in p.get_by_test_id("items-title").inner_text(), (key, href)
        rows = p.get_by_test_id(ROWS.get(total.get_attribute("data-kind") or "", "item-row"))
        listed = rows.count()
        if n > 50 and not paged:  # one long list walked to its end: every page together lists n
            paged = True
            while p.get_by_test_id("next-page").first.is_enabled():
                before = p.evaluate("document.body.dataset.ready")
                p.get_by_test_id("next-page").first.click()
                p.wait_for_function("b => document.body.dataset.ready !== b", arg=before)
                listed += rows.count()
            assert listed == n, (key, listed, n)
        else:
            assert listed == min(n, 50), (key, listed, n)
    if not paged:  # no count of the demo above one page: the runaway's 4,000 items are paged 50 at a time
        show(p, "#/items?label=items&arm=brave&run=import")
        assert p.get_by_test_id("items-total").get_attribute("data-total") == str(TURNS * 10)
        seen = set()
        for _ in range(3):
            rows = p.get_by_test_id("item-row")
            assert rows.count() == 50
            seen |= {rows.nth(i).locator(".url").inner_text() for i in range(50)}
            before = p.evaluate("document.body.dataset.ready")
            p.get_by_test_id("next-page").first.click()
            p.wait_for_function("b => document.body.dataset.ready !== b", arg=before)
        assert len(seen) == 150  # three pages, no row twice
    assert problems == []


def test_judge_compare_shows_the_disagreements_first(page: tuple[Any, list[str]], store: Path) -> None:
    p, problems = page
    show(p, "#/compare?a=sandbox-judge%40judge%2F1&b=j-flip")
    rows = p.get_by_test_id("compare-row")
    assert p.get_by_test_id("disagreeing").get_attribute("data-count") == str(FLIPPED)
    code, out, _ = run_cli("judge", "compare", "--db", str(store), "sandbox-judge@judge/1", "j-flip", "--json")
    assert code == 0 and len(json.loads(out)["disagreements"]) == FLIPPED  # the CLI's count, the one definition
    assert rows.count() == 50  # a page of 50 rows, the disagreements first
    assert [rows.nth(i).get_attribute("data-status") for i in range(FLIPPED + 1)] == ["disagree"] * FLIPPED + ["agree"]
    assert "flipped on purpose" in rows.first.inner_text() and "https://" in rows.first.inner_text()
    p.get_by_test_id("next-page").first.click()
    p.wait_for_function("() => document.body.dataset.ready.includes('offset=50')")
    assert p.get_by_test_id("compare-row").first.get_attribute("data-status") != "disagree"
    assert problems == []


def test_a_runaway_trajectory_stays_bounded(page: tuple[Any, list[str]]) -> None:
    p, problems = page
    show(p, "#/t/runaway")
    height = p.evaluate("document.documentElement.scrollHeight")
    assert height < 25_000, height  # 400 turns of ten results: 20 turns a page, results past rank 3 folded
    assert p.get_by_test_id("turn").count() == 20 and p.get_by_test_id("turn-pager").first.is_visible()
    assert p.get_by_test_id("more-results").count() == 20
    assert not p.get_by_test_id("more-results").first.evaluate("d => d.open")
    p.get_by_test_id("later-turns").first.click()
    p.wait_for_function("() => document.body.dataset.ready.includes('page=2')")
    assert "model turn 21" in p.get_by_test_id("timeline").inner_text()
    assert problems == []


def test_every_page_fits_400_px_and_shows_what_the_model_was_sent(page: tuple[Any, list[str]], store: Path) -> None:
    p, problems = page
    p.set_viewport_size({"width": 400, "height": 800})
    run = recorded_run(store)
    con = duckdb.connect(str(store), read_only=True)
    tid, qid = con.execute("SELECT json_extract_string(payload, '$.trajectory_id'), json_extract_string(payload, '$.qid') "
                           "FROM events WHERE type = 'trajectory.started' AND run_id = ? LIMIT 1", [run]).fetchone()  # type: ignore[misc]
    con.close()
    pages = ["#/", f"#/t/{tid}", "#/t/runaway", f"#/q/{qid}", f"#/report?run={run}",
             f"#/items?label=items&arm=brave&run={run}", f"#/items?label=trajectories&arm=brave&run={run}",
             f"#/items?label=cells&pair=brave%7Ctavily&run={run}", f"#/items?label=paired_questions&pair=brave%7Ctavily&run={run}",
             "#/compare?a=sandbox-judge%40judge%2F1&b=j-flip", "#/sql"]
    for h in pages:
        show(p, h)
        wide = p.evaluate("document.documentElement.scrollWidth")
        assert wide <= 400, (h, wide)
        stray = p.evaluate("() => { const w = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);"
                           " const out = []; while (w.nextNode()) if (/^(null|undefined|NaN)$/.test(w.currentNode.data.trim())) out.push(w.currentNode.data); return out; }")
        assert stray == [], (h, stray)
        if h == f"#/t/{tid}":  # our agent records its requests: the system prompt and every message sent
            assert "system" in p.get_by_test_id("system-prompt").inner_text().lower()
            assert p.get_by_test_id("message").count() >= 2
        if h == f"#/q/{qid}":
            assert p.get_by_test_id("aligned-url").count() > 0 and "judge:" in p.get_by_test_id("aligned").inner_text()
    box = p.get_by_test_id("sql-input")
    box.fill("SELECT trajectory_id, qid, provider FROM v_trajectories ORDER BY trajectory_id LIMIT 3")
    box.press("Control+Enter")
    p.get_by_test_id("sql-result").locator("table").wait_for()
    assert p.get_by_test_id("sql-id-link").count() == 6  # both id columns link to their pages
    assert p.evaluate("document.documentElement.scrollWidth") <= 400
    with p.expect_download() as got:
        p.get_by_test_id("sql-csv").click()
    text = Path(got.value.path()).read_text()
    assert text.splitlines()[0] == "trajectory_id,qid,provider" and len(text.splitlines()) == 4
    p.get_by_test_id("sql-id-link").first.click()
    p.get_by_test_id("timeline").wait_for()
    assert problems == []
