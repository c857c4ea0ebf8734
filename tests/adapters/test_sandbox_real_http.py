"""The production adapters over real HTTP on 127.0.0.1 (uvicorn + the aiohttp transport) against the sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from searchtrace.adapters._aiohttp_transport import CHUNK_SIZE
from searchtrace.adapters._jina import READ_CAP
from searchtrace.cli import main
from tests.adapters.sandbox_support import TARGETS, call

sandbox = pytest.importorskip("searchtrace.adapters.sandbox")


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "JINA_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    app = sandbox.create_app(hang_s=5.0)
    with sandbox.running(app) as root:
        yield root, app


@pytest.mark.parametrize("target", TARGETS)
def test_success_over_real_http(server: tuple[str, Any], target: str) -> None:
    root, app = server
    out = anyio.run(lambda: call(target, root, None, trace_id=f"real-{target}"), backend="asyncio")
    assert (out.status, out.http_status, out.retries) == ("ok", 200, [])
    assert out.n_results >= 1 or (target == "jina" and out.content and "Elmwyn" in out.content)
    assert app.state.counters[(target, f"real-{target}")] == 1


@pytest.mark.parametrize("target,marker,expect,reasons", [
    ("tavily", "!fault:429x1", "ok", ["429"]),
    ("brave", "!fault:503", "http_error", ["5xx", "5xx"]),
    ("firecrawl", "!fault:truncated", "bad_response", []),
    ("chat", "!fault:malformed", "bad_response", ["bad_body", "bad_body"]),  # a garbled answer is retried
    ("jina", "!fault:timeout", "timeout", ["timeout", "timeout"]),
    ("jina", "!fault:500x1", "ok", ["5xx"]),
])
def test_faults_over_real_http(server: tuple[str, Any], target: str, marker: str, expect: str,
                               reasons: list[str]) -> None:
    root, _ = server
    # a short timeout only where the fault is a hang: on a loaded machine an ordinary reply can take over 0.3 s
    timeout_s = 0.3 if marker == "!fault:timeout" else 10.0
    out = anyio.run(lambda: call(target, root, None, marker, timeout_s=timeout_s), backend="asyncio")
    assert (out.status, [r.reason for r in out.retries]) == (expect, reasons)


def test_oversized_page_cut_at_cap_without_reading_the_rest(server: tuple[str, Any]) -> None:
    root, _ = server
    out = anyio.run(lambda: call("jina", root, None, "!fault:oversized"), backend="asyncio")
    assert (out.status, out.content, out.retries) == ("too_large", None, [])
    # bytes read off the socket: past the cap by less than one read chunk of the 3 MB page, then the stream closes
    assert READ_CAP < out.n_bytes <= READ_CAP + CHUNK_SIZE


def test_cli_search_and_fetch_against_the_real_server(server: tuple[str, Any], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = server
    monkeypatch.setenv("SEARCHTRACE_FIRECRAWL_BASE_URL", f"{root}/firecrawl")  # env override of the base URL
    monkeypatch.setenv("FIRECRAWL_API_KEY", "sandbox-key")
    main(["search", "--provider", "firecrawl", "What is the founding year of Elmwyn Athletic?"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "ok" and doc["results"] and doc["params"]["limit"] == 10
    assert {"rank", "title", "url", "url_normalized", "domain", "snippet", "metadata"} <= set(doc["results"][0])
    url = "https://almanac-central.example/entries/elmwyn-athletic"
    for expect_hit in (False, True):
        main(["fetch", "--base-url", f"{root}/jina", "--cache-dir", str(tmp_path), url])
        got = json.loads(capsys.readouterr().out)
        assert (got["status"], got["cache_hit"]) == ("ok", expect_hit) and "Elmwyn" in got["content"]


@pytest.mark.parametrize("provider", ["brave", "tavily", "firecrawl"])
def test_cli_sandbox_flag_in_process(provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--provider", provider, "--sandbox", "Elmwyn Athletic founding year"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "ok" and len(doc["results"]) >= 1
    assert [r["rank"] for r in doc["results"]] == list(range(1, len(doc["results"]) + 1))


def test_cli_failed_call_exits_1_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["fetch", "--sandbox", "--cache-dir", str(tmp_path), "https://faults.sandbox.test/!fault:oversized/p"])
    assert info.value.code == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["status"] == "too_large"
    assert out.err.startswith("searchtrace: too_large: ") and out.err.count("\n") == 1
