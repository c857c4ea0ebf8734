"""`searchtrace import`: events of docs/reference/events.md from the trace files, idempotent, and strict (exit 2, nothing written)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.analytics.analytics_fixture import AUDIT, JUDGMENTS, TRACES, write_fixture
from tests.builders import run_cli, write_jsonl


def counts(db: Path) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT type, count(*) FROM events GROUP BY type").fetchall()
        blobs = con.execute("SELECT count(*) FROM blobs").fetchone()
    finally:
        con.close()
    out = {t: int(n) for t, n in rows}
    out["blobs"] = int(blobs[0]) if blobs else 0
    return out


def do_import(db: Path, *args: Path | str) -> tuple[int, str]:
    code, _, err = run_cli("import", "--db", str(db), *map(str, args))
    return code, err


def test_events_of_an_import(tmp_path: Path) -> None:
    t, j, a = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    assert do_import(db, t, "--judgments", j, "--audit", a)[0] == 0
    c = counts(db)
    assert c["trajectory.started"] == 5 and c["trajectory.finished"] == 5
    assert c["dataset.question"] == 2  # q1 and q2, shared across providers
    assert c["search.called"] == c["search.completed"] == 6
    assert c["search.result"] == 3 + 2 + 2 + 2 + 2 + 0
    assert c["fetch.called"] == c["fetch.completed"] == 3
    assert c["answer.final"] == 4  # t-a2 has none
    assert c["model.responded"] == 6
    assert c["judge.started"] == 2 and c["judge.verdict"] == len(JUDGMENTS) and c["audit.answer"] == 4
    assert c["blobs"] == 1  # the same page content fetched twice is stored once
    con = duckdb.connect(str(db), read_only=True)
    try:
        started = con.execute(
            "SELECT payload->>'$.question', payload->>'$.gold_answer', stream_id FROM events "
            "WHERE type = 'trajectory.started' AND payload->>'$.trajectory_id' = 't-a1'"
        ).fetchone()
        urls = con.execute(
            "SELECT DISTINCT payload->>'$.url_normalized' FROM events WHERE type = 'search.result' "
            "AND stream_id = 'traj:t-a1' ORDER BY 1"
        ).fetchall()
        model = con.execute("SELECT payload->>'$.model' FROM events WHERE type = 'judge.started'").fetchall()
    finally:
        con.close()
    assert started == ("What is q1?", "Paris", "traj:t-a1")
    assert [u[0] for u in urls] == [
        "https://example.com/a", "https://fourth.io/d", "https://other.org/b", "https://third.net/c"
    ]
    assert {m[0] for m in model} == {"imported"}


def test_import_twice_adds_nothing(tmp_path: Path) -> None:
    t, j, a = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    assert do_import(db, t, "--judgments", j, "--audit", a)[0] == 0
    before = counts(db)
    code, _, _ = run_cli("import", "--db", str(db), str(t), "--judgments", str(j), "--audit", str(a))
    assert code == 0
    assert counts(db) == before


def _bad_trace(mutate: Any) -> list[dict[str, Any]]:
    rows = copy.deepcopy(TRACES)
    mutate(rows)
    return rows


TRACE_CASES: list[tuple[str, Any, int, str]] = [
    ("same trajectory_id", lambda rows: rows.append({**rows[0], "qid": "q9"}), 6, "trajectory_id"),
    ("same provider and qid", lambda rows: rows.append({**rows[0], "trajectory_id": "t-new"}), 6, "qid"),
    (
        "fetch of a doc_id no earlier search returned",
        lambda rows: rows[2]["steps"].insert(1, {**TRACES[0]["steps"][3], "doc_id": "d1"}),
        3,
        "steps[1].doc_id",
    ),
    ("bad type", lambda rows: rows[1].update(steps=[{"kind": "model", "iteration": "one"}]), 2, "steps[0].iteration"),
    ("unknown stop reason", lambda rows: rows[4].update(stop_reason="gave_up"), 5, "stop_reason"),
    ("missing field", lambda rows: rows[3].pop("qid"), 4, "qid"),
    ("empty id", lambda rows: rows[0].update(provider=""), 1, "provider"),
    ("rank 0", lambda rows: rows[2]["steps"][1]["results"][1].update(rank=0), 3, "steps[1].results[1].rank"),
    ("negative tokens", lambda rows: rows[3]["steps"][0]["usage"].update(output_tokens=-1), 4, "steps[0].usage.output_tokens"),
]


@pytest.mark.parametrize(("name", "mutate", "line", "field"), TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_bad_traces_write_nothing(
    tmp_path: Path, name: str, mutate: Any, line: int, field: str
) -> None:
    db = tmp_path / "x.duckdb"
    _, j, a = write_fixture(tmp_path)
    bad = write_jsonl(tmp_path / "bad.jsonl", _bad_trace(mutate))
    code, err = do_import(db, bad, "--audit", a)
    assert code == 2
    assert f"{bad}: line {line}: field {field}:" in err, err
    assert err.count("\n") == 1
    assert not db.exists()  # a failed import into a new store leaves no store behind


def test_unreadable_json_line(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    bad = tmp_path / "t.jsonl"
    bad.write_text(json.dumps(TRACES[0]) + "\n{not json\n", encoding="utf-8")
    code, err = do_import(db, bad)
    assert code == 2 and f"{bad}: line 2: field (line): not valid JSON" in err
    assert not db.exists()  # a failed import into a new store leaves no store behind


def _labels(**page: Any) -> dict[str, Any]:
    return {
        "snippet": {"supports_gold": True, "contradicts_gold": False, "relevant": True},
        "page": page or None,
        "supports_final_answer": True,
        "rationale": "x",
    }


def _v(url: str, labels: Any, tid: str = "t-a1", valid: bool = True) -> dict[str, Any]:
    return {"judge_run_id": "j9", "trajectory_id": tid, "url": url, "valid": valid, "labels": labels,
            "invalid_reason": None}


PAGE = {"supports_gold": True, "contradicts_gold": False, "relevant": True}
VERDICT_CASES: list[tuple[str, list[dict[str, Any]], int, str]] = [
    ("unknown trajectory", [_v("https://x.org", _labels(), tid="t-zz")], 1, "trajectory_id"),
    ("url not an item", [_v("https://example.com/a", _labels()), _v("https://nope.org/", _labels())], 2, "url"),
    (
        "two verdicts for one item (another spelling)",
        [_v("https://example.com/a", _labels()), _v("HTTPS://EXAMPLE.COM/a/?utm_medium=y", _labels())],
        2,
        "url",
    ),
    ("valid with labels missing", [_v("https://example.com/a", None)], 1, "labels"),
    (
        "labels with a missing key",
        [_v("https://example.com/a", {**_labels(), "snippet": {"supports_gold": True, "relevant": True}})],
        1,
        "labels.snippet",
    ),
    ("labels with a wrong type", [_v("https://example.com/a", {**_labels(), "rationale": 3})], 1, "labels.rationale"),
    ("labels with an extra key", [_v("https://example.com/a", {**_labels(), "score": 1})], 1, "labels"),
    ("page on a snippet-only item", [_v("https://example.com/a", _labels(**PAGE))], 1, "labels.page"),
    ("no page on a page-visible item", [_v("https://other.org/b", _labels())], 1, "labels.page"),
    ("page on a fetched item whose fetch failed", [_v("https://fourth.io/d", _labels(**PAGE))], 1, "labels.page"),
]


@pytest.mark.parametrize(("name", "rows", "line", "field"), VERDICT_CASES, ids=[c[0] for c in VERDICT_CASES])
def test_bad_judgments_write_nothing(
    tmp_path: Path, name: str, rows: list[dict[str, Any]], line: int, field: str
) -> None:
    t, _, _ = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    assert do_import(db, t)[0] == 0
    before = counts(db)
    bad = write_jsonl(tmp_path / "j.jsonl", rows)
    code, err = do_import(db, "--judgments", bad)
    assert code == 2
    assert f"{bad}: line {line}: field {field}" in err, err
    assert counts(db) == before


def test_bad_judgments_in_the_same_call_write_nothing_at_all(tmp_path: Path) -> None:
    t, _, _ = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    bad = write_jsonl(tmp_path / "j.jsonl", [_v("https://nope.org/", _labels())])
    code, err = do_import(db, t, "--judgments", bad)
    assert code == 2 and "field url" in err
    assert not db.exists()  # a failed import into a new store leaves no store behind


def test_invalid_verdict_needs_no_labels(tmp_path: Path) -> None:
    t, _, _ = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    ok = write_jsonl(tmp_path / "j.jsonl", [_v("https://other.org/b", {"garbage": 1}, valid=False)])
    assert do_import(db, t, "--judgments", ok)[0] == 0
    assert counts(db)["judge.verdict"] == 1


AUDIT_CASES: list[tuple[str, str, int, str]] = [
    ("value outside the four", AUDIT + "beta\tq1\tyes\n", 6, "semantic_match"),
    ("two rows for one key", AUDIT + "alpha\tq1\tfalse\n", 6, "qid"),
    ("header without semantic_match", "provider\tqid\tmatch\nalpha\tq1\t1\n", 1, "semantic_match"),
    ("missing cell", AUDIT + "beta\tq1\n", 6, "semantic_match"),
]


@pytest.mark.parametrize(("name", "text", "line", "field"), AUDIT_CASES, ids=[c[0] for c in AUDIT_CASES])
def test_bad_audit_writes_nothing(
    tmp_path: Path, name: str, text: str, line: int, field: str
) -> None:
    db = tmp_path / "x.duckdb"
    bad = tmp_path / "a.tsv"
    bad.write_text(text, encoding="utf-8")
    code, err = do_import(db, "--audit", bad)
    assert code == 2
    assert f"{bad}: line {line}: field {field}" in err, err
    assert not db.exists()  # a failed import into a new store leaves no store behind


def test_conflicts_with_the_database(tmp_path: Path) -> None:
    t, j, a = write_fixture(tmp_path)
    db = tmp_path / "x.duckdb"
    assert do_import(db, t, "--judgments", j, "--audit", a)[0] == 0
    before = counts(db)
    changed = copy.deepcopy(TRACES[:1])
    changed[0]["final_answer"] = "Lyon"
    code, err = do_import(db, write_jsonl(tmp_path / "t2.jsonl", changed))
    assert code == 2 and "line 1: field trajectory_id" in err and "other content" in err
    other_id = [{**copy.deepcopy(TRACES[0]), "trajectory_id": "t-a1-bis"}]
    code, err = do_import(db, write_jsonl(tmp_path / "t3.jsonl", other_id))
    assert code == 2 and "line 1: field qid" in err
    flipped = [{**JUDGMENTS[0], "labels": {**JUDGMENTS[0]["labels"], "rationale": "changed"}}]
    code, err = do_import(db, "--judgments", write_jsonl(tmp_path / "j2.jsonl", flipped))
    assert code == 2 and "line 1: field url" in err
    a2 = tmp_path / "a2.tsv"
    a2.write_text("provider\tqid\tsemantic_match\nalpha\tq1\tfalse\n", encoding="utf-8")
    code, err = do_import(db, "--audit", a2)
    assert code == 2 and "line 2: field semantic_match" in err
    assert counts(db) == before


def test_nothing_to_import_is_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli("import", "--db", str(tmp_path / "x.duckdb"))
    assert code == 2 and "nothing to import" in err
