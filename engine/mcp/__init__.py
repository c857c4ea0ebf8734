"""searchtrace over MCP (docs/how-to/mcp.md): a recording MCP search server, and a recording relay for a third-party
MCP search server. Needs the `mcp` extra; nothing imports it unless `searchtrace mcp` runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.engine.mcp._serve import serve, wrap
    from searchtrace.engine.mcp._wrap import Outcome


# exported name -> defining module, imported on first use (the SDK loads only when a command needs it)
_EXPORTS: dict[str, str] = {
    "serve": "searchtrace.engine.mcp._serve",
    "wrap": "searchtrace.engine.mcp._serve",
    "Outcome": "searchtrace.engine.mcp._wrap",
}

__all__ = [
    "Outcome",
    "serve",
    "wrap",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
