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

from typing import Any

from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import Cursor

KEYS = ("search_provider_ms_median", "search_provider_ms_p90", "fetch_provider_ms_median", "fetch_provider_ms_p90")
COUNTS = ("search_failed_calls", "fetch_failed_calls", "fetch_cache_hits")
NO_LATENCY: dict[str, Any] = {**dict.fromkeys(KEYS), **dict.fromkeys(COUNTS, 0)}


def fetch_cache_hit(c: str) -> str:
    """SQL: the `fetch_completions` row aliased `c` is a fetch answered from the cache (what `fetch_cache_hits`
    counts; the explorer lists them by the same test)."""
    return f"({c}.status = 'ok' AND coalesce({c}.cache_hit, false))"


def provider_latency(con: Cursor) -> dict[str, dict[str, Any]]:
    """{arm: KEYS and COUNTS} over the calls of current trajectories (every epoch); an arm is the provider unless the
    report names another axis (analytics._rules.ARM_SQL)."""
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
    out: dict[str, dict[str, Any]] = {}
    for provider, kind, median, p90, failed, hits in rows:
        block = out.setdefault(str(provider), dict(NO_LATENCY))
        block[f"{kind}_provider_ms_median"] = None if median is None else float(median)
        block[f"{kind}_provider_ms_p90"] = None if p90 is None else float(p90)
        block[f"{kind}_failed_calls"] = int(failed)
        if kind == "fetch":
            block["fetch_cache_hits"] = int(hits)
    return out
