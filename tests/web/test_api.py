"""The explorer's JSON API (docs/how-to/explorer.md) over a real demo store, in process through httpx's ASGI transport."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from searchtrace.analytics import DEFAULT_BOOTSTRAP, LABEL_COUNTS, Report, build_report, to_json
from searchtrace.store import EventLog
from searchtrace.web import create_app


def get_all(db: Path, *requests: tuple[str, str, Any]) -> list[httpx.Response]:
    app = create_app(db)

    async def go() -> list[httpx.Response]:
        out = []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765",
                                     cookies={"searchtrace-view-8765": app.state.token}) as c:
            for method, url, body in requests:
                out.append(await c.request(method, url, json=body))
        return out

    try:
        return anyio.run(go)
    finally:
        app.state.source.close()  # the ASGI transport runs no lifespan


def test_lists_filters_and_counts_agree_with_the_report(demo_db: Path) -> None:
    runs, jruns, brave, everything, report = get_all(
        demo_db, ("GET", "/api/runs", None), ("GET", "/api/judge-runs", None),
        ("GET", "/api/trajectories?provider=brave&limit=4", None), ("GET", "/api/trajectories?limit=500", None),
        ("GET", "/api/report", None))
    assert sum(r["trajectories"] for r in runs.json()) == 18
    assert jruns.json()[0]["valid"] > 0
    page = brave.json()
    assert page["total"] == 6 and len(page["trajectories"]) == 4 and page["counts"]["providers"] == {"brave": 6}
    rows = everything.json()["trajectories"]
    assert [r["position"] for r in rows] == sorted((r["position"] for r in rows), reverse=True)  # newest first
    rep = report.json()
    with EventLog(demo_db, read_only=True) as log:
        cur = log.cursor()
        # byte for byte the report `report` prints, its intervals and paired tests included
        want = build_report(cur, writable=False, bootstrap=DEFAULT_BOOTSTRAP).report
        assert to_json(msgspec.convert(rep, Report)) == to_json(want) and rep["paired"] and "accuracy_ci" in rep["providers"]["brave"]
        cur.close()
    for provider, block in rep["providers"].items():
        mine = [r for r in rows if r["provider"] == provider]
        assert len(mine) == block["trajectories"]
        assert sum((Counter(r["partition"]) for r in mine), Counter()) == Counter(
            {k: v for k, v in block["partition"].items() if v})
        assert sum(1 for r in mine if r["correct"]) == block["correct"]


def test_one_trajectory_has_its_steps_items_and_pages(demo_db: Path) -> None:
    (listing,) = get_all(demo_db, ("GET", "/api/trajectories?limit=500", None))
    fetched = next(r for r in listing.json()["trajectories"] if r["partition"]["SMART"] or r["partition"]["BLIND"])
    one, question, missing = get_all(
        demo_db, ("GET", f"/api/trajectories/{fetched['trajectory_id']}", None),
        ("GET", f"/api/questions/{fetched['qid']}", None), ("GET", "/api/trajectories/nope", None))
    t = one.json()
    positions = [s["position"] for s in t["steps"]]
    assert positions == sorted(positions) and t["steps"][0]["type"] == "trajectory.started"
    assert t["partition"] == fetched["partition"]
    results = [s["payload"] for s in t["steps"] if s["type"] == "search.result"]
    items = {i["url_normalized"]: i for i in t["items"]}
    assert {r["url_normalized"] for r in results} == set(items)
    assert all(i["part"] in ("SMART", "MISSED", "BLIND", "NO-OP") and i["rationale"] for i in items.values())
    digests = [s["payload"]["content_digest"] for s in t["steps"]
               if s["type"] == "fetch.completed" and s["payload"]["status"] == "ok"]
    assert digests and all(t["pages"][d]["text"] for d in digests)
    assert t["answer"]["gold"] == fetched["gold_answer"] and t["answer"]["exact_match"] in (0, 1)
    q = question.json()
    assert sorted(x["provider"] for x in q["trajectories"]) == ["brave", "firecrawl", "tavily"]
    assert all(set(ps) <= {"brave", "firecrawl", "tavily"} and len(ps) > 1 for ps in q["shared_urls"].values())
    assert missing.status_code == 404


def test_judge_compare_and_the_read_only_sql_box(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    (jruns,) = get_all(demo_db, ("GET", "/api/judge-runs", None))
    jr = jruns.json()[0]["judge_run_id"]
    same, unknown, ok, refused, broken = get_all(
        demo_db, ("GET", f"/api/judge-compare?a={jr}&b={jr}", None), ("GET", f"/api/judge-compare?a={jr}&b=x", None),
        ("POST", "/api/sql", {"sql": "SELECT provider, count(*) AS n FROM v_trajectories GROUP BY 1 ORDER BY 1"}),
        ("POST", "/api/sql", {"sql": "DELETE FROM events"}), ("POST", "/api/sql", {"sql": "SELECT * FROM nope"}))
    c = same.json()
    assert c["disagreeing"] == 0 and c["items"] == jruns.json()[0]["verdicts"]
    # the docs/concepts/statistics.md comparison of `judge compare`: a run against itself agrees everywhere
    comp = c["comparison"]
    assert comp["a"] == comp["b"] == jr and comp["items_valid_in_both"] == c["valid_in_both"] > 0
    assert len(c["rows"]) == 50 and {r["status"] for r in c["rows"]} <= {"agree", "invalid in A"}  # one page of 50
    assert all(s["agreement"] in (1.0, None) for s in comp["labels"].values())
    assert unknown.status_code == 400 and "not found" in unknown.json()["error"]
    assert ok.json() == {"columns": ["provider", "n"], "rows": [["brave", 6], ["firecrawl", 6], ["tavily", 6]],
                         "truncated": False}
    assert refused.status_code == 400 and "read-only" in refused.json()["error"]  # docs/concepts/security.md: refused is a 4xx
    assert broken.status_code == 400 and "nope" in broken.json()["error"] and broken.json()["rows"] == []
    assert demo_db.read_bytes() == before


@pytest.mark.parametrize("url", ["/", "/static/app.js", "/static/app.css"])
def test_pages_are_served_by_the_app_with_a_strict_policy(demo_db: Path, url: str) -> None:
    (r,) = get_all(demo_db, ("GET", url, None))
    assert r.status_code == 200
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "http://" not in r.text and "https://" not in r.text  # nothing from elsewhere
    json.dumps(r.text)


def test_every_count_of_the_report_is_the_total_of_the_items_behind_it(demo_db: Path) -> None:
    """docs/how-to/compare.md: `/api/items` for each linked count of each provider answers exactly that many rows in all."""
    rep, links = (r.json() for r in get_all(demo_db, ("GET", "/api/report", None), ("GET", "/api/report-links", None)))
    asks = []
    for arm, block in rep["providers"].items():
        for key in links["counts"]:
            value: Any = block
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, int):
                asks.append((key, value, "/api/items?" + str(httpx.QueryParams({**links["links"][key], "arm": arm, "limit": 500}))))
    # every count of every provider (the demo has no human labels: the correction's label counts are checked on a
    # store that has them, tests/web/test_browser_report.py)
    assert len(asks) == 3 * len([k for k in links["counts"] if k not in LABEL_COUNTS])
    for (key, value, _), r in zip(asks, get_all(demo_db, *[("GET", url, None) for *_, url in asks]), strict=True):
        body = r.json()
        assert body["total"] == value == len(body["rows"]), (key, body["total"], value)
    # the counts of each provider pair: complementarity cells by class, the questions of the paired tests
    pairs = [(f"{key}.{cell}", rep[key][pair][cell], "/api/items?" + str(httpx.QueryParams(
              {**links["pair_links"][cell], "pair": pair, "limit": 500})))
             for key, cells in (("complementarity", ("a_only", "b_only", "both", "neither")), ("paired", ("paired_questions",)))
             for pair in rep[key] for cell in cells]
    assert len(pairs) == 3 * 5
    for (key, value, _), r in zip(pairs, get_all(demo_db, *[("GET", url, None) for *_, url in pairs]), strict=True):
        body = r.json()
        assert body["total"] == value == len(body["rows"]), (key, body["total"], value)
        if body["kind"] == "cells":  # each row is its class, by both sides' answerable flags
            want = {(True, True): "both", (True, False): "a_only", (False, True): "b_only", (False, False): "neither"}
            assert all(want[(c["a"]["answerable"], c["b"]["answerable"])] == c["class"] == body["cell"] for c in body["rows"])
            assert all(c["a"]["answerable"] == any(t["answerable"] for t in c["a"]["trajectories"]) for c in body["rows"])
        else:
            assert all(q["a"]["audited"] and q["b"]["audited"] for q in body["rows"])
    rank1, = get_all(demo_db, ("GET", "/api/items?label=surface_supported_items&rank=1&arm=brave", None))
    b = rep["providers"]["brave"]
    assert rank1.json()["kind"] == "appearances" and all(r["appearance"]["rank"] == 1 for r in rank1.json()["rows"])
    if b["gold_rank1_share"]:  # the share's numerator: rank-1 appearances of supported items
        assert rank1.json()["total"] > 0
    bad = get_all(demo_db, ("GET", "/api/items?label=nope", None), ("GET", "/api/items?label=items&by=model&arm=x", None),
                  ("GET", "/api/items?label=partition&partition=GOOD", None), ("GET", "/api/nowhere", None),
                  ("GET", "/api/report?by=nonsense", None), ("GET", "/api/sql", None),
                  ("GET", "/api/items?label=cells", None), ("GET", "/api/items?label=cells&pair=brave%7Cnope", None),
                  ("GET", "/api/items?label=cells&pair=brave%7Ctavily&cell=odd", None),
                  ("GET", "/api/items?label=paired_questions&pair=brave%7Ctavily&arm=brave", None),
                  ("GET", "/api/items?label=items&pair=brave%7Ctavily", None))
    assert [r.status_code for r in bad] == [400, 400, 400, 404, 400, 405, 400, 400, 400, 400, 400]
    assert all(set(r.json()) == {"error"} and "\n" not in r.json()["error"] for r in bad)
