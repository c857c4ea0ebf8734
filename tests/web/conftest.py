"""A small demo store (the three sandbox personas, judged and graded) shared by the explorer's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from searchtrace.adapters.sandbox import create_app, running
from searchtrace.pipeline import demo
from tests.proxy.support import proxy as run_proxy
from tests.proxy.support import write_questions
from tests.web.servers import View, start_view


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("explorer-demo")
    db = out / "demo.duckdb"
    anyio.run(lambda: demo(db, out, 6, progress=False), backend="asyncio")
    return db


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Any]]:
    """The sandbox on a real port (the guard mounted as `sandbox serve` mounts it), and its request totals."""
    app = create_app()
    with running(app) as root:
        yield root, app.state.totals


@pytest.fixture(scope="module")
def view(demo_db: Path) -> Iterator[View]:
    v = start_view(demo_db)
    try:
        yield v
    finally:
        v.proc.terminate()
        v.proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def proxy_url(tmp_path_factory: pytest.TempPathFactory, upstream: tuple[str, Any]) -> Iterator[str]:
    """`searchtrace proxy --upstream live --max-body 256KiB` forwarding to the sandbox above."""
    tmp = tmp_path_factory.mktemp("guard-proxy")
    root, _ = upstream
    write_questions(tmp / "q.jsonl", 2)
    env = {"TAVILY_API_KEY": "sandbox", "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily", "BRAVE_API_KEY": "sandbox",
           "SEARCHTRACE_BRAVE_BASE_URL": f"{root}/brave"}
    with run_proxy(tmp / "p.duckdb", tmp / "q.jsonl", "guard", upstream="live", env=env,
                   extra=("--max-body", "256KiB")) as p:
        yield p.url
