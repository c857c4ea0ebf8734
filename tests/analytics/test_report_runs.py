"""`report --run-id`: two runs in one store are never merged silently; each can be reported alone or together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.analytics import extras_from_db
from searchtrace.store import (
    AnswerFinal,
    EventLog,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
)
from tests.analytics.analytics_fixture import import_fixture, report_json
from tests.builders import run_cli


def _second_run(db: Path) -> None:
    """Run `rec` recorded one trajectory (provider delta, q1) into the store that already holds the imported run."""
    usage = Usage(input_tokens=7, output_tokens=1)
    payloads: list[Payload] = [
        TrajectoryStarted(trajectory_id="rec:delta:q1", qid="q1", provider="delta"),
        ModelResponded(iteration=1, text=None, usage=usage, latency_ms=1.0),
        SearchCalled(call_id="s1", iteration=1, query="q", provider="delta"),
        SearchResult(call_id="s1", doc_id="d1", rank=1, title="T", url="https://delta.org/", url_normalized="https://delta.org/",
                     domain="delta.org", snippet="s"),
        SearchCompleted(call_id="s1", status="ok", n_results=1, latency_ms=1.0),
        AnswerFinal(iteration=1, text="Paris"),
        TrajectoryFinished(reason="answered", iterations=1, usage=usage),
    ]
    with EventLog(db) as log:
        log.append([NewEvent(stream_id="traj:rec:delta:q1", run_id="rec", payload=p) for p in payloads])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.duckdb"
    import_fixture(path, tmp_path / "in")  # run `import`: alpha, beta, gamma
    return path


def test_several_runs_need_run_id(db: Path) -> None:
    alone, _ = report_json(db, "--judge-run-id", "j1")
    _second_run(db)
    code, out, err = run_cli("report", "--db", str(db), "--json", "--judge-run-id", "j1")
    assert code == 2 and out == ""
    assert err.strip() == "searchtrace: error: this store holds 2 runs (import, rec); choose one with --run-id (repeat it to report several together)"
    imported, _ = report_json(db, "--judge-run-id", "j1", "--run-id", "import")
    assert imported == alone  # the other run's trajectory changes nothing
    _, rec = report_json(db, "--judge-run-id", "j1", "--run-id", "rec")
    assert sorted(rec["providers"]) == ["delta"] and rec["providers"]["delta"]["trajectories"] == 1
    assert rec["complementarity"] == {}
    _, both = report_json(db, "--judge-run-id", "j1", "--run-id", "import", "--run-id", "rec")
    assert sorted(both["providers"]) == ["alpha", "beta", "delta", "gamma"]
    assert both["providers"]["alpha"] == json.loads(alone)["providers"]["alpha"]
    code, _, err = run_cli("report", "--db", str(db), "--run-id", "nope")
    assert code == 2 and err.strip() == "searchtrace: error: run 'nope' not found in the database (known: import, rec)"


def test_html_extras_follow_the_runs(db: Path) -> None:
    _second_run(db)
    with EventLog(db, read_only=True) as log:
        assert sorted(extras_from_db(log, None, ["rec"])["per_trajectory"]) == ["delta"]
        assert sorted(extras_from_db(log, None, ["import"])["per_trajectory"]) == ["alpha", "beta", "gamma"]
