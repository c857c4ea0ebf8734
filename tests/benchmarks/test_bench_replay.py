"""`bench replay`: the synthetic files have the paper's shape, import cleanly, and the report counts them back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.benchmarks._replay import PROVIDERS, generate
from searchtrace.cli import main


def test_generator_is_deterministic_and_paper_sized(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    fa, fb = generate(a, 1, seed=3), generate(b, 1, seed=3)
    for name in ("traces.jsonl", "judgments.jsonl", "audit.tsv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert fa.trajectories == 300 and fa.judge_items == fb.judge_items
    assert 6_000 <= fa.judge_items <= 8_000
    traces = [json.loads(line) for line in fa.traces.read_text().splitlines()]
    searches = sum(1 for t in traces for s in t["steps"] if s["kind"] == "search")
    fetches = sum(1 for t in traces for s in t["steps"] if s["kind"] == "fetch")
    assert 2.5 <= searches / 300 <= 3.8 and 1.0 <= fetches / 300 <= 2.0
    assert {t["provider"] for t in traces} == set(PROVIDERS)


def test_bench_replay_cli_counts_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        main(["bench", "replay", "--scales", "1", "--json", "--workdir", str(tmp_path)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    row = out["scales"][0]
    assert row["scale"] == 1 and row["trajectories"] == 300 and row["identical"] is True
    assert row["report_cold_s"] > 0 and row["import_s"] > 0
    assert set(out["targets"]) == {"report_1x_under_1s", "report_100x_under_30s"}
    # the report over the imported store counts exactly what the generator wrote
    judgments = [json.loads(line) for line in (tmp_path / "1x" / "judgments.jsonl").read_text().splitlines()]
    from searchtrace.analytics import build_report
    from searchtrace.store import EventLog

    with EventLog(tmp_path / "1x" / "bench.duckdb") as log:
        con = log.cursor()
        report = build_report(con).report  # writable: installs the views itself
        con.close()
    providers = report.to_builtins()["providers"]
    assert sorted(providers) == sorted(PROVIDERS)
    assert all(p["trajectories"] == 100 and p["audited"] == 100 for p in providers.values())
    assert sum(p["items"] for p in providers.values()) == len(judgments) == row["judge_items"]
    assert sum(p["invalid_items"] for p in providers.values()) == sum(1 for j in judgments if not j["valid"])
    assert sum(p["page_visible_items"] for p in providers.values()) == sum(
        1 for j in judgments if j["valid"] and j["labels"]["page"] is not None
    )


def test_bad_scales_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "replay", "--scales", "x"])
    assert exc.value.code == 2 and "--scales" in capsys.readouterr().err
