"""Provider latency per provider (SPEC §13): median and p90 of search and fetch `provider_ms`.

`provider_ms` is the final attempt from request sent to last byte read, so the figures never include the
client's own rate-limit and concurrency waits (`queue_ms`) or backoff sleeps. Calls without it (stores recorded
before, imported traces, fetch cache hits) are left out; a provider with none has null figures. The quantiles
are DuckDB's `quantile_cont` (linear interpolation between order statistics), the same on every run.
"""

from __future__ import annotations

from typing import Any

from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.store import Cursor

KEYS = ("search_provider_ms_median", "search_provider_ms_p90", "fetch_provider_ms_median", "fetch_provider_ms_p90")
NO_LATENCY: dict[str, Any] = dict.fromkeys(KEYS)


def provider_latency(con: Cursor) -> dict[str, dict[str, Any]]:
    """{provider: {search|fetch_provider_ms_median|p90}} over the calls of current trajectories (every epoch)."""
    rows = con.execute(f"""WITH {TRAJECTORIES_CTE},
calls AS (
  SELECT tr.provider, 'search' AS kind, c.provider_ms FROM search_completions c JOIN tr USING (stream_id)
  UNION ALL
  SELECT tr.provider, 'fetch' AS kind, c.provider_ms FROM fetch_completions c JOIN tr USING (stream_id)
)
SELECT provider, kind, quantile_cont(provider_ms, 0.5), quantile_cont(provider_ms, 0.9)
FROM calls WHERE provider_ms IS NOT NULL GROUP BY provider, kind ORDER BY provider, kind""").fetchall()
    out: dict[str, dict[str, Any]] = {}
    for provider, kind, median, p90 in rows:
        block = out.setdefault(str(provider), dict(NO_LATENCY))
        block[f"{kind}_provider_ms_median"] = float(median)
        block[f"{kind}_provider_ms_p90"] = float(p90)
    return out
