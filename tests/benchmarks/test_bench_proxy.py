"""`bench proxy` end to end on a tiny budget: sandbox and proxy in child processes, same bodies both ways."""

from __future__ import annotations

from searchtrace.benchmarks._proxy import run


def test_bench_proxy_measures_added_latency_on_identical_replies() -> None:
    result = run(12, "chat")  # raises when a proxied reply differs from the direct one (a chat turn: its
    # request messages are stored as evidence on the way)
    assert result["calls"] == 12
    for k in ("direct_p50_ms", "proxied_p50_ms", "direct_p99_ms", "proxied_p99_ms"):
        assert result[k] > 0
    assert abs(result["added_p50_ms"] - (result["proxied_p50_ms"] - result["direct_p50_ms"])) <= 0.002
    assert result["ok"] == (result["added_p50_ms"] <= 2.0)
    assert result["proxy_cpu_ms_per_call"] > 0  # the proxy process's own CPU over the measured calls


def test_bench_proxy_measures_the_claude_gemini_and_responses_routes() -> None:
    for route in ("anthropic-stream", "gemini-stream", "responses"):  # the relayed event stream is the direct one, byte for byte
        result = run(6, route)
        assert result["route"] == route and result["proxied_p50_ms"] > 0
