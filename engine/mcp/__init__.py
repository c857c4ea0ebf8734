"""searchtrace over MCP (docs/how-to/mcp.md): a recording MCP search server, and a recording relay for a third-party
MCP search server. Needs the `mcp` extra; nothing imports it unless `searchtrace mcp` runs."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
