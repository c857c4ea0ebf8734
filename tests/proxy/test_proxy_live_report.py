"""`report` while the proxy records reads what a finished store would (docs/reliability.md, "Live reads"): the run is
known from its `run.started`, and which results the model was shown comes from the same replay of its requests, so
no trajectory is said to lack request messages and no result counts as shown only because the run still writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from searchtrace.analytics import shown
from tests.proxy.support import cli, proxy, write_questions
from tests.proxy.test_proxy_shown import trimming_agent


def _report(db: Path) -> tuple[dict[str, Any], str]:
    done = cli("report", "--db", str(db), "--run-id", "live", "--json", "--bootstrap", "0")
    assert done.returncode == 0, done.stderr
    blocks = json.loads(done.stdout)["providers"]
    return {name: {k: b[k] for k in ("trajectories", "results_returned", "results_shown")}
            for name, b in blocks.items()}, done.stderr


def test_report_while_the_proxy_records_reads_what_a_finished_store_shows(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 2)
    db = tmp_path / "live.duckdb"
    with proxy(db, qfile, "live") as p:
        assert _report(db) == ({}, "")  # known from its run.started, before any trajectory
        for row in rows:
            trimming_agent(p.url, row["qid"], row["question"])
        live, live_notes = _report(db)  # through the proxy's read socket
        assert p.stop() == 0
    finished, notes = _report(db)  # the file itself
    assert live == finished and live_notes == notes
    assert shown.assumed_note(2) not in live_notes
    returned, kept = finished["tavily"]["results_returned"], finished["tavily"]["results_shown"]
    assert returned > kept > 0  # the agent kept 2 results of each search
