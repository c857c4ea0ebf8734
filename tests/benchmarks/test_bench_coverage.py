"""`bench coverage`: its generated rows are what the report reads, and the command runs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from searchtrace.analytics import build_report, provider_metrics
from searchtrace.benchmarks._coverage import (
    Scenario,
    _rng,
    _tally,
    failures,
    figures,
    null_store,
    report_blocks,
    run_store,
    score,
    summary,
    trace_files,
)
from searchtrace.replay.interchange import import_files
from searchtrace.store import EventLog
from tests.builders import run_cli


def test_generated_rows_written_as_events_give_the_bench_intervals(tmp_path: Path) -> None:
    """A small store of two arms (partial audits) through import + build_report: the same intervals and tests
    as the bench computes from its rows directly."""
    s = Scenario(kind="null", n=8, k=1, p=0.2, design="k1-partial-audit")
    rows = null_store(s, _rng(1, s, 4))  # a store whose rank-1 appearances fit its searches (trace_files)
    assert any(r.semantic_match is None for a in rows.values() for r in a)  # partial audits are exercised
    assert sum(r.supported_rank1 > 0 for a in rows.values() for r in a) >= 3
    files = trace_files(rows, tmp_path)
    db = tmp_path / "cov.duckdb"
    with EventLog(db) as log:
        import_files(log, [files[0]], [files[1]], [files[2]])
        con = log.cursor()
        try:
            report = build_report(con, bootstrap=300, seed="cov").report
        finally:
            con.close()
    bench = report_blocks(rows, 300, "cov")
    for name in ("a", "b"):
        got = msgspec.to_builtins(report.providers[name])
        assert got["trajectories"] == len(rows[name])
        bare = msgspec.to_builtins(provider_metrics(rows[name]))  # what the intervals add to the block
        added = {k: v for k, v in bench[name].items() if k not in bare}
        assert added and {k: got[k] for k in added} == added
    assert msgspec.to_builtins(report.pairs["a|b"]) == bench["a|b"]


def test_command_reports_coverage_per_figure(tmp_path: Path) -> None:
    out = tmp_path / "cov.json"
    ran = run_cli("bench", "coverage", "--stores", "3", "--replicates", "50", "--workers", "1", "--only",
                  "null n30 k1", "--out", str(out))
    doc = json.loads(out.read_text())
    failed = failures(doc["misses"])
    assert ran.code == (1 if failed else 0), ran.err  # 3 stores: a miss is likely, and fails the command loudly
    assert all(f"coverage FAILED: {line}" in ran.err for line in failed)
    names = [r["scenario"] for r in doc["scenarios"]]
    assert names == ["null n30 k1", "null n30 k1-partial-audit"]
    fig = doc["scenarios"][0]["figures"]["accuracy_diff_ci"]
    assert fig["stores"] + fig["undefined"] + fig["absent"] == 3 and 0 <= fig["coverage"] <= 1
    assert "acc Δ" in ran.out and "targets missed" in ran.out
    assert run_cli("bench", "coverage", "--only", "nothing such").code == 2
    # several --only are a union, --skip leaves names out: a scenario whose name extends another's runs apart
    skipped = tmp_path / "skip.json"
    run_cli("bench", "coverage", "--stores", "1", "--replicates", "20", "--workers", "1", "--only", "null n30 k1",
            "--only", "null n100 k1", "--skip", "partial", "--out", str(skipped))
    assert [r["scenario"] for r in json.loads(skipped.read_text())["scenarios"]] == ["null n30 k1", "null n100 k1"]
    assert run_cli("bench", "coverage", "--only", "null n30 k1", "--skip", "null").code == 2


def test_refusals_are_checked_and_a_miss_is_named() -> None:
    # an audit of judge-true cases only: every corrected figure must be null, and is
    s = Scenario(kind="judge", n=30, audit_strata="true-only")
    figs = figures(s)
    tally = _tally(figs)
    for i in range(2):
        score(figs, run_store(s, i, 1, 50), tally)
    rows = summary(s, tally, 0.0, 2)["figures"]
    refused = [r for r in rows.values() if r["kind"] == "refused"]
    assert refused and all(r["ok"] and r["undefined"] == 2 for r in refused)
    assert failures([{"scenario": "pair n30 k1 0.06-0.02 independent", "figure": "accuracy_diff_ci", "value": 0.82,
                      "zero_width": 0.0, "clear": True, "refused": False}]) == [
        "pair n30 k1 0.06-0.02 independent: accuracy_diff_ci covers 82.0 %"]
    assert failures([{"scenario": "null n30 k1", "figure": "accuracy_diff_p", "value": 0.06, "zero_width": 0.0,
                      "clear": False, "refused": False}]) == []  # a test within noise of 5 % does not fail
