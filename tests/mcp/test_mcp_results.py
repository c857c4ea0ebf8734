"""The four search providers' own MCP servers: their result text read back into hits (adapters/_mcp_results.py).

Each fixture in tests/mcp/fixtures is the tools/call result a server's published formatter makes of one of the
provider API fixtures (its `source`); read back, it gives the hits the provider's adapter gives for that API body:
the same results, ranks, URLs, titles and snippet surface, through MCP or not.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from searchtrace.adapters import Endpoint, SearchAdapter, build_search
from searchtrace.adapters._mcp_results import READERS, read_hits
from tests.shared_data import shared_path

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.anyio


@pytest.fixture
async def parsers() -> AsyncIterator[dict[str, SearchAdapter]]:
    made = {r.provider: build_search(r.provider, Endpoint(base_url="http://unused.invalid"), key_fallback="unused")
            for r in READERS.values()}
    yield made
    for p in made.values():
        await p.aclose()


def _fixture(tool: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / f"{tool}.json").read_text())
    return doc


def _texts(doc: dict[str, Any]) -> list[str]:
    return [c["text"] for c in doc["result"]["content"] if c["type"] == "text"]


def _key(hits: list[Any]) -> list[tuple[int, str, str, str]]:
    return [(h.rank, h.url, h.title, h.snippet) for h in hits]


@pytest.mark.parametrize("tool", sorted(READERS))
async def test_a_servers_text_reads_as_its_providers_api_reply(tool: str, parsers: dict[str, SearchAdapter]) -> None:
    doc = _fixture(tool)
    parser = parsers[READERS[tool].provider]
    api = parser.parse_hits(shared_path(f"research/{doc['source']}").read_bytes())
    got = read_hits(tool, _texts(doc), parser)
    assert len(api) >= 1 and _key(got) == _key(api)
    assert all(h.snippet for h in got)


async def test_brave_keeps_web_results_only(parsers: dict[str, SearchAdapter]) -> None:
    texts = _texts(_fixture("brave_web_search"))
    assert texts[0].startswith("Summarizer key:") and "mutated_by_goggles" in texts[-1]
    hits = read_hits("brave_web_search", texts, parsers["brave"])
    assert "https://news.example/a" not in {h.url for h in hits} and len(hits) == len(texts) - 2
    assert read_hits("brave_web_search", ["No web results found"], parsers["brave"]) == []


async def test_tavily_multiline_content_raw_content_and_no_title(parsers: dict[str, SearchAdapter]) -> None:
    text = ("Answer: 42\nDetailed Results:\n\nTitle: One\nURL: https://a.example/1\nContent: first line\nsecond line\n"
            "Raw Content: the page\n\nURL: https://b.example/2\nContent: untitled result\nFavicon: https://b.example/f"
            "\n\nImages:\n\n[1] URL: https://img.example/x.png")
    hits = read_hits("tavily_search", [text], parsers["tavily"])
    assert _key(hits) == [(1, "https://a.example/1", "One", "first line\nsecond line\nthe page"),
                          (2, "https://b.example/2", "", "untitled result")]


async def test_exa_text_results_and_missing_fields(parsers: dict[str, SearchAdapter]) -> None:
    text = ("Title: N/A\nURL: https://a.example/x\nPublished: N/A\nAuthor: N/A\nText: whole text\nof the page"
            "\n\n---\n\nTitle: Two\nURL: https://b.example/y\nPublished: 2026-01-02\nAuthor: Kim\nHighlights:\nh1\nh2")
    hits = read_hits("web_search_exa", [text], parsers["exa"])
    assert _key(hits) == [(1, "https://a.example/x", "", "whole text\nof the page"),
                          (2, "https://b.example/y", "Two", "h1\nh2")]
    assert read_hits("web_search_exa", ["No search results found. Please try a different query."], parsers["exa"]) == []


async def test_firecrawl_data_only_and_v1_lists(parsers: dict[str, SearchAdapter]) -> None:
    web = [{"url": "https://a.example/", "title": "A", "description": "about a", "position": 1}]
    for text in (json.dumps({"web": web}), json.dumps(web)):
        hits = read_hits("firecrawl_search", [text], parsers["firecrawl"])
        assert _key(hits) == [(1, "https://a.example/", "A", "about a")]


@pytest.mark.parametrize(("tool", "text"), [
    ("brave_web_search", "Error: rate limited"),
    ("tavily_search", "Something went wrong"),
    ("tavily_search", "Detailed Results:\n\nTitle: no url here\nContent: x"),
    ("web_search_exa", "Title: x\nPublished: N/A"),
    ("firecrawl_search", "not json at all"),
    ("firecrawl_search", '{"success": true, "data": {"web": [{"title": "no url"}]}}'),
])
async def test_text_that_is_not_the_servers_format_is_refused(tool: str, text: str,
                                                               parsers: dict[str, SearchAdapter]) -> None:
    with pytest.raises(ValueError, match=tool):
        read_hits(tool, [text], parsers[READERS[tool].provider])
