"""The sandbox world mounted in-process: one root URL and one httpx ASGI transport (no socket, no network)."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from searchtrace.adapters.sandbox._app import create_app

ROOT = "http://sandbox"  # the in-process root; served sandboxes are http://127.0.0.1:PORT


class InProcess(msgspec.Struct, frozen=True, kw_only=True):
    """Where adapters reach the in-process sandbox: endpoints under `root`, requests through `transport`."""

    root: str
    transport: httpx.AsyncBaseTransport
    app: Any  # the ASGI app behind the transport (tests read its state, e.g. counters)


def in_process(app: Any = None) -> InProcess:
    """The in-process sandbox over `app` (default: a fresh `create_app()`); the one way every caller reaches it."""
    app = create_app() if app is None else app
    return InProcess(root=ROOT, transport=httpx.ASGITransport(app=app), app=app)
