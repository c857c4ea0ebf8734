"""`searchtrace bench ingest --json` runs all paths on the same rows and reports the contract keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.benchmarks._ingest import bench_prepare
from searchtrace.benchmarks._synthetic import events
from searchtrace.cli import main
from searchtrace.store import EventLog, encode_payload
from searchtrace.store._schema import GENESIS, row_hash


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
        "sync_append_events_per_s", "prepare_events_per_s",
    ):
        assert isinstance(result[key], int) and result[key] > 0, key
    assert result["store_vs_raw"] == pytest.approx(result["store_events_per_s"] / result["raw_bulk_events_per_s"], abs=2e-3)
    assert result["prepare_vs_raw"] == pytest.approx(
        result["prepare_events_per_s"] / result["raw_bulk_events_per_s"], abs=2e-3)
    assert "flushes of 20,000" in result["prepare_note"]
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


def test_the_preparing_step_measured_alone_chains_every_row(tmp_path: Path) -> None:
    """`bench ingest`'s "preparing alone" times the Writer's real work: each flush, prepared on an empty store,
    ends on the hash the row formula gives for its rows, and nothing is written."""
    got = bench_prepare(tmp_path / "p.duckdb", 2_500, 1_000)
    with EventLog(tmp_path / "p.duckdb", read_only=True) as log:
        assert log.head == 0
    prev, seqs = GENESIS, dict[str, int]()
    for position, e in enumerate(list(events(2_500))[2_000:], start=1):  # the last of flushes of 1,000, 1,000, 500
        seqs[e.stream_id] = seqs.get(e.stream_id, -1) + 1
        prev = row_hash(prev, position, e.event_id, e.stream_id, seqs[e.stream_id], str(e.payload.__struct_config__.tag),
                        e.run_id, got["recorded_at_us"], encode_payload(e.payload))
    assert (got["position"], got["hash"]) == (500, prev)
