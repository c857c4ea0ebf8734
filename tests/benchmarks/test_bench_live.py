"""`bench live` at a tiny size: it measures both phases against a real serving writer and real reader processes."""

from __future__ import annotations

import json

import pytest

from searchtrace.benchmarks._live import measure
from searchtrace.cli import main


def test_bench_live_measures_readers_and_a_streamed_pull(capsys: pytest.CaptureFixture[str]) -> None:
    m = measure(events=400, batch=20, readers=2, rows=200_000, rounds=1)
    assert m["events"] == 400 and m["readers"] == 2
    alone, read = m["alone_s"], m["with_readers_s"]
    assert isinstance(alone, list) and len(alone) == 1 and alone[0] > 0 and isinstance(read, list) and read[0] > 0
    assert isinstance(m["slowdown"], float) and m["slowdown"] > 0
    assert m["ratios"] == pytest.approx([read[0] / alone[0]], rel=0.05)  # of the times rounded to 1 ms
    pull = m["pull"]
    assert isinstance(pull, dict) and pull["rows"] == 200_000
    assert pull["rss_growth_mb"] < 200  # streamed: the writer never holds the whole answer
    main(["bench", "live", "--events", "200", "--readers", "1", "--rows", "1000", "--rounds", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["pull"]["rows"] == 1000 and "slowdown_at_most_1.2x" in out["targets"]
