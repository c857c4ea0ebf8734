"""The sandbox ASGI app: eleven search providers, Jina Reader and chat completions over one World.

Routes (root R): R/<provider>/<the provider's own path> (route_groups), e.g. GET R/brave/res/v1/web/search,
POST R/tavily/search, POST R/exa/search, GET R/jina/{url}, POST R/openai/v1/chat/completions; GET R/ (an index).
`create_apps` also gives one app per provider with its routes at the root (`sandbox serve` puts each on a port).
`app.state.counters[(route, trace_id)]` counts requests per `X-Searchtrace-Trace` header (None when absent),
`app.state.totals[route]` per route.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from searchtrace.adapters.sandbox.faults import Attempts, FaultPlan, choose
from searchtrace.adapters.sandbox.responses import Hang, fault_reply, json_response, mangle, quota_reply
from searchtrace.adapters.sandbox.world import World, default_world
from searchtrace.adapters.types import TRACE_HEADER

SLOW_S = 0.25


class Sandbox:
    """Shared state of one app: the world, fault plan, attempt and request counters."""

    def __init__(self, world: World, faults: FaultPlan | None, hang_s: float) -> None:
        self.world = world
        self.faults = faults
        self.hang_s = hang_s
        self.attempts = Attempts()
        self.counters: Counter[tuple[str, str | None]] = Counter()
        self.totals: Counter[str] = Counter()

    def count(self, route: str, request: Request) -> None:
        self.counters[(route, request.headers.get(TRACE_HEADER))] += 1
        self.totals[route] += 1

    def fault(self, route: str, key: str, marker_text: str) -> str | None:
        """The fault for this request (the attempt number is counted here)."""
        attempt = self.attempts.next(route, key)
        return choose(route, key, attempt, marker_text, self.faults)

    async def run(self, route: str, kind: str | None, key: str, produce: Callable[[], Awaitable[Response]]) -> Response:
        """Applies a fault kind around `produce()` (an async callable returning a Response)."""
        if kind in ("429", "500", "503", "401"):
            return fault_reply(route, kind, key)
        if kind == "quota":
            return quota_reply(route, key)
        if kind == "timeout":
            return Hang(self.hang_s)
        if kind == "slow":
            await anyio.sleep(SLOW_S)
        response = await produce()
        if kind in ("malformed", "truncated") and response.status_code == 200 and hasattr(response, "body"):
            return mangle(response, kind)
        return response


def request_key(*parts: str | bytes) -> str:
    """A stable key for 'the same request' (attempt counting, fault draws, ids)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\x00")
    return h.hexdigest()[:32]


async def json_body(request: Request) -> dict[str, Any] | None:
    """The request's JSON object body; None when it does not parse or is not an object."""
    try:
        body = msgspec.json.decode(await request.body())
    except msgspec.DecodeError:
        return None
    return body if isinstance(body, dict) else None


def sandbox_of(request: Request) -> Sandbox:
    sb = request.app.state.sandbox
    assert isinstance(sb, Sandbox)
    return sb


async def index(request: Request) -> Response:
    root = str(request.base_url).rstrip("/")
    from searchtrace.adapters.sandbox.serve import base_urls

    return json_response({"sandbox": "searchtrace", "base_urls": base_urls(root),
                          "questions": len(sandbox_of(request).world.questions),
                          "pages": len(sandbox_of(request).world.pages)})


def route_groups() -> dict[str, list[Route]]:
    """Each provider's routes at its own root, as the real API has them (mounted under /<name> in the one app)."""
    from searchtrace.adapters.sandbox import search_routes_more as more
    from searchtrace.adapters.sandbox.chat_route import chat_completions
    from searchtrace.adapters.sandbox.fetch_route import jina_read, jina_read_post
    from searchtrace.adapters.sandbox.search_routes import (
        brave_search,
        firecrawl_v1,
        firecrawl_v2,
        tavily_search,
    )

    return {
        "brave": [Route("/res/v1/web/search", brave_search, methods=["GET", "POST"])],
        "tavily": [Route("/search", tavily_search, methods=["POST"])],
        "firecrawl": [Route("/v2/search", firecrawl_v2, methods=["POST"]),
                      Route("/v1/search", firecrawl_v1, methods=["POST"])],
        "exa": [Route("/search", more.exa_search, methods=["POST"])],
        "perplexity": [Route("/search", more.perplexity_search, methods=["POST"])],
        "serpapi": [Route("/search.json", more.serpapi_search, methods=["GET"]),
                    Route("/search", more.serpapi_search, methods=["GET"])],
        "serper": [Route("/search", more.serper_search, methods=["POST"])],
        "parallel": [Route("/v1/search", more.parallel_search, methods=["POST"])],
        "youcom": [Route("/v1/search", more.youcom_search, methods=["GET", "POST"])],
        "linkup": [Route("/v1/search", more.linkup_search, methods=["POST"])],
        "jina_search": [Route("/", more.jina_search, methods=["GET", "POST"])],
        "jina": [Route("/", jina_read_post, methods=["POST"]), Route("/{url:path}", jina_read, methods=["GET"])],
        "openai": [Route("/v1/chat/completions", chat_completions, methods=["POST"])],
    }


def _app(routes: list[Route | Mount], sb: Sandbox) -> Starlette:
    app = Starlette(routes=routes)
    app.state.sandbox = sb
    app.state.counters = sb.counters
    app.state.totals = sb.totals
    return app


def create_app(world: World | None = None, faults: FaultPlan | None = None, *, hang_s: float = 3600.0) -> Starlette:
    """One ASGI app serving every sandbox route under /<provider>; `hang_s` is how long a `timeout` fault sleeps."""
    return create_apps(world, faults, hang_s=hang_s)[0]


def create_apps(
    world: World | None = None, faults: FaultPlan | None = None, *, hang_s: float = 3600.0
) -> tuple[Starlette, dict[str, Starlette]]:
    """The one app, and one app per provider serving that provider at its root (for official clients, which
    join their own absolute paths onto the base URL); all share one Sandbox (world, faults, counters)."""
    sb = Sandbox(world or default_world(), faults, hang_s)
    groups = route_groups()
    combined = _app([Route("/", index), *(Mount(f"/{name}", routes=routes) for name, routes in groups.items())], sb)
    return combined, {name: _app(list(routes), sb) for name, routes in groups.items()}
