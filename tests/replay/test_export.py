"""`searchtrace export`: the trace files and Parquet; import -> export -> import into a fresh DB gives the same report."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.analytics.analytics_fixture import import_fixture, report_json
from tests.builders import run_cli


def test_round_trip_same_report(tmp_path: Path) -> None:
    first = tmp_path / "a.duckdb"
    import_fixture(first, tmp_path / "in")
    out = tmp_path / "out"
    code, text, err = run_cli("export", "--db", str(first), "--out", str(out))
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["audit.tsv", "events.parquet", "judge_items.parquet",
                                                     "judgments.jsonl", "run.jsonl", "traces.jsonl",
                                                     "trajectories.parquet", "verdicts.parquet"]
    check_typed_views(first, out)
    assert (out / "run.jsonl").read_text() == ""  # imported traces only: no run.started
    traces = [json.loads(x) for x in (out / "traces.jsonl").read_text().splitlines()]
    assert [t["trajectory_id"] for t in traces] == ["t-a1", "t-a2", "t-b1", "t-g1", "t-g2"]
    fetches = [s for s in traces[0]["steps"] if s["kind"] == "fetch"]
    assert [(f["status"], f["content"]) for f in fetches] == [
        ("ok", "page b says Paris"), ("timeout", None), ("ok", "page b says Paris")
    ]
    assert traces[1]["final_answer"] is None and traces[1]["stop_reason"] == "max_iterations"
    audit = (out / "audit.tsv").read_text().splitlines()
    assert audit == ["provider\tqid\tepoch\tsemantic_match", "alpha\tq1\t1\ttrue", "alpha\tq2\t1\tfalse",
                     "gamma\tq1\t1\tfalse", "gamma\tq2\t1\ttrue"]
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*), min(position), max(position) FROM '{out / 'events.parquet'}'").fetchone()
    src = duckdb.connect(str(first), read_only=True)
    assert n == src.execute("SELECT count(*), min(position), max(position) FROM events").fetchone()
    src.close()

    second = tmp_path / "b.duckdb"
    code, _, err = run_cli("import", "--db", str(second), str(out / "traces.jsonl"),
                           "--judgments", str(out / "judgments.jsonl"), "--audit", str(out / "audit.tsv"))
    assert code == 0, err
    for run in ("j1", "j2"):
        assert report_json(first, "--judge-run-id", run)[0] == report_json(second, "--judge-run-id", run)[0]
    # the export re-imported into the original database is a no-op
    code, text, err = run_cli("import", "--db", str(first), str(out / "traces.jsonl"),
                              "--judgments", str(out / "judgments.jsonl"), "--audit", str(out / "audit.tsv"))
    assert code == 0 and " 0 new events" in text, err


def check_typed_views(db: Path, out: Path) -> None:
    """The three notebook files are the views, every column, typed: integers as integers (also DuckDB's 128-bit
    sums), JSON payloads as strings, and nothing else turned into a double."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from searchtrace.analytics import ensure_views

    con = duckdb.connect(str(db), read_only=True)
    ensure_views(con, temp=True)
    ints = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "UINTEGER")
    for file, view in [("trajectories.parquet", "v_trajectories"), ("judge_items.parquet", "v_judge_items"),
                       ("verdicts.parquet", "v_verdicts")]:
        described = {str(c[0]): str(c[1]) for c in con.execute(f"DESCRIBE SELECT * FROM {view}").fetchall()}
        schema = pq.read_schema(out / file)
        assert schema.names == list(described)
        assert pq.read_metadata(out / file).num_rows == con.execute(f"SELECT count(*) FROM {view}").fetchone()[0] > 0
        for name, duck in described.items():
            typ = schema.field(name).type
            assert pa.types.is_integer(typ) == (duck in ints), (file, name, duck, typ)
            assert pa.types.is_floating(typ) == (duck in ("DOUBLE", "FLOAT")), (file, name, duck, typ)
            if duck in ("VARCHAR", "JSON"):
                assert pa.types.is_string(typ) or pa.types.is_large_string(typ), (file, name, typ)
    assert "HUGEINT" in {str(c[1]) for c in con.execute("DESCRIBE SELECT * FROM v_trajectories").fetchall()}
    con.close()
    items = pq.read_table(out / "judge_items.parquet")
    assert json.loads(items.column("metadata")[0].as_py()) is not None  # a JSON payload, as a string
    assert str(pq.read_table(out / "trajectories.parquet").to_pandas()["input_tokens"].dtype) == "int64"


def test_round_trip_of_recorded_events(tmp_path: Path) -> None:
    """Events recorded live (sandbox demo: engine + judge) export and re-import to the same report."""
    recorded = tmp_path / "demo.duckdb"
    code, _, err = run_cli("demo", "--db", str(recorded), "--out", str(tmp_path / "demo"), "--n", "6")
    assert code == 0, err
    out = tmp_path / "out"
    assert run_cli("export", "--db", str(recorded), "--out", str(out))[0] == 0
    again = tmp_path / "again.duckdb"
    code, _, err = run_cli("import", "--db", str(again), str(out / "traces.jsonl"),
                           "--judgments", str(out / "judgments.jsonl"), "--audit", str(out / "audit.tsv"))
    assert code == 0, err
    first, rep = report_json(recorded)
    assert rep["judge_run_id"] is not None and sum(p["valid_items"] for p in rep["providers"].values()) > 0
    assert report_json(again)[0] == first


def test_an_export_imported_into_its_own_recorded_store_adds_nothing(tmp_path: Path) -> None:
    """Recorded trajectories and verdicts have no content-derived ids: their export is compared by content."""
    recorded = tmp_path / "demo.duckdb"
    code, _, err = run_cli("demo", "--db", str(recorded), "--out", str(tmp_path / "demo"), "--n", "4")
    assert code == 0, err
    out = tmp_path / "out"
    assert run_cli("export", "--db", str(recorded), "--out", str(out))[0] == 0
    before, _ = report_json(recorded)
    n_before = duckdb.connect(str(recorded), read_only=True).execute("SELECT count(*) FROM events").fetchone()
    code, stdout, err = run_cli("import", "--db", str(recorded), str(out / "traces.jsonl"),
                                "--judgments", str(out / "judgments.jsonl"))
    assert code == 0, err
    assert "0 new trajectories" in stdout and "0 new events" in stdout
    con = duckdb.connect(str(recorded), read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone() == n_before
    con.close()
    assert report_json(recorded)[0] == before
    # a changed line is still a different trajectory under a stored id, and is refused
    lines = (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["final_answer"] = "something else entirely"
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(first) + "\n", encoding="utf-8")
    code, _, err = run_cli("import", "--db", str(recorded), str(changed))
    assert code == 2 and "already in the database with other content" in err
