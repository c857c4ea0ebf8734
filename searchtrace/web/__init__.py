"""The evidence explorer (`searchtrace view`): a local web app over the store, docs/how-to/explorer.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

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


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
