"""`bench otel` on a tiny budget: the receiver in a child process and the import record the same events."""

from __future__ import annotations

from searchtrace.benchmarks._otel import run


def test_bench_otel_measures_receiver_against_import_on_the_same_spans() -> None:
    out = run(6, 3)
    assert out["same_events"] is True and out["spans"] == 6 * 7
    assert out["receiver_spans_per_s"] > 0 and out["import_spans_per_s"] > 0 and out["cpu_ratio"] > 0
