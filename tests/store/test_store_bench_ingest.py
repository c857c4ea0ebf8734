"""`searchtrace bench ingest --json` runs all paths on the same rows and reports the contract keys."""

from __future__ import annotations

import json

import pytest

from searchtrace.benchmarks._synthetic import events
from searchtrace.cli import main
from searchtrace.store import encode_payload


def test_bench_ingest_json(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "ingest", "--events", "3000", "--batch", "1000", "--naive-events", "40",
              "--writer-events", "600", "--producers", "5", "--per-call", "100", "--json"])
        raise SystemExit(0)
    assert exc.value.code in (0, None)
    result = json.loads(capsys.readouterr().out)
    assert result["events"] == 3000
    for key in (
        "store_events_per_s", "raw_bulk_events_per_s", "naive_events_per_s", "writer_events_per_s",
        "sync_append_events_per_s",
    ):
        assert isinstance(result[key], int) and result[key] > 0, key
    assert result["store_vs_raw"] == pytest.approx(result["store_events_per_s"] / result["raw_bulk_events_per_s"], abs=2e-3)
    assert "5 anyio producers x Writer.append of 100 events" in result["store_path"]
    assert 1 <= result["store_commits"] <= 3000 // 100
    assert result["naive_measured_rows"] == 40
    assert result["raw_bulk_events_per_s"] > result["naive_events_per_s"]


def test_synthetic_events_are_search_result_sized() -> None:
    sample = list(events(2000))
    sizes = [len(encode_payload(e.payload)) for e in sample if e.payload.__struct_config__.tag == "search.result"]
    assert 550 <= sum(sizes) / len(sizes) <= 700
    assert len({e.event_id for e in sample}) == 2000
    assert [e.event_id for e in events(50)] == [e.event_id for e in sample[:50]]  # deterministic
