"""docs/reference/prices.md in the report: provider-time medians and p90s, null where no call recorded provider_ms."""

from __future__ import annotations

from pathlib import Path

from tests.analytics.analytics_fixture import import_fixture, report_json

KEYS = ("search_provider_ms_median", "search_provider_ms_p90", "fetch_provider_ms_median", "fetch_provider_ms_p90")


def test_stores_without_provider_time_report_null(tmp_path: Path) -> None:
    db = tmp_path / "l.duckdb"
    import_fixture(db, tmp_path / "in")  # imported traces carry latency_ms only
    _, rep = report_json(db, "--judge-run-id", "j1", "--bootstrap", "0")
    for name, block in rep["providers"].items():
        assert {k: block[k] for k in KEYS} == dict.fromkeys(KEYS), name
        assert block["latency_ms_per_trajectory"] > 0  # the wall-time figure is still there
