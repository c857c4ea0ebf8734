"""docs/reference/prices.md: a recorded call's provider_ms is the provider's time alone; our own rate-limit waits are queue_ms.

One sandbox run, two providers answering alike: Brave limited to 1 request/s (a leaky bucket of one), Tavily
unlimited. Brave's searches queue behind its limiter, so their total latency grows by hundreds of ms, while the time
on the wire stays that of the unlimited provider.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace import pipeline
from searchtrace.adapters.sandbox import in_process
from searchtrace.engine import point_at_sandbox
from searchtrace.store import EventLog, FetchCompleted, ModelResponded, SearchCompleted, TrajectoryStarted
from tests.builders import sandbox_config, trajectories

pytestmark = pytest.mark.anyio


def _searches(db: Path) -> dict[str, list[SearchCompleted]]:
    out: dict[str, list[SearchCompleted]] = {}
    with EventLog(db) as log:
        for payloads in trajectories(log).values():
            start = payloads[0]
            assert isinstance(start, TrajectoryStarted)
            out.setdefault(start.provider, []).extend(p for p in payloads if isinstance(p, SearchCompleted))
            for p in payloads:  # every call event of the run carries both timings
                if isinstance(p, SearchCompleted | ModelResponded) or (isinstance(p, FetchCompleted) and not p.cache_hit):
                    assert isinstance(p.provider_ms, float) and isinstance(p.queue_ms, float), p
                    assert 0.0 < p.provider_ms and 0.0 <= p.queue_ms and p.provider_ms + p.queue_ms <= p.latency_ms + 1e-6, p
    return out


async def test_a_rate_limited_provider_queues_but_its_provider_time_stays_the_same(tmp_path: Path) -> None:
    cfg = sandbox_config(tmp_path, n=4, providers={"brave": {"rps": 1.0}},
                 limits={"max_trajectories": 8})
    sandbox = in_process()
    point_at_sandbox(cfg, sandbox.root)
    db = tmp_path / "lat.duckdb"
    await pipeline.record(cfg, db, sandbox.transport, progress=False)
    by_provider = _searches(db)
    brave, tavily = by_provider["brave"], by_provider["tavily"]
    assert len(brave) >= 4 and len(tavily) >= 4
    assert all(s.status == "ok" and not isinstance(s.provider_ms, msgspec.UnsetType) for s in brave + tavily)

    def median(rows: list[SearchCompleted], field: str) -> float:
        values: list[Any] = [getattr(s, field) for s in rows]
        return float(statistics.median(values))

    # the limit is our own wait: Brave's searches come faster than one a second, so they queue behind its limiter ...
    assert median(brave, "latency_ms") - median(tavily, "latency_ms") > 300.0
    assert median(brave, "queue_ms") > 300.0
    # ... and the wait is not time on the wire: _searches found provider_ms + queue_ms within latency_ms for every
    # call, as the clock reads come in that order (queued <= sent <= last byte <= returned); a wait counted in
    # provider_ms too would make the parts exceed the whole by about the wait, more than 300 ms for most of these


def test_old_events_decode_and_keep_their_bytes_without_the_fields() -> None:
    from searchtrace.store import decode_payload, encode_payload

    old = (b'{"type":"search.completed","call_id":"c1","status":"ok","n_results":3,"latency_ms":12.5,'
           b'"raw_digest":null,"http_status":200,"error":null}')
    payload = decode_payload(old)
    assert isinstance(payload, SearchCompleted)
    assert isinstance(payload.provider_ms, msgspec.UnsetType) and isinstance(payload.queue_ms, msgspec.UnsetType)
    assert encode_payload(payload) == old  # absent stays absent: imported and old events keep their bytes
    timed = msgspec.structs.replace(payload, provider_ms=4.25, queue_ms=0.5)
    assert encode_payload(timed) == old[:-1] + b',"provider_ms":4.25,"queue_ms":0.5}'
