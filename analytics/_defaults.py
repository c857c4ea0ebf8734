"""The report's defaults, apart from the code that computes it: `report --help` shows them without loading DuckDB
or numpy."""

from __future__ import annotations

DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = "searchtrace"
