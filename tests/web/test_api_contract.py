"""docs/concepts/security.md contract holes of the explorer: unknown filter values, refused SQL and a store of several runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from searchtrace.analytics import DEFAULT_BOOTSTRAP, build_report, to_json
from searchtrace.store import EventLog
from tests.builders import run_cli
from tests.web.test_api import get_all


@pytest.mark.parametrize("query", [
    "correct=maybe", "correct=TRUE", "correct=1", "partition=smart", "partition=GOOD", "provider=nobody",
    "run=no-such-run", "epoch=2", "epoch=0", "epoch=-1", "epoch=x", "limit=0", "limit=100000", "offset=-1",
    "correct=%00", "provider=" + "x" * 5000,
])
def test_an_unknown_filter_value_is_a_400_naming_the_choices(demo_db: Path, query: str) -> None:
    (r,) = get_all(demo_db, ("GET", f"/api/trajectories?{query}", None))
    assert r.status_code == 400, (query, r.status_code, r.text[:200])
    error = r.json()["error"]
    assert len(error) < 400 and "\n" not in error


def test_known_filter_values_still_answer(demo_db: Path) -> None:
    ok = get_all(demo_db, *[("GET", f"/api/trajectories?{q}", None) for q in
                            ("correct=true", "correct=unaudited", "partition=SMART", "provider=brave", "epoch=1")])
    assert [r.status_code for r in ok] == [200] * 5
    assert ok[3].json()["total"] == 6


@pytest.mark.parametrize("sql", ["DELETE FROM events", "ATTACH 'x.duckdb' AS x", "SET threads = 1", "COPY events TO 'x.csv'",
                                 "SELECT 1; DELETE FROM events", "SELECT * FROM nope", "", "PRAGMA version"])
def test_a_refused_or_failing_statement_is_a_400(demo_db: Path, sql: str) -> None:
    (r,) = get_all(demo_db, ("POST", "/api/sql", {"sql": sql}))
    assert r.status_code == 400, (sql, r.status_code, r.text[:200])
    assert r.json()["error"] and r.json()["rows"] == []


def test_a_store_of_several_runs_offers_the_runs_and_reports_the_chosen_ones(demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "two.duckdb"
    shutil.copyfile(demo_db, db)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"trajectory_id": "t1", "provider": "brave", "qid": "q1", "question": "Q?", "gold_answer": "A", '
                     '"final_answer": "A", "stop_reason": "answered", "steps": []}\n')
    code, _, err = run_cli("import", "--db", str(db), str(trace))
    assert code == 0, err
    log = EventLog(db, read_only=True)
    try:
        cur = log.cursor()
        recorded = str(cur.execute("SELECT run_id FROM events WHERE type = 'run.started'").fetchone()[0])  # type: ignore[index]
        want = to_json(build_report(cur, writable=False, run_ids=[recorded], bootstrap=DEFAULT_BOOTSTRAP).report)
        both = to_json(build_report(cur, writable=False, run_ids=[recorded, "import"], bootstrap=DEFAULT_BOOTSTRAP).report)
        cur.close()
    finally:
        log.close()
    choose, chosen, together, html_choose, html, unknown, runs = get_all(
        db, ("GET", "/api/report", None), ("GET", f"/api/report?run={recorded}", None),
        ("GET", f"/api/report?run={recorded}&run=import", None), ("GET", "/report.html", None),
        ("GET", f"/report.html?run={recorded}", None), ("GET", "/api/report?run=nope", None), ("GET", "/api/runs", None))
    assert choose.status_code == 200 and choose.json() == {"choose_run": True, "runs": [recorded, "import"]}
    assert chosen.status_code == 200 and json.loads(want) == chosen.json()
    assert together.status_code == 200 and json.loads(both) == together.json()
    assert html_choose.status_code == 200 and "2 runs" in html_choose.text
    assert html.status_code == 200 and "<table" in html.text
    assert unknown.status_code == 400 and "nope" in unknown.json()["error"]
    assert {r["run_id"] for r in runs.json() if r["trajectories"]} == {recorded, "import"}
