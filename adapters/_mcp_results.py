"""The result text of the search providers' own MCP servers, read back into normalised hits (docs/how-to/mcp.md).

Each server formats its provider's API reply as MCP text content in its own way; the provider's module names the
server's search tool (`ProviderSpec.mcp_tool`) and turns that text back into the provider's API body
(`ProviderSpec.mcp_body`), and the provider's adapter parses it, so the snippet surface of a result is the same
whether the agent reached the provider directly, through the proxy or through its MCP server. A text that does not
read as its server's format raises ValueError (the caller records `bad_response`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgspec

from searchtrace.adapters._search_base import SearchAdapter
from searchtrace.adapters._types import SearchHit

_json = msgspec.json.Decoder()
_enc = msgspec.json.Encoder()


def decode_json(text: str) -> Any:
    """`text` decoded as JSON, or None when it is not JSON (a server's text items may be prose)."""
    try:
        return _json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None


class Reader(msgspec.Struct, frozen=True):
    """One known MCP search tool: the provider whose adapter parses it and how its text becomes that body."""

    provider: str
    body: Callable[[Sequence[str]], dict[str, Any]]


class _Readers(Mapping[str, Reader]):
    """The known MCP search tools by name, read from the registry's provider specs at each use (it imports the
    provider modules, which import this module's helpers)."""

    def _all(self) -> dict[str, Reader]:
        from searchtrace.adapters._registry import specs

        return {s.mcp_tool: Reader(s.name, s.mcp_body) for s in specs() if s.mcp_tool and s.mcp_body}

    def __getitem__(self, tool: str) -> Reader:
        return self._all()[tool]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


READERS: Mapping[str, Reader] = _Readers()


def read_hits(tool: str, texts: Sequence[str], parser: SearchAdapter) -> list[SearchHit]:
    """The hits of a known MCP search tool's text content, ranked as the server listed them; ValueError when the
    text does not read as that server's format. `parser`: the provider's adapter (it parses, it sends nothing)."""
    reader = READERS[tool]
    body = reader.body(texts)
    try:
        return parser.parse_hits(_enc.encode(body))
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"{tool}'s reply does not parse as a {reader.provider} result: {exc}") from None
