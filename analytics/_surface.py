"""Surface size per provider (docs/how-to/providers.md): mean and median `surface_chars` over every search.result it returned.

A longer surface has more chances to hold the answer; the report puts these next to the support rates. The mean is
DuckDB's avg of integers (an exact integer sum divided once), so it is deterministic without rounding.
"""

from __future__ import annotations

from collections.abc import Mapping

from searchtrace.analytics._model import ArmMetrics
from searchtrace.analytics._rules import TRAJECTORIES_CTE, surface_chars_sql
from searchtrace.store import Cursor


def surface_sizes(con: Cursor, blocks: Mapping[str, ArmMetrics]) -> None:
    """Each block's `surface_chars_mean` and `surface_chars_median` over the results of current trajectories (every
    epoch; an arm without results keeps null); an arm is the provider unless the report names another axis
    (analytics._rules.ARM_SQL)."""
    rows = con.execute(f"""WITH {TRAJECTORIES_CTE}
SELECT tr.arm, avg({surface_chars_sql("r")}), median({surface_chars_sql("r")})
FROM search_results r JOIN tr USING (stream_id) GROUP BY tr.arm ORDER BY tr.arm""").fetchall()
    for name, mean, med in rows:
        if (block := blocks.get(str(name))) is not None:
            block.surface_chars_mean = None if mean is None else float(mean)  # docs/concepts/statistics.md: unrounded
            block.surface_chars_median = None if med is None else float(med)
