"""The recording proxy (docs/how-to/own-agent.md): any agent's search, fetch and chat calls recorded as trajectories of one run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.engine.proxy._app import MAX_BODY
    from searchtrace.engine.proxy._limits import Limits
    from searchtrace.engine.proxy._recorder import ProxyRecorder, Traj, record_while
    from searchtrace.engine.proxy._routes import (
        TRAJECTORY_HEADER,
        choose_trajectory,
        tool_arguments,
    )
    from searchtrace.engine.proxy._serve import Upstream, serve


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "Limits": "searchtrace.engine.proxy._limits",
    "MAX_BODY": "searchtrace.engine.proxy._app",
    "ProxyRecorder": "searchtrace.engine.proxy._recorder",
    "TRAJECTORY_HEADER": "searchtrace.engine.proxy._routes",
    "choose_trajectory": "searchtrace.engine.proxy._routes",
    "tool_arguments": "searchtrace.engine.proxy._routes",
    "Traj": "searchtrace.engine.proxy._recorder",
    "record_while": "searchtrace.engine.proxy._recorder",
    "Upstream": "searchtrace.engine.proxy._serve",
    "serve": "searchtrace.engine.proxy._serve",
}

__all__ = [
    "Limits",
    "MAX_BODY",
    "ProxyRecorder",
    "TRAJECTORY_HEADER",
    "Traj",
    "Upstream",
    "choose_trajectory",
    "record_while",
    "serve",
    "tool_arguments",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
