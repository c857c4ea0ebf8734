"""The recording proxy (SPEC §15): any agent's search, fetch and chat calls recorded as trajectories of one run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.engine.proxy._app import MAX_BODY
    from searchtrace.engine.proxy._limits import Limits
    from searchtrace.engine.proxy._serve import Upstream, bind, serve
    from searchtrace.engine.proxy._serve import _Server as QuietServer
    from searchtrace.engine.proxy._serve import _stop_on_signal as stop_on_signal


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "Limits": "searchtrace.engine.proxy._limits",
    "MAX_BODY": "searchtrace.engine.proxy._app",
    "QuietServer": "searchtrace.engine.proxy._serve:_Server",
    "Upstream": "searchtrace.engine.proxy._serve",
    "bind": "searchtrace.engine.proxy._serve",
    "stop_on_signal": "searchtrace.engine.proxy._serve:_stop_on_signal",
    "serve": "searchtrace.engine.proxy._serve",
}

__all__ = [
    "Limits",
    "MAX_BODY",
    "QuietServer",
    "Upstream",
    "bind",
    "serve",
    "stop_on_signal",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
