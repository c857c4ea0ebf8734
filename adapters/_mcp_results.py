"""The result text of the search providers' own MCP servers, read back into normalised hits (docs/how-to/mcp.md).

Each server formats its provider's API reply as MCP text content in its own way; one reader per server turns that
text back into the provider's API body, and the provider's adapter parses it, so the snippet surface of a result
is the same whether the agent reached the provider directly, through the proxy or through its MCP server:

- Brave `brave_web_search` (brave/brave-search-mcp-server): one text item per result, each the JSON object
  `{url, title, description, extra_snippets}`; news, video, FAQ and discussion items follow (not web results);
- Tavily `tavily_search` (tavily-ai/tavily-mcp): one text, `Answer:` then `Detailed Results:` and per result
  `Title:`, `ID:`, `URL:`, `Content:`, `Raw Content:`, `Favicon:` lines, blank lines between results;
- Exa `web_search_exa` (exa-labs/exa-mcp-server): one text, per result `Title:`, `URL:`, `Published:`, `Author:`
  and `Highlights:` (lines) or `Text:`, results joined by a `---` line;
- Firecrawl `firecrawl_search` (firecrawl/firecrawl-mcp-server): the v2 /search reply as JSON (the whole envelope,
  or its `data` in older versions).

A text that does not read as its server's format raises ValueError (the caller records `bad_response`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from searchtrace.adapters._search_base import SearchAdapter
from searchtrace.adapters._types import SearchHit

_json = msgspec.json.Decoder()
_enc = msgspec.json.Encoder()
NO_RESULTS = ("No web results found", "No search results found")  # Brave's and Exa's empty replies


def _decode(text: str) -> Any:
    try:
        return _json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None


def brave_body(texts: Sequence[str]) -> dict[str, Any]:
    """Brave's web results (one JSON object per text item) as the Web Search API's body."""
    results = []
    for text in texts:
        item = _decode(text)
        # web results only: news and video items carry `mutated_by_goggles`, FAQ items `question`, discussions `data`
        if isinstance(item, dict) and isinstance(item.get("url"), str) and not {"mutated_by_goggles", "question",
                                                                                   "data"} & item.keys():
            results.append(item)
    if not results and not any(t.strip().startswith(NO_RESULTS) for t in texts):
        raise ValueError("no web result objects in brave_web_search's reply")
    return {"web": {"results": results}}


_TAVILY_KEYS = {"Title": "title", "ID": "id", "URL": "url", "Content": "content", "Raw Content": "raw_content",
                "Favicon": "favicon"}
_TAVILY_LINE = re.compile(r"^(Title|ID|URL|Content|Raw Content|Favicon): ?(.*)$")


def tavily_body(texts: Sequence[str]) -> dict[str, Any]:
    """tavily-mcp's text as the Search API's body: results in order, multi-line contents kept whole."""
    text = "\n".join(texts)
    head, marker, rest = text.partition("Detailed Results:")
    if not marker:
        raise ValueError("no `Detailed Results:` section in tavily_search's reply")
    results: list[dict[str, str]] = []
    field: str | None = None
    for line in rest.split("\n"):
        if line.strip() == "Images:" and field is not None:
            break
        m = _TAVILY_LINE.match(line)
        key = _TAVILY_KEYS[m.group(1)] if m else None
        if key is not None and m is not None:
            if not results or key in results[-1] or (key == "title" and "url" in results[-1]):
                results.append({})
            results[-1][key] = m.group(2)
            field = key
        elif field is not None and results:  # a content that spans lines
            results[-1][field] += "\n" + line
    body = []
    for r in results:
        if "url" not in r:
            raise ValueError("a tavily_search result without a URL line")
        body.append({k: v.strip() for k, v in r.items()})
    answer = head.partition("Answer:")[2].strip()
    return {"results": body, **({"answer": answer} if answer else {})}


_EXA_SEP = re.compile(r"\n\s*---\s*\n")


def exa_body(texts: Sequence[str]) -> dict[str, Any]:
    """exa-mcp-server's text as the Search API's body (`N/A` fields left out)."""
    text = "\n".join(texts).strip()
    if text.startswith(NO_RESULTS):
        return {"results": []}
    results = []
    for block in _EXA_SEP.split(text):
        r: dict[str, Any] = {}
        lines = block.strip().split("\n")
        for i, line in enumerate(lines):
            name, colon, value = line.partition(": ")
            if line.rstrip() == "Highlights:":
                r["highlights"] = [h for h in (x.strip() for x in lines[i + 1:]) if h]
                break
            if colon and name == "Text":
                r["text"] = "\n".join([value, *lines[i + 1:]]).strip()
                break
            key = {"Title": "title", "URL": "url", "Published": "publishedDate", "Author": "author"}.get(name)
            if colon and key is not None and value.strip() != "N/A":
                r[key] = value.strip()
        if "url" not in r:
            raise ValueError("a web_search_exa result without a URL line")
        results.append(r)
    return {"results": results}


def firecrawl_body(texts: Sequence[str]) -> dict[str, Any]:
    """firecrawl-mcp's JSON as the /v2/search body (an envelope is added where the server sent only its data)."""
    doc = _decode("\n".join(texts))
    if isinstance(doc, dict) and ("data" in doc or "success" in doc):
        return doc
    if isinstance(doc, dict) and "web" in doc or isinstance(doc, list):
        return {"success": True, "data": doc}
    raise ValueError("firecrawl_search's reply is not the JSON of a search reply")


class Reader(msgspec.Struct, frozen=True):
    """One known MCP search tool: the provider whose adapter parses it and how its text becomes that body."""

    provider: str
    body: Callable[[Sequence[str]], dict[str, Any]]


READERS: dict[str, Reader] = {
    "brave_web_search": Reader("brave", brave_body),
    "tavily_search": Reader("tavily", tavily_body),
    "web_search_exa": Reader("exa", exa_body),
    "firecrawl_search": Reader("firecrawl", firecrawl_body),
}


def read_hits(tool: str, texts: Sequence[str], parser: SearchAdapter) -> list[SearchHit]:
    """The hits of a known MCP search tool's text content, ranked as the server listed them; ValueError when the
    text does not read as that server's format. `parser`: the provider's adapter (it parses, it sends nothing)."""
    body = READERS[tool].body(texts)
    try:
        return parser.parse_hits(_enc.encode(body))
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"{tool}'s reply does not parse as a {READERS[tool].provider} result: {exc}") from None
