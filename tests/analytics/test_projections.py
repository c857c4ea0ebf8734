"""Typed projections are caches: incremental catch-up equals a rebuild equals the raw views; read-only fallback."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

import searchtrace.pipeline._reporting as reporting
from searchtrace.analytics import build_report, projections, to_json
from searchtrace.analytics._relations import RELATIONS, version
from searchtrace.replay.interchange import import_files
from searchtrace.store import EventLog, NotAStore
from tests.analytics.analytics_fixture import JUDGMENTS, TRACES, import_fixture, report_json, write_fixture
from tests.builders import write_jsonl


def same_as_raw(con: duckdb.DuckDBPyConnection) -> None:
    for rel in RELATIONS:
        raw = f"({rel.select_sql()})"
        a = con.execute(f"SELECT count(*) FROM (SELECT * FROM proj.{rel.name} EXCEPT ALL SELECT * FROM {raw})").fetchone()
        b = con.execute(f"SELECT count(*) FROM (SELECT * FROM {raw} EXCEPT ALL SELECT * FROM proj.{rel.name})").fetchone()
        assert a == (0,) and b == (0,), rel.name


def test_incremental_equals_rebuild(tmp_path: Path) -> None:
    t1 = write_jsonl(tmp_path / "t1.jsonl", TRACES[:2])
    t2 = write_jsonl(tmp_path / "t2.jsonl", TRACES[2:])
    j = write_jsonl(tmp_path / "j.jsonl", JUDGMENTS)
    with EventLog(tmp_path / "p.duckdb") as log:
        con = log.cursor()
        import_files(log, [t1], [], [])
        assert projections.catch_up(con) == log.head
        first = con.execute("SELECT count(*) FROM proj.search_results").fetchone()
        import_files(log, [t2], [j], [])
        assert not projections.is_current(con)
        text_stale_readonly = to_json(build_report(con, judge_run_id="j1", writable=False).report)
        head = projections.catch_up(con)  # incremental: only the new events
        assert head == log.head and projections.is_current(con)
        assert con.execute("SELECT count(*) FROM proj.search_results").fetchone() != first
        same_as_raw(con)
        incremental = to_json(build_report(con, judge_run_id="j1").report)
        states = con.execute("SELECT count(*) FROM projection_state").fetchone()
        projections.catch_up(con)  # nothing new: no state row added
        assert con.execute("SELECT count(*) FROM projection_state").fetchone() == states
        projections.catch_up(con, rebuild=True)
        same_as_raw(con)
        assert to_json(build_report(con, judge_run_id="j1").report) == incremental == text_stale_readonly
        results = con.execute("SELECT count(*) FROM proj.shown").fetchone()
        assert results == con.execute("SELECT count(*) FROM proj.search_results").fetchone() and results != (0,)
        con.execute("DELETE FROM proj.shown WHERE position = (SELECT min(position) FROM proj.shown)")
        assert projections.is_current(con)  # the state says so: only a catch-up counts the rows
        projections.catch_up(con)  # `shown` is a projection like the others: a row missing, built again
        assert con.execute("SELECT count(*) FROM proj.shown").fetchone() == results
        con.close()


def test_other_version_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "v.duckdb"
    import_fixture(db, tmp_path / "in")
    before, _ = report_json(db, "--judge-run-id", "j1")
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE proj.verdicts")
    con.execute("CREATE TABLE proj.verdicts AS SELECT 1 AS junk")
    con.execute("INSERT INTO projection_state VALUES ('verdicts', 'old', 999999, 999999)")
    con.close()
    after, _ = report_json(db, "--judge-run-id", "j1")
    assert after == before
    con = duckdb.connect(str(db), read_only=True)
    assert projections.is_current(con) and version() != "old"
    con.close()


def test_report_falls_back_to_raw_views_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "r.duckdb"
    t, j, a = write_fixture(tmp_path / "in")
    with EventLog(db) as log:  # events only: no projection, no view
        import_files(log, [t], [j], [a])
    real = EventLog

    def read_only_file(path: Path, *, read_only: bool = False) -> EventLog:
        if not read_only:
            raise NotAStore(f"{path}: cannot open as a DuckDB database (read-only file)")
        return real(path, read_only=True)

    monkeypatch.setattr(reporting, "EventLog", read_only_file)
    fallback, rep = report_json(db, "--judge-run-id", "j1",
                                "--metric", str(Path(__file__).parents[2] / "analytics/examples/discovered_share.py"))
    assert rep["custom"]["discovered_share"]["alpha"] == 0.5
    con = duckdb.connect(str(db), read_only=True)
    objects = con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall()
    con.close()
    assert all(s == "main" and not n.startswith(("proj", "v_", "ev_")) for s, n in objects), objects  # nothing written
    monkeypatch.setattr(reporting, "EventLog", real)
    normal, _ = report_json(db, "--judge-run-id", "j1",
                            "--metric", str(Path(__file__).parents[2] / "analytics/examples/discovered_share.py"))
    assert normal == fallback
    assert json.loads(normal)["providers"]["alpha"]["items"] == 6
