"""Run the sandbox as real HTTP servers on 127.0.0.1: one app with every route under /<provider>, and one port per
provider serving it at its own root (official clients join their absolute paths onto the base URL)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import msgspec
import uvicorn
from starlette.applications import Starlette

# provider -> its own path prefix under a root of its own (OpenAI's clients take the base URL with /v1)
OWN_PREFIX = {"openai": "/v1"}


def base_urls(root: str) -> dict[str, str]:
    """Every base URL (what the adapters are configured with) under one sandbox root URL (the one app)."""
    from searchtrace.adapters.registry import BASE_URLS

    r = root.rstrip("/")
    return {name: f"{r}/{sub}" for name, (_, _, sub) in BASE_URLS.items()}


def own_root_url(name: str, root: str) -> str:
    """The base URL of `name` when it is served at `root` on its own port."""
    return root.rstrip("/") + OWN_PREFIX.get(name, "")


def env_exports(urls: dict[str, str]) -> dict[str, str]:
    """Environment variables that point every adapter at the sandbox (keys are dummies the sandbox accepts)."""
    from searchtrace.adapters.keys import DEFAULT_KEY_ENV
    from searchtrace.adapters.registry import BASE_URLS

    out = {BASE_URLS[name][1]: url for name, url in urls.items() if name in BASE_URLS}
    out.update({DEFAULT_KEY_ENV[name]: "sandbox" for name in urls if name in DEFAULT_KEY_ENV})
    return out


# how to point each official client (or curl) at its sandbox base URL `{url}`
EXAMPLES = {
    "openai": 'OpenAI(base_url="{url}", api_key="sandbox").chat.completions.create(model="sandbox-agent", '
              'messages=[{{"role": "user", "content": "When was Elmwyn Athletic founded?"}}], stream=True)',
    "tavily": 'TavilyClient(api_key="tvly-sandbox", api_base_url="{url}").search("Elmwyn Athletic", include_answer=True)',
    "firecrawl": 'Firecrawl(api_key="fc-sandbox", api_url="{url}").search("Elmwyn Athletic", limit=5)',
    "exa": 'Exa(api_key="sandbox", base_url="{url}").search("Elmwyn Athletic", num_results=5)',
    "brave": "curl -H 'X-Subscription-Token: sandbox' '{url}/res/v1/web/search?q=Elmwyn+Athletic'",
    "perplexity": "curl -H 'Authorization: Bearer sandbox' -d '{{\"query\": \"Elmwyn Athletic\"}}' {url}/search",
    "serpapi": "curl '{url}/search.json?engine=google&q=Elmwyn+Athletic&api_key=sandbox'",
    "serper": "curl -H 'X-API-KEY: sandbox' -d '{{\"q\": \"Elmwyn Athletic\"}}' {url}/search",
    "parallel": "curl -H 'x-api-key: sandbox' -d '{{\"search_queries\": [\"Elmwyn Athletic\"]}}' {url}/v1/search",
    "youcom": "curl -H 'X-API-Key: sandbox' -d '{{\"query\": \"Elmwyn Athletic\"}}' {url}/v1/search",
    "linkup": "curl -H 'Authorization: Bearer sandbox' -d '{{\"q\": \"Elmwyn Athletic\", \"depth\": \"fast\", "
              "\"outputType\": \"searchResults\"}}' {url}/v1/search",
    "jina_search": "curl -H 'Authorization: Bearer sandbox' -H 'Accept: application/json' '{url}/?q=Elmwyn+Athletic'",
    "jina": "curl -H 'Accept: application/json' -d '{{\"url\": \"https://almanac-central.example/entries/elmwyn-athletic\"}}' {url}/",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[Any], timeout_s: float, what: str) -> None:
    """Returns once 127.0.0.1:`port` accepts connections; raises when `proc` died or `timeout_s` passed first."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start on 127.0.0.1:{port}") from None
            time.sleep(0.05)


def _config(app: Any, port: int) -> uvicorn.Config:
    return uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                          lifespan="off", timeout_graceful_shutdown=1)


class Served(msgspec.Struct, kw_only=True):
    """Where a running sandbox answers: the one app's root, and each provider's own base URL."""

    root: str
    urls: dict[str, str]  # provider -> base URL on its own port


def ports_for(port: int, names: list[str]) -> dict[str, int]:
    """Provider ports: port+1, port+2, … in route order; any free ports when `port` is 0."""
    return {name: (port + 1 + i if port else free_port()) for i, name in enumerate(names)}


def serve(port: int = 8765, app: Starlette | None = None, apps: dict[str, Starlette] | None = None,
          on_start: Any = None, *, consecutive: bool = True) -> None:
    """Blocks serving the one app on 127.0.0.1:port and each provider app on its own port (the ports above `port`,
    or free ones) until interrupted; `on_start(Served)` runs once they all listen."""
    from searchtrace.adapters.sandbox.app import create_apps

    if app is None:
        app, apps = create_apps()
    own = ports_for(port if consecutive else 0, list(apps or {}))
    with ExitStack() as stack:
        urls = {name: own_root_url(name, stack.enter_context(running(a, own[name]))) for name, a in (apps or {}).items()}
        if on_start is not None:
            on_start(Served(root=f"http://127.0.0.1:{port}", urls=urls))
        uvicorn.Server(_config(app, port)).run()


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
            raise RuntimeError(f"sandbox server did not start on port {server.config.port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def running_all(world: Any = None, faults: Any = None) -> Iterator[Served]:
    """The one app and every provider on its own free port, in background threads (tests, notebooks)."""
    from searchtrace.adapters.sandbox.app import create_apps

    app, apps = create_apps(world, faults)
    with ExitStack() as stack:
        root = stack.enter_context(running(app))
        urls = {name: own_root_url(name, stack.enter_context(running(a))) for name, a in apps.items()}
        yield Served(root=root, urls=urls)
