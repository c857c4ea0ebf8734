"""The sandbox ASGI app: every search provider (the routes its module declares), Jina Reader, chat completions and
the Responses API over one World.

Routes (root R): R/<endpoint's sandbox path>/<its own path> (route_groups), e.g. R/<provider>/… for each search
provider, GET R/jina/{url}, POST R/openai/v1/chat/completions and R/openai/v1/responses, POST R/anthropic/v1/messages
(and …/count_tokens), POST R/gemini/v1beta/models/{model}:generateContent (and :streamGenerateContent); GET R/
(an index).
`create_apps` also gives one app per provider with its routes at the root (`sandbox serve` puts each on a port).
`app.state.counters[(route, trace_id)]` counts requests per `X-Searchtrace-Trace` header (None when absent),
`app.state.totals[route]` per route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from searchtrace.adapters._persona import SandboxRoute, WireReply, WireRequest
from searchtrace.adapters._registry import endpoints, specs
from searchtrace.adapters.sandbox import _batch_route as batch
from searchtrace.adapters.sandbox._anthropic_route import count_tokens, messages
from searchtrace.adapters.sandbox._chat_route import chat_completions
from searchtrace.adapters.sandbox._faults import FaultPlan
from searchtrace.adapters.sandbox._fetch_route import jina_read, jina_read_post
from searchtrace.adapters.sandbox._gemini_route import generate, grounding_redirect
from searchtrace.adapters.sandbox._hosted import REDIRECT_PATH
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._responses_route import perplexity_agent, responses
from searchtrace.adapters.sandbox._state import Sandbox, json_body, sandbox_of
from searchtrace.adapters.sandbox._world import World, default_world


def base_urls(root: str) -> dict[str, str]:
    """Every base URL (what the adapters are configured with) under one sandbox root URL (the one app)."""
    r = root.rstrip("/")
    return {name: f"{r}/{e.sandbox_path}" for name, e in endpoints().items()}


async def index(request: Request) -> Response:
    root = str(request.base_url).rstrip("/")
    return json_response({"sandbox": "searchtrace", "base_urls": base_urls(root),
                          "questions": len(sandbox_of(request).world.questions),
                          "pages": len(sandbox_of(request).world.pages)})


def _reply(reply: WireReply) -> Response:
    return json_response(reply.body, reply.status, reply.headers)


def _endpoint(provider: str, route: SandboxRoute) -> Callable[[Request], Awaitable[Response]]:
    """A provider module's route handler as a Starlette endpoint: counted, and faulted by the request's key."""

    async def endpoint(request: Request) -> Response:
        sb = sandbox_of(request)
        sb.count(provider, request)
        wire = WireRequest(method=request.method, params=dict(request.query_params),
                           headers={k.lower(): v for k, v in request.headers.items()}, body=await json_body(request))
        out = route.handler(wire, sb.shelf)
        if isinstance(out, WireReply):
            return _reply(out)

        async def produce() -> Response:
            return _reply(out.produce())

        return await sb.run(provider, sb.fault(provider, out.key, out.text), out.key, produce)

    return endpoint


def route_groups() -> dict[str, list[Route]]:
    """Each endpoint's routes at its own root, as the real API has them (mounted under its sandbox path)."""
    groups = {s.name: [Route(r.path, _endpoint(s.name, r), methods=list(r.methods)) for r in s.routes]
              for s in specs()}
    groups["jina"] = [Route("/", jina_read_post, methods=["POST"]), Route("/{url:path}", jina_read, methods=["GET"])]
    groups["openai"] = [Route("/v1/chat/completions", chat_completions, methods=["POST"]),
                        Route("/v1/responses", responses, methods=["POST"]),
                        Route("/v1/files", batch.upload_file, methods=["POST"]),
                        Route("/v1/files/{file_id}", batch.get_file, methods=["GET"]),
                        Route("/v1/files/{file_id}/content", batch.file_content, methods=["GET"]),
                        Route("/v1/batches", batch.create_openai_batch, methods=["POST"]),
                        Route("/v1/batches/{batch_id}", batch.get_openai_batch, methods=["GET"]),
                        Route("/v1/batches/{batch_id}/cancel", batch.cancel_openai_batch, methods=["POST"])]
    groups["anthropic"] = [Route("/v1/messages", messages, methods=["POST"]),
                           Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
                           Route("/v1/messages/batches", batch.create_anthropic_batch, methods=["POST"]),
                           Route("/v1/messages/batches/{batch_id}", batch.get_anthropic_batch, methods=["GET"]),
                           Route("/v1/messages/batches/{batch_id}/results", batch.anthropic_results, methods=["GET"]),
                           Route("/v1/messages/batches/{batch_id}/cancel", batch.cancel_anthropic_batch,
                                 methods=["POST"])]
    groups["gemini"] = [Route("/v1beta/models/{target}", generate, methods=["POST"]),
                        Route(f"/{REDIRECT_PATH}/{{token}}", grounding_redirect, methods=["GET"])]
    groups["perplexity"].append(Route("/v1/responses", perplexity_agent, methods=["POST"]))  # docs/how-to/hosted.md
    return groups


def _app(routes: list[Route | Mount], sb: Sandbox) -> Starlette:
    app = Starlette(routes=routes)
    app.state.sandbox = sb
    app.state.counters = sb.counters
    app.state.totals = sb.totals
    return app


def create_app(world: World | None = None, faults: FaultPlan | None = None, *, hang_s: float = 3600.0,
               batch_delay_s: float = 0.0) -> Starlette:
    """One ASGI app serving every sandbox route under /<provider>; `hang_s` is how long a `timeout` fault sleeps,
    `batch_delay_s` how long a model batch stays in progress."""
    return create_apps(world, faults, hang_s=hang_s, batch_delay_s=batch_delay_s)[0]


def create_apps(
    world: World | None = None, faults: FaultPlan | None = None, *, hang_s: float = 3600.0, batch_delay_s: float = 0.0
) -> tuple[Starlette, dict[str, Starlette]]:
    """The one app, and one app per provider serving that provider at its root (for official clients, which
    join their own absolute paths onto the base URL); all share one Sandbox (world, faults, counters)."""
    sb = Sandbox(world or default_world(), faults, hang_s, batch_delay_s)
    groups = route_groups()
    combined = _app([Route("/", index), *(Mount(f"/{name}", routes=routes) for name, routes in groups.items())], sb)
    return combined, {name: _app(list(routes), sb) for name, routes in groups.items()}
