"""The evidence explorer (`searchtrace view`): a local web app over the store, SPEC §16."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.web._app import create_app
    from searchtrace.web._source import prepare


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "create_app": "searchtrace.web._app",
    "prepare": "searchtrace.web._source",
}

__all__ = [
    "create_app",
    "prepare",
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
