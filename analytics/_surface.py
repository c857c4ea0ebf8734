"""Surface size per provider (docs/how-to/providers.md): mean and median `surface_chars` over every search.result it returned.

A longer surface has more chances to hold the answer; the report puts these next to the support rates. The mean is
DuckDB's avg of integers (an exact integer sum divided once), so it is deterministic without rounding.
"""

from __future__ import annotations

from typing import Any

from searchtrace.analytics._rules import TRAJECTORIES_CTE, surface_chars_sql
from searchtrace.store import Cursor

NO_SIZES: dict[str, Any] = {"surface_chars_mean": None, "surface_chars_median": None}  # a provider without results


def surface_sizes(con: Cursor) -> dict[str, dict[str, Any]]:
    """{arm: {surface_chars_mean, surface_chars_median}} over the results of current trajectories (every epoch); an
    arm is the provider unless the report names another axis (analytics._rules.ARM_SQL)."""
    rows = con.execute(f"""WITH {TRAJECTORIES_CTE}
SELECT tr.arm, avg({surface_chars_sql("r")}), median({surface_chars_sql("r")})
FROM search_results r JOIN tr USING (stream_id) GROUP BY tr.arm ORDER BY tr.arm""").fetchall()
    return {str(name): {"surface_chars_mean": None if mean is None else float(mean),  # docs/concepts/statistics.md: unrounded
                        "surface_chars_median": None if med is None else float(med)}
            for name, mean, med in rows}
