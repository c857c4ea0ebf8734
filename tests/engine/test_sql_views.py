"""`searchtrace sql` offers the documented views even on a store that no import or report has touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import searchtrace.store._events as E
from searchtrace.cli import main
from searchtrace.store import EventLog


def test_views_exist_on_a_fresh_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.duckdb"
    with EventLog(db) as log:
        log.append([
            E.NewEvent(stream_id="traj:t1", run_id="r",
                       payload=E.TrajectoryStarted(trajectory_id="t1", qid="q1", provider="brave")),
        ])
    main(["sql", "--db", str(db), "--json", "SELECT trajectory_id, provider FROM v_trajectories"])
    assert json.loads(capsys.readouterr().out) == [{"trajectory_id": "t1", "provider": "brave"}]
    with EventLog(db) as log:  # nothing was written by the read-only path
        assert log.head == 1
