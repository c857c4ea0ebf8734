"""The typed read model: everything the product shows (the report and its blocks, the judge comparison, the
explorer's rows and pages) as msgspec Structs, and the support partition's vocabulary, defined here once."""

from __future__ import annotations

import msgspec

# -- the support partition's vocabulary (docs/concepts/metrics.md) ----------------------------------------------------


class Cell(msgspec.Struct, frozen=True, kw_only=True):
    """One cell of the support partition, as every view names, explains and colours it."""

    name: str
    """The cell's name, as the report's `partition` keys and SQL spell it."""
    meaning: str
    """What the cell means, in a few words (legends and tooltips)."""
    colour: str
    """Its colour in the HTML report and the explorer (CSS hex)."""


PARTITION: tuple[Cell, ...] = (
    Cell(name="SMART", meaning="surface supports gold, fetched", colour="#2e7d32"),
    Cell(name="MISSED", meaning="surface supports gold, not fetched", colour="#f9a825"),
    Cell(name="BLIND", meaning="no surface support, fetched", colour="#c62828"),
    Cell(name="NO-OP", meaning="no surface support, not fetched", colour="#9e9e9e"),
    Cell(name="UNOBSERVED", meaning="no snippet reached the caller: snippet support unobservable", colour="#5c6bc0"),
)
"""The cells in the report's order; UNOBSERVED (docs/how-to/hosted.md) is never merged into NO-OP."""


# -- the report (analytics.report and its consumers) ------------------------------------------------------------------


# -- the judge comparison and audit agreement ------------------------------------------------------------------------


# -- the explorer's API rows and pages (searchtrace.web) -------------------------------------------------------------
