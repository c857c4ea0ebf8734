"""Run the sandbox as a real HTTP server on 127.0.0.1: blocking `serve(port)` or `running()` in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette


def base_urls(root: str) -> dict[str, str]:
    """The five base URLs (what the adapters are configured with) under one sandbox root URL."""
    r = root.rstrip("/")
    return {"brave": f"{r}/brave", "tavily": f"{r}/tavily", "firecrawl": f"{r}/firecrawl", "jina": f"{r}/jina",
            "openai": f"{r}/openai/v1"}


def env_exports(root: str) -> dict[str, str]:
    """Environment variables that point every adapter at the sandbox (keys are dummies the sandbox accepts)."""
    b = base_urls(root)
    return {"SEARCHTRACE_BRAVE_BASE_URL": b["brave"], "SEARCHTRACE_TAVILY_BASE_URL": b["tavily"],
            "SEARCHTRACE_FIRECRAWL_BASE_URL": b["firecrawl"], "SEARCHTRACE_JINA_BASE_URL": b["jina"],
            "OPENAI_BASE_URL": b["openai"], "BRAVE_API_KEY": "sandbox", "TAVILY_API_KEY": "sandbox",
            "FIRECRAWL_API_KEY": "sandbox", "JINA_API_KEY": "sandbox", "OPENAI_API_KEY": "sandbox"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(app: Starlette, port: int) -> uvicorn.Config:
    return uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                          lifespan="off", timeout_graceful_shutdown=1)


def serve(port: int = 8765, app: Starlette | None = None) -> None:
    """Blocks serving the sandbox on 127.0.0.1:port until interrupted."""
    from searchtrace.adapters.sandbox.app import create_app

    uvicorn.Server(_config(app or create_app(), port)).run()


@contextmanager
def running(app: Any = None, port: int | None = None) -> Iterator[str]:
    """Starts the real server (the sandbox app, or any ASGI app) in a background thread; yields its root URL."""
    from searchtrace.adapters.sandbox.app import create_app

    server = uvicorn.Server(_config(app or create_app(), port or free_port()))
    thread = threading.Thread(target=server.run, name="sandbox-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("sandbox server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
