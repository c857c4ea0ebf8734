"""Only the latest attempt of each (question, provider) cell counts: report, views, judge items, event scans, audit."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import searchtrace.analytics._lookups as lookups
from searchtrace.analytics import audit_sample, judge_items
from searchtrace.store import EventLog
from tests.analytics.analytics_fixture import report_json
from tests.analytics.attempts_fixture import JUDGE, NEW, O1, OLD, P2, build
from tests.builders import run_cli


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "attempts.duckdb"
    build(path)
    return path


def test_report_counts_only_the_latest_attempt(db: Path) -> None:
    _, rep = report_json(db, "--judge-run-id", JUDGE)
    p = rep["providers"]["p"]
    expected = {
        "trajectories": 2, "audited": 2, "correct": 2, "accuracy": 1.0, "exact_match": 1.0,
        "searches_per_trajectory": 1.0, "fetches_per_trajectory": 0.0,
        "input_tokens_per_trajectory": 150.0, "output_tokens_per_trajectory": 15.0, "page_tokens_per_trajectory": 0.0,
        "items": 2, "valid_items": 2, "invalid_items": 0,
        "partition": {"SMART": 0, "MISSED": 1, "BLIND": 0, "NO-OP": 1, "UNOBSERVED": 0}, "discovered_support": 0,
        "surface_support_rate": 0.5, "surface_answerable_queries": 1, "gold_rank1_share": 1.0,
    }
    for key, value in expected.items():
        assert p[key] == value, key
    assert rep["providers"]["o"]["trajectories"] == 1
    assert rep["complementarity"]["o|p"] == {"a_only": 0, "b_only": 1, "both": 0, "neither": 0, "url_jaccard": 0.0}


def test_views_show_the_latest_attempt_and_ev_trajectories_every_attempt(db: Path) -> None:
    code, _, err = run_cli("report", "--db", str(db), "--json")  # installs the v_* views
    assert code == 0, err
    con = duckdb.connect(str(db), read_only=True)
    try:
        trajs = con.execute("SELECT trajectory_id, attempt, supersedes, n_searches, n_fetches, input_tokens "
                            "FROM v_trajectories ORDER BY trajectory_id").fetchall()
        every = con.execute("SELECT trajectory_id, attempt, supersedes FROM ev_trajectories ORDER BY position").fetchall()
        items = con.execute("SELECT DISTINCT trajectory_id FROM v_judge_items ORDER BY 1").fetchall()
        verdicts = con.execute("SELECT trajectory_id FROM v_verdicts ORDER BY 1").fetchall()
        searches = con.execute("SELECT count(*) FROM v_searches").fetchone()
        fetches = con.execute("SELECT count(*) FROM v_fetches").fetchone()
        usage = con.execute("SELECT sum(input_tokens) FROM v_usage").fetchone()
        answers = con.execute("SELECT trajectory_id, semantic_match FROM v_answers ORDER BY 1").fetchall()
    finally:
        con.close()
    assert trajs == [(O1, 1, None, 1, 0, 50), (NEW, 2, OLD, 1, 0, 100), (P2, 1, None, 1, 0, 200)]  # '#' sorts first
    assert every == [(OLD, 1, None), (O1, 1, None), (P2, 1, None), (NEW, 2, OLD)]
    assert items == verdicts == [(O1,), (NEW,), (P2,)]
    assert (searches, fetches, usage) == ((3,), (0,), (350,))  # the superseded 2 searches, 1 fetch, 1000 tokens left out
    assert answers == [(O1, False), (NEW, True), (P2, True)]


def test_judge_items_and_event_scans_skip_superseded_attempts(db: Path) -> None:
    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        items = judge_items(cur)
        cur.close()
        providers = lookups.providers(log)
        per = lookups.per_trajectory(log)
        ranks = lookups.gold_rank_hist(log, JUDGE)
        _, rows, _, _ = audit_sample(log, JUDGE, 10, "seed")
    assert sorted((i.trajectory_id, i.url_normalized) for i in items) == [
        (O1, "https://bad.example/a"), (NEW, "https://good.example/x"), (P2, "https://c.example/")]
    assert sorted(providers) == sorted([O1, P2, NEW])
    assert per["p"] == [
        {"trajectory_id": NEW, "searches": 1, "fetches": 0, "input_tokens": 100, "output_tokens": 10},
        {"trajectory_id": P2, "searches": 1, "fetches": 0, "input_tokens": 200, "output_tokens": 20},
    ]
    assert ranks == {"o": {}, "p": {1: 1}}  # the superseded attempt's two rank-1 appearances of a supported item left out
    assert rows and OLD not in {r["trajectory_id"] for r in rows}


def test_audit_import_names_a_superseded_trajectory_as_bad_input(db: Path, tmp_path: Path) -> None:
    """A labelled TSV row for the superseded attempt (which has a valid verdict) is refused by name, not a crash."""
    from searchtrace.analytics import prepare_import
    from searchtrace.analytics._audit import COLUMNS
    from searchtrace.store import BadInput

    row = {c: "" for c in COLUMNS} | {
        "judge_run_id": JUDGE, "trajectory_id": OLD, "url_normalized": "https://bad.example/a", "surface": "snippet",
        "label": "supports_gold", "judge_value": "true", "human_value": "true"}
    tsv = tmp_path / "labels.tsv"
    tsv.write_text("\t".join(COLUMNS) + "\n" + "\t".join(row[c] for c in COLUMNS) + "\n", encoding="utf-8")
    with EventLog(db, read_only=True) as log, pytest.raises(BadInput, match="line 2: field trajectory_id"):
        prepare_import(log, tsv)
