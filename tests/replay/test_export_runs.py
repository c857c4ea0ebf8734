"""docs/reference/interchange.md and docs/how-to/compare.md: a store of several runs that recorded the same cells exports into files that import back."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.builders import run_cli

CONFIG = ('run_id = "{run}"\n[agent]\nmodel = "sandbox-agent"\n[providers.brave]\n[providers.tavily]\n[dataset]\n'
          'path = "sandbox"\n[sample]\nn = 2\n[fetch]\ncache_dir = ""\n[run]\nepochs = {epochs}\n')


def _trajectories(db: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT run_id, payload->>'$.trajectory_id' FROM events WHERE type = 'trajectory.started' "
                           "ORDER BY 1, 2").fetchall()
    finally:
        con.close()
    return [(str(a), str(b)) for a, b in rows]


def test_two_runs_of_the_same_cells_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    for run, epochs in (("first", 1), ("second", 2)):
        (tmp_path / f"{run}.toml").write_text(CONFIG.format(run=run, epochs=epochs))
        code, _, err = run_cli("record", "--config", str(tmp_path / f"{run}.toml"), "--db", str(db), "--sandbox",
                               "--no-progress")
        assert code == 0, err
    code, _, err = run_cli("judge", "--db", str(db), "--sandbox")
    assert code == 0, err
    out = tmp_path / "export"
    code, _, err = run_cli("export", "--db", str(db), "--out", str(out))
    assert code == 0, err
    back = tmp_path / "back.duckdb"
    files = [str(out / "traces.jsonl"), "--judgments", str(out / "judgments.jsonl"), "--audit", str(out / "audit.tsv")]
    code, text, err = run_cli("import", "--db", str(back), *files)
    assert code == 0, err
    assert _trajectories(back) == _trajectories(db) and len(_trajectories(db)) == 2 * 2 + 2 * 2 * 2
    # again, and into the store it came from: nothing new either time
    for target in (back, db):
        code, text, err = run_cli("import", "--db", str(target), *files)
        assert code == 0 and "0 new trajectories" in text and "0 new events" in text, (text, err)
    again = tmp_path / "again"
    code, _, err = run_cli("export", "--db", str(back), "--out", str(again))
    assert code == 0, err
    assert (again / "traces.jsonl").read_bytes() == (out / "traces.jsonl").read_bytes()
    assert (again / "judgments.jsonl").read_bytes() == (out / "judgments.jsonl").read_bytes()
    # the report of each run works on the imported store, as on the original
    for run in ("first", "second"):
        code, _, err = run_cli("report", "--db", str(back), "--run-id", run, "--json")
        assert code == 0, err
