"""A small demo store (the three sandbox personas, judged and graded) shared by the explorer's tests."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from searchtrace.pipeline import demo


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("explorer-demo")
    db = out / "demo.duckdb"
    anyio.run(lambda: demo(db, out, 6, progress=False), backend="asyncio")
    return db
