"""The recording proxy (SPEC §15): any agent's search, fetch and chat calls recorded as trajectories of one run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.engine.proxy._serve import Upstream, serve


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "Upstream": "searchtrace.engine.proxy._serve",
    "serve": "searchtrace.engine.proxy._serve",
}

__all__ = [
    "Upstream",
    "serve",
]


def __getattr__(name: str) -> Any:
    """Import an export's module on its first use (PEP 562)."""
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
