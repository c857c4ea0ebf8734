"""`bench http` end to end on a tiny budget: a server in a child process, three clients, per-round shares."""

from __future__ import annotations

import anyio

from searchtrace.benchmarks._http import run_all


def test_bench_http_runs_all_clients_against_a_child_server() -> None:
    result = anyio.run(lambda: run_all([4], 0.1, None, rounds=2), backend="asyncio")
    (row,) = result["levels"]
    for name in ("transport", "adapter", "aiohttp"):
        assert row[name]["errors"] == 0 and row[name]["rps"] > 0 and row[name]["cpu_ms_per_request"] > 0
    assert 0 < row["transport_share"] and 0 < row["adapter_share"] and row["adapter_cpu_share"] > 0
    assert result["ok"] == (row["transport_share"] >= 0.85 and row["adapter_share"] >= 0.85)
