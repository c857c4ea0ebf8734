"""The application functions behind `sql`, `verify` and `judge`: the command line and the explorer call the same ones,
so a statement is refused (or fails) with the same line in both, and a missing store reads the same everywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from searchtrace import pipeline
from searchtrace.store import BadInput, StoreError
from tests.builders import run_cli
from tests.web.test_api import get_all

NOT_RUN = {
    "delete": "DELETE FROM events",
    "second-statement": "SELECT 1; DELETE FROM events",
    "copy-out": "COPY (SELECT * FROM events) TO 'copied.csv'",
    "attach": "ATTACH 'attached.duckdb' AS x",
    "syntax": "SELEC 1",
    "unknown-table": "SELECT * FROM nope",
    "no-statement": "  ",
    "fails-while-fetching": "SELECT CAST('x' || position AS INTEGER) FROM events",
}


@pytest.mark.parametrize("name", list(NOT_RUN))
def test_cli_and_explorer_refuse_a_statement_with_the_same_line(demo_db: Path, name: str) -> None:
    sql = NOT_RUN[name]
    with pytest.raises((BadInput, StoreError)) as info:  # a refusal is a ReadOnlyViolation (a StoreError)
        pipeline.run_sql(demo_db, sql)
    line = str(info.value)
    assert line.startswith("sql: ") and "\n" not in line
    code, out, err = run_cli("sql", "--db", str(demo_db), sql)
    assert (code, out, err) == (2, "", f"searchtrace: error: {line}\n")
    (answer,) = get_all(demo_db, ("POST", "/api/sql", {"sql": sql}))
    assert answer.status_code == 400 and answer.json() == {"error": line, "columns": [], "rows": []}  # #21: 4xx


def test_cli_and_explorer_answer_a_read_with_the_same_rows(demo_db: Path) -> None:
    sql = "SELECT provider, count(*) AS n, min(qid) AS first_qid FROM v_trajectories GROUP BY 1 ORDER BY 1"
    result = pipeline.run_sql(demo_db, sql)
    assert result.columns == ["provider", "n", "first_qid"] and result.types[1] == "BIGINT" and not result.truncated
    code, out, err = run_cli("sql", "--db", str(demo_db), "--json", sql)
    assert code == 0, err
    assert json.loads(out) == [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    (answer,) = get_all(demo_db, ("POST", "/api/sql", {"sql": sql}))
    assert answer.json() == {"columns": result.columns, "rows": [list(r) for r in result.rows], "truncated": False}


def test_a_limit_cuts_rows_and_says_so(demo_db: Path) -> None:
    sql = "SELECT position FROM events ORDER BY position"
    cut = pipeline.run_sql(demo_db, sql, limit=3)
    assert cut.rows == [(1,), (2,), (3,)] and cut.truncated
    exact = pipeline.run_sql(demo_db, "SELECT position FROM events ORDER BY position LIMIT 3", limit=3)
    assert exact.rows == cut.rows and not exact.truncated


def test_verify_reports_what_the_command_prints(demo_db: Path, tmp_path: Path) -> None:
    store = tmp_path / "v.duckdb"
    shutil.copyfile(demo_db, store)
    result = pipeline.verify(store)
    assert result.ok and result.stale == [] and result.rebuild_error is None
    code, out, _ = run_cli("verify", "--db", str(store))
    assert code == 0 and out == f"{store}: {result.log_line}; {result.segment}\n"
    assert result.segment.startswith("segment ") and " on " in result.segment  # docs/how-to/scale.md: the store's segment
    con = duckdb.connect(str(store))
    con.execute("UPDATE proj.search_results SET rank = 99")
    con.close()
    rebuilt = pipeline.verify(store)
    assert rebuilt.ok and rebuilt.stale == ["proj.search_results"] and rebuilt.rebuild_error is None
    assert pipeline.verify(store).stale == []  # rebuilt for good
    con = duckdb.connect(str(store))
    con.execute("UPDATE events SET run_id = 'other' WHERE position = 7")
    con.close()
    broken = pipeline.verify(store)
    assert not broken.ok and broken.log_line.startswith("broken at position 7: hash mismatch")
    code, _, err = run_cli("verify", "--db", str(store))
    assert code == 1 and err == f"{store}: {broken.log_line}; {broken.segment}\n"


def test_judge_defaults_come_from_the_application_layer(demo_db: Path, tmp_path: Path) -> None:
    plan = pipeline.plan_judge(demo_db, sandbox=True)
    assert (plan.model, plan.rps, plan.judge_run_id) == (pipeline.SANDBOX_JUDGE, 0.0, "sandbox-judge@judge/1")
    assert plan.params == {"rps": 0.0, "max_retries": 4, "timeout_s": 120.0, "endpoint": "sandbox"}
    real = pipeline.plan_judge(demo_db, model="m", base_url="http://127.0.0.1:9")
    assert (real.rps, real.judge_run_id, real.params["endpoint"]) == (pipeline.DEFAULT_RPS, "m@judge/1",
                                                                      "http://127.0.0.1:9")
    assert pipeline.plan_judge(demo_db, model="m", judge_run_id="mine").judge_run_id == "mine"
    with pytest.raises(BadInput, match="--model is required"):
        pipeline.plan_judge(demo_db)
    with pytest.raises(BadInput, match="not both"):
        pipeline.plan_judge(demo_db, sandbox=True, sandbox_url="http://127.0.0.1:9")
    code, _, err = run_cli("judge", "--db", str(demo_db))
    assert code == 2 and err == "searchtrace: error: --model is required (or use --sandbox)\n"


def _missing_argv(db: Path, tmp: Path) -> dict[str, list[str]]:
    d = str(db)
    (tmp / "labels.tsv").write_text("judge_run_id\n")
    return {
        "report": ["report", "--db", d, "--json"],
        "sql": ["sql", "--db", d, "SELECT 1"],
        "verify": ["verify", "--db", d],
        "export": ["export", "--db", d, "--out", str(tmp / "out")],
        "judge": ["judge", "--sandbox", "--db", d, "--no-progress"],
        "judge-compare": ["judge", "compare", "--db", d, "a", "b"],
        "replay": ["replay", "--db", d],
        "audit-sample": ["audit", "sample", "--db", d, "--out", str(tmp / "s.tsv")],
        "audit-import": ["audit", "import", "--db", d, str(tmp / "labels.tsv")],
        "audit-agreement": ["audit", "agreement", "--db", d],
        "view": ["view", "--db", d, "--port", "0"],
    }


STORE_READERS = ("report", "sql", "verify", "export", "judge", "judge-compare", "replay", "audit-sample",
                 "audit-import", "audit-agreement", "view")


@pytest.mark.parametrize("command", STORE_READERS)
def test_a_missing_store_is_the_same_line_for_every_command(tmp_path: Path, command: str) -> None:
    db = tmp_path / "absent.duckdb"
    argv = _missing_argv(db, tmp_path)
    assert sorted(argv) == sorted(STORE_READERS)
    code, _, err = run_cli(*argv[command])
    assert (code, err) == (2, f"searchtrace: error: {db}: no such database; record, demo or import something first\n")
    assert not db.exists() and not (tmp_path / "absent.duckdb.wal").exists()
