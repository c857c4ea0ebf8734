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

from searchtrace.adapters._local_server import LocalGuard, MiB, bind_local
from searchtrace.adapters._registry import endpoints, specs
from searchtrace.adapters.sandbox._app import base_urls, create_app, create_apps

__all__ = ["EXAMPLES", "Served", "base_urls", "env_exports", "free_port", "guarded", "own_root_url", "ports_for", "running",
           "running_all", "serve", "wait_listening"]

# provider -> its own path prefix under a root of its own (OpenAI's clients take the base URL with /v1)
OWN_PREFIX = {"openai": "/v1"}


def own_root_url(name: str, root: str) -> str:
    """The base URL of `name` when it is served at `root` on its own port."""
    return root.rstrip("/") + OWN_PREFIX.get(name, "")


def env_exports(urls: dict[str, str]) -> dict[str, str]:
    """Environment variables that point every adapter at the sandbox (keys are dummies the sandbox accepts)."""
    known = endpoints()
    out = {known[name].base_url_env: url for name, url in urls.items() if name in known}
    out.update({known[name].key_env: "sandbox" for name in urls if name in known})
    return out


# how to point each official client (or curl) at its sandbox base URL `{url}` (search providers: their modules')
EXAMPLES = {
    "openai": 'OpenAI(base_url="{url}", api_key="sandbox").chat.completions.create(model="sandbox-agent", '
              'messages=[{{"role": "user", "content": "When was Elmwyn Athletic founded?"}}], stream=True)',
    "anthropic": 'Anthropic(base_url="{url}", api_key="sandbox").messages.create(model="sandbox-agent", max_tokens=1024, '
                 'messages=[{{"role": "user", "content": "When was Elmwyn Athletic founded?"}}])',
    "gemini": 'genai.Client(api_key="sandbox", http_options={{"base_url": "{url}"}}).models.generate_content('
              'model="sandbox-agent", contents="When was Elmwyn Athletic founded?")',
    **{s.name: s.example for s in specs()},
    "jina": "curl -H 'Accept: application/json' -H 'Content-Type: application/json' -d '{{\"url\": \"https://almanac-central.example/entries/elmwyn-athletic\"}}' {url}/",
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


# a sandbox request is a JSON body (a chat request's messages), or a model batch: its JSONL file or its requests
# (docs/how-to/batch.md), thousands of judge prompts
MAX_BODY = 64 * MiB
# Jina Reader's `POST /` takes a url-encoded form as well as JSON, as the real one does (at R/jina/, or the root of
# its own port); OpenAI's file upload takes multipart/form-data; every other POST takes JSON only
MEDIA_PATHS = {**{path: frozenset({"application/x-www-form-urlencoded"}) for path in ("/jina/", "/")},
               **{path: frozenset({"multipart/form-data"}) for path in ("/openai/v1/files", "/v1/files")}}


def guarded(app: Any) -> LocalGuard:
    """A sandbox app as every server of it runs: behind the local-server guard (a browser's page cannot use it)."""
    return LocalGuard(app, max_body=MAX_BODY, media_paths=MEDIA_PATHS)


def _config(app: Any, port: int) -> uvicorn.Config:
    return uvicorn.Config(guarded(app), host="127.0.0.1", port=port, log_level="warning", access_log=False,
                          lifespan="off", timeout_graceful_shutdown=1)


class Served(msgspec.Struct, kw_only=True):
    """Where a running sandbox answers: the one app's root, and each provider's own base URL."""

    root: str
    urls: dict[str, str]  # provider -> base URL on its own port


def ports_for(port: int, names: list[str]) -> dict[str, int]:
    """Provider ports: port+1, port+2, … in route order; any free ports when `port` is 0."""
    return {name: (port + 1 + i if port else 0) for i, name in enumerate(names)}  # 0: bound free by `running`


def serve(port: int = 8765, app: Starlette | None = None, apps: dict[str, Starlette] | None = None,
          on_start: Any = None, *, consecutive: bool = True) -> None:
    """Blocks serving the one app on 127.0.0.1:port and each provider app on its own port (the ports above `port`,
    or free ones) until interrupted; `on_start(Served)` runs once they all listen."""
    if app is None:
        app, apps = create_apps()
    own = ports_for(port if consecutive else 0, list(apps or {}))
    with ExitStack() as stack:
        urls = {name: own_root_url(name, stack.enter_context(running(a, own[name]))) for name, a in (apps or {}).items()}
        listener = bind_local(port)  # port 0: a free one, held from here (no other process can take it meanwhile)
        port = int(listener.getsockname()[1])
        server = uvicorn.Server(_config(app, port))
        if on_start is not None:  # once the one app listens too: whoever reads the announcement may call at once

            def announce() -> None:
                while not server.started and not server.should_exit:
                    time.sleep(0.01)
                if server.started:
                    on_start(Served(root=f"http://127.0.0.1:{port}", urls=urls))

            threading.Thread(target=announce, name="sandbox-announce", daemon=True).start()
        server.run(sockets=[listener])


@contextmanager
def running(app: Any = None, port: int | None = None) -> Iterator[str]:
    """Starts the real server (the sandbox app, or any ASGI app) in a background thread; yields its root URL.
    Its socket is bound here (port None or 0: a free one), so no other process can take the port before it listens."""
    listener = bind_local(port or 0)
    server = uvicorn.Server(_config(app or create_app(), int(listener.getsockname()[1])))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="sandbox-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a hang guard: a loaded machine may take seconds to start a thread's loop
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
def running_all(world: Any = None, faults: Any = None, *, batch_delay_s: float = 0.0) -> Iterator[Served]:
    """The one app and every provider on its own free port, in background threads (tests, notebooks)."""
    app, apps = create_apps(world, faults, batch_delay_s=batch_delay_s)
    with ExitStack() as stack:
        root = stack.enter_context(running(app))
        urls = {name: own_root_url(name, stack.enter_context(running(a))) for name, a in apps.items()}
        yield Served(root=root, urls=urls)
