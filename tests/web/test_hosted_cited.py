"""The explorer marks the results a hosted layer's answer cites (docs/how-to/hosted.md), and only where an answer cites."""

from __future__ import annotations

from pathlib import Path

import msgspec

from searchtrace.store import EventLog
from searchtrace.web._data import trajectory
from tests.builders import run_cli


def test_cited_items_are_marked(tmp_path: Path) -> None:
    code, _, err = run_cli("demo", "--providers", "brave,anthropic_web_search", "--n", "2", "--out", str(tmp_path))
    assert code == 0, err
    with EventLog(tmp_path / "demo.duckdb", read_only=True) as log:
        cur = log.cursor()
        tids = [r[0] for r in cur.execute("SELECT DISTINCT payload->>'$.trajectory_id' FROM events "
                                          "WHERE type = 'trajectory.started'").fetchall()]
        views = {t: trajectory(cur, t, None) for t in tids}
    hosted = [v for t, v in views.items() if ":anthropic_web_search:" in t]
    assert hosted and all(any(i.cited is True for i in v.items) for v in hosted)
    assert all(sum(i.cited is True for i in v.items) == 1 for v in hosted)  # the one cited source
    assert all(i.cited is msgspec.UNSET for t, v in views.items() if ":brave:" in t for i in v.items)
    assert all(b'"cited"' not in msgspec.json.encode(v) for t, v in views.items() if ":brave:" in t)
