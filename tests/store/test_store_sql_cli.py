"""`searchtrace sql`: read-only, refuses every writing statement with exit 2 and changes nothing."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import duckdb
import pytest

from searchtrace.store import EventLog
from tests.builders import run_cli
from tests.store.store_support import ev


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        log.append([ev(f"s{i % 2}", i) for i in range(6)], blobs=[b"blob body"])
    return path


def snapshot(path: Path) -> tuple[str, list[tuple[object, ...]]]:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    con = duckdb.connect(str(path), read_only=True)
    rows = con.execute("SELECT * FROM events ORDER BY position").fetchall()
    rows += con.execute("SELECT * FROM blobs").fetchall()
    con.close()
    return digest, rows


def test_json_csv_and_table_output(db: Path) -> None:
    q = "SELECT position, stream_id, event_id, payload FROM events WHERE stream_id = 's1' ORDER BY position"
    code, out, _ = run_cli("sql", q, "--db", str(db), "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["position"] for r in rows] == [2, 4, 6]
    assert rows[0]["payload"] == {"type": "answer.final", "iteration": 1, "text": "s1:1"}
    code, out, _ = run_cli("sql", "WITH x AS (SELECT * FROM events) SELECT type, count(*) AS n FROM x GROUP BY type",
                        "--db", str(db), "--csv")
    assert code == 0 and list(csv.reader(io.StringIO(out))) == [["type", "n"], ["answer.final", "6"]]
    code, out, _ = run_cli("sql", "SELECT stream_id, max(stream_seq) AS head FROM events GROUP BY 1 ORDER BY 1",
                        "--db", str(db))
    assert code == 0 and "s0" in out and "s1" in out and "head" in out and "2 rows" in out
    code, out, _ = run_cli("sql", "DESCRIBE events", "--db", str(db), "--csv")
    assert code == 0 and "payload,JSON" in out
    code, out, _ = run_cli("sql", "EXPLAIN SELECT count(*) FROM events", "--db", str(db))
    assert code == 0


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO events SELECT * FROM events",
        "UPDATE events SET run_id = 'x'",
        "DELETE FROM events",
        "DROP TABLE events",
        "CREATE TABLE x AS SELECT 1",
        "ATTACH '{tmp}/other.duckdb' AS other",
        "COPY events TO '{tmp}/out.csv'",
        "COPY (SELECT * FROM events) TO '{tmp}/out.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{tmp}/exported'",
        "INSTALL httpfs",
        "LOAD json",
        "SET threads = 1",
        "PRAGMA enable_profiling",
        "CHECKPOINT",
        "SELECT 1; DELETE FROM events",
        "WITH x AS (SELECT 1) INSERT INTO events SELECT * FROM events",
        "EXPLAIN ANALYZE DELETE FROM events",
        "BEGIN",
    ],
)
def test_writing_statements_fail_with_exit_2_and_change_nothing(
    db: Path, tmp_path: Path, statement: str
) -> None:
    before = snapshot(db)
    code, out, err = run_cli("sql", statement.format(tmp=tmp_path), "--db", str(db))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "read-only" in err
    assert snapshot(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.duckdb"]  # nothing written next to it either


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('{tmp}/t.duckdb')",
        "SELECT * FROM '{tmp}/t.duckdb'",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM duckdb_settings() WHERE name = 'x'; SET enable_external_access = true",
    ],
)
def test_no_reaching_other_files(
    db: Path, tmp_path: Path, statement: str
) -> None:
    before = snapshot(db)
    code, out, err = run_cli("sql", statement.format(tmp=tmp_path), "--db", str(db))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert snapshot(db) == before


def test_bad_sql_and_missing_db(db: Path, tmp_path: Path) -> None:
    code, _, err = run_cli("sql", "SELECT * FROM nowhere", "--db", str(db))
    assert code == 2 and "nowhere" in err and err.count("\n") == 1
    code, _, err = run_cli("sql", "SELEKT 1", "--db", str(db))
    assert code == 2 and err.count("\n") == 1
    code, _, err = run_cli("sql", "SELECT 1", "--db", str(tmp_path / "absent.duckdb"))
    assert code == 2 and "absent.duckdb" in err and "no such database" in err
    assert not (tmp_path / "absent.duckdb").exists()
