"""The real `firecrawl-mcp` server from the npm registry, run by node under `searchtrace mcp wrap` with
FIRECRAWL_API_URL at the sandbox's Firecrawl route, driven by the `mcp` SDK's client: its firecrawl_search results
are recorded as ranked search.result events, the same results the client received (docs/how-to/mcp.md).

`make test` installs the server into .venv/node (the Makefile's $(NODE) step); without it the test skips."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from searchtrace.adapters import normalize_url
from tests.mcp.support import CLI, rows, sandbox_served
from tests.proxy.support import write_questions

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(os.environ.get("SEARCHTRACE_FIRECRAWL_MCP",
                             ROOT / ".venv" / "node" / "node_modules" / "firecrawl-mcp" / "dist" / "index.js"))
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None or not SERVER.is_file(),
                                reason="firecrawl-mcp is not installed: `make test` installs it into .venv/node")


@pytest.fixture(scope="module")
def firecrawl_url() -> Iterator[str]:
    with sandbox_served() as exports:
        yield exports["SEARCHTRACE_FIRECRAWL_BASE_URL"]


async def _search(params: StdioServerParameters, queries: list[str]) -> tuple[list[str], list[Any]]:
    async with Client(params, mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        got = [await client.call_tool("firecrawl_search", {"query": q, "limit": 5}) for q in queries]
        return names, got


def test_firecrawl_mcp_searches_are_recorded_as_ranked_results(firecrawl_url: str, tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qs = write_questions(qfile, 2)
    db = tmp_path / "f.duckdb"
    assert NODE is not None
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", CLI, "mcp", "wrap", "--db", str(db), "--questions", str(qfile), "--run-id", "fc", "--provider",
              "firecrawl", "--qid", qs[0]["qid"], "--", NODE, str(SERVER)],
        env={**os.environ, "FIRECRAWL_API_URL": firecrawl_url, "FIRECRAWL_API_KEY": "fc-sandbox-key"})
    names, got = anyio.run(_search, params, [qs[0]["question"], qs[1]["question"]])
    assert "firecrawl_search" in names and "firecrawl_scrape" in names
    received = []
    for result in got:
        assert not result.is_error, result.content
        body = json.loads(result.content[0].text)
        received.append([(r["url"], r["title"]) for r in body["data"]["web"]])
    assert all(len(r) == 5 for r in received)

    events = [(t, json.loads(p)) for t, p in rows(db, "SELECT type, payload FROM events WHERE run_id = 'fc' "
                                                      "AND stream_id LIKE 'traj:%' ORDER BY position")]
    called = [p for t, p in events if t == "search.called"]
    assert [(c["provider"], c["query"], c["params"]) for c in called] == [
        ("firecrawl", q["question"], {"limit": 5}) for q in qs]
    for c, seen in zip(called, received, strict=True):
        results = [p for t, p in events if t == "search.result" and p["call_id"] == c["call_id"]]
        assert [(r["rank"], r["url"], r["title"]) for r in results] == [(i, u, t) for i, (u, t) in enumerate(seen, 1)]
        assert all(r["url_normalized"] == normalize_url(r["url"]) and r["snippet"] for r in results)
        done = next(p for t, p in events if t == "search.completed" and p["call_id"] == c["call_id"])
        assert done["status"] == "ok" and done["n_results"] == 5
    assert events[-1][0] == "trajectory.finished" and events[-1][1]["reason"] == "abandoned"
    # the key the server was given never reaches the store
    assert rows(db, "SELECT count(*) FROM events WHERE payload::VARCHAR LIKE '%fc-sandbox-key%'") == [(0,)]
