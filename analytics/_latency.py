"""Provider latency per provider (docs/reference/prices.md): median and p90 of search and fetch `provider_ms` over successful
calls, and the calls those figures leave out, counted.

`provider_ms` is the final attempt from request sent to last byte read, so the figures never include the
client's own rate-limit and concurrency waits (`queue_ms`) or backoff sleeps. Only calls with status `ok` count
(a timeout's duration is the client's deadline, not the provider's speed); the others are
`search_failed_calls` / `fetch_failed_calls`. Calls without provider time (stores recorded before, imported traces,
fetch cache hits, counted in `fetch_cache_hits` and priced as fetches by analytics._cost) are left out; a provider
with none has null figures. The quantiles are DuckDB's `quantile_cont` (linear interpolation between order
statistics), the same on every run.
"""

from __future__ import annotations

from collections.abc import Mapping

from searchtrace.analytics._model import ArmMetrics
from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import Cursor


def fetch_cache_hit(c: str) -> str:
    """SQL: the `fetch_completions` row aliased `c` is a fetch answered from the cache (what `fetch_cache_hits`
    counts; the explorer lists them by the same test)."""
    return f"({c}.status = 'ok' AND coalesce({c}.cache_hit, false))"


def provider_latency(con: Cursor, blocks: Mapping[str, ArmMetrics]) -> None:
    """Each block's provider latency figures and failed / cached call counts over the calls of current trajectories
    (every epoch; an arm without calls keeps null and 0); an arm is the provider unless the report names another
    axis (analytics._rules.ARM_SQL)."""
    rows = con.execute(f"""WITH {TRAJECTORIES_CTE},
calls AS (
  SELECT tr.arm, 'search' AS kind, c.status, false AS cache_hit, c.provider_ms
  FROM search_completions c JOIN tr USING (stream_id)
  UNION ALL
  SELECT tr.arm, 'fetch' AS kind, c.status, {fetch_cache_hit("c")}, c.provider_ms
  FROM fetch_completions c JOIN tr USING (stream_id)
)
SELECT arm, kind, quantile_cont(provider_ms, 0.5) FILTER (WHERE status = 'ok'),
       quantile_cont(provider_ms, 0.9) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status <> 'ok'),
       count(*) FILTER (WHERE cache_hit)
FROM calls GROUP BY arm, kind ORDER BY arm, kind""").fetchall()
    for arm, kind, median, p90, failed, hits in rows:
        if (block := blocks.get(str(arm))) is None:
            continue
        median, p90 = None if median is None else float(median), None if p90 is None else float(p90)
        if kind == "search":
            block.search_provider_ms_median, block.search_provider_ms_p90 = median, p90
            block.search_failed_calls = int(failed)
        else:
            block.fetch_provider_ms_median, block.fetch_provider_ms_p90 = median, p90
            block.fetch_failed_calls, block.fetch_cache_hits = int(failed), int(hits)
