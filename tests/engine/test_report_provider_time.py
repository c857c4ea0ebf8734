"""docs/reference/prices.md in the report: a provider held to 1 request/s by our own limiter is not reported slower.

Brave at rps = 1 and Tavily unlimited, both against the same in-process sandbox: Brave's calls wait in our
limiter (its median total search latency is hundreds of ms higher), but the report's latency figures are the
provider time of the same calls, which leaves the wait out.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import duckdb
import pytest

from searchtrace import pipeline
from searchtrace.adapters.sandbox import in_process
from searchtrace.engine import point_at_sandbox
from tests.builders import sandbox_config
from tests.engine.test_clean_latency import _searches

pytestmark = pytest.mark.anyio


async def test_report_latency_is_provider_time(tmp_path: Path) -> None:
    cfg = sandbox_config(tmp_path, n=4, providers={"brave": {"rps": 1.0}}, limits={"max_trajectories": 8})
    cfg.providers = {k: v for k, v in cfg.providers.items() if k in ("brave", "tavily")}
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "lat.duckdb"
    await pipeline.record(cfg, db, box.transport, progress=False)
    rep = pipeline.report(db, bootstrap=0).data.providers
    brave, tavily = rep["brave"], rep["tavily"]
    assert all(isinstance(v, float) for b in (brave, tavily)
               for v in (b.search_provider_ms_median, b.search_provider_ms_p90))
    con = duckdb.connect(str(db), read_only=True)
    try:  # the wall time of the same calls, independently: what the old latency figure showed
        wall = dict(con.execute("SELECT provider, median(latency_ms) FROM v_searches GROUP BY 1").fetchall())
    finally:
        con.close()
    assert wall["brave"] - wall["tavily"] > 300.0
    # the report's figures are the provider time of the same calls (recomputed here from the events), not the wall
    # time: compared as numbers, not as a tolerance in milliseconds a loaded machine could stretch
    calls = _searches(db)
    for name, block in (("brave", brave), ("tavily", tavily)):
        own = statistics.median([s.provider_ms for s in calls[name] if s.status == "ok" and isinstance(s.provider_ms, float)])
        assert block.search_provider_ms_median == pytest.approx(own, rel=1e-9), name
    p90, median = brave.search_provider_ms_p90, brave.search_provider_ms_median
    assert p90 is not None and median is not None and p90 >= median
