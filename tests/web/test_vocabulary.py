"""The support partition's words and colours are defined once, in analytics' read model: the explorer serves them
(GET /api/vocabulary) and its page draws with what it loads, keeping no copy of its own."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import msgspec

from searchtrace.analytics import PARTITION, Cell
from tests.web.test_api import get_all


def test_the_vocabulary_route_serves_the_partition_of_the_read_model(demo_db: Path) -> None:
    (r,) = get_all(demo_db, ("GET", "/api/vocabulary", None))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert list(r.json()) == ["partition"]
    assert msgspec.convert(r.json()["partition"], tuple[Cell, ...]) == PARTITION
    assert [c["name"] for c in r.json()["partition"]] == ["SMART", "MISSED", "BLIND", "NO-OP", "UNOBSERVED"]


def test_the_page_keeps_no_copy_of_the_partitions_meanings_or_colours() -> None:
    static = resources.files("searchtrace.web").joinpath("static")
    for name in ("app.js", "app.css", "index.html"):
        text = static.joinpath(name).read_text(encoding="utf-8").lower()
        copied = [c.meaning for c in PARTITION if c.meaning.lower() in text]
        copied += [c.colour for c in PARTITION if c.colour.lower() in text]
        assert not copied, (name, copied)
    assert "/api/vocabulary" in static.joinpath("app.js").read_text(encoding="utf-8")
