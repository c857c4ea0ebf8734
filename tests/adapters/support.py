"""Helpers for the adapter tests: fixture bodies over a real httpx transport, and a key-echoing provider stand-in."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from searchtrace.adapters import Endpoint
from tests.shared_data import shared_path

FIXTURES = shared_path("research/fixtures")  # ../shared beside the repo, else the copy in tests/data
KEY_VARS = ("BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "JINA_API_KEY", "OPENAI_API_KEY",
            "MOONSHOT_API_KEY")


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixtures_of(prefix: str) -> list[str]:
    return sorted(p.name for p in FIXTURES.iterdir() if p.name.startswith(prefix))


def fast_endpoint(base_url: str, key_env: str | None, **kw: Any) -> Endpoint:
    """No rate limit, short waits: retry tests stay well under a second."""
    fields: dict[str, Any] = {"rps": 0.0, "concurrency": 8, "timeout_s": 5.0, "max_retries": 2, "max_wait_s": 0.02}
    fields.update(kw)
    return Endpoint(base_url=base_url, key_env=key_env, **fields)


class Recorder:
    """A MockTransport that answers from a script and remembers every request."""

    def __init__(self, answer: Callable[[httpx.Request, int], httpx.Response]) -> None:
        self.requests: list[httpx.Request] = []
        self._answer = answer
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._answer(request, len(self.requests))


def serve_fixture(name: str, status: int = 200, headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> Recorder:
    body = fixture(name)
    hdrs = {"content-type": content_type, **(headers or {})}
    return Recorder(lambda _req, _n: httpx.Response(status, content=body, headers=hdrs))


ERROR_BODIES: dict[str, Callable[[str], bytes]] = {
    "brave": lambda m: json.dumps({"type": "ErrorResponse", "error": {"id": "x", "status": 422,
                                   "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": m, "meta": {}}}).encode(),
    "tavily": lambda m: json.dumps({"detail": {"error": m}}).encode(),
    "firecrawl": lambda m: json.dumps({"success": False, "error": m}).encode(),
    "jina": lambda m: json.dumps({"data": None, "code": 401, "name": "AuthenticationFailedError", "status": 40103,
                                  "message": m, "readableMessage": f"AuthenticationFailedError: {m}"}).encode(),
    "openai": lambda m: json.dumps({"error": {"message": f"Incorrect API key provided: {m}",
                                              "type": "invalid_request_error", "code": "invalid_api_key"}}).encode(),
}


def echo_app() -> Any:
    """A hostile stand-in for every provider: error bodies echo the key they were sent (tests of scrubbing).

    A query / URL / message containing `!500` answers 500, a key starting with `bad` answers 401 (422 for
    Brave); otherwise a fixture body, also carrying the key in a harmless field.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def key_of(request: Request) -> str:
        return request.headers.get("x-subscription-token") or request.headers.get("authorization", "").removeprefix(
            "Bearer ")

    def reply(status: int, body: bytes, ctype: str = "application/json") -> Response:
        return Response(body, status_code=status, media_type=ctype)

    async def handle(request: Request, provider: str, ok_fixture: str, text: str) -> Response:
        key = key_of(request)
        if key.startswith("bad"):
            return reply(422 if provider == "brave" else 401, ERROR_BODIES[provider](f"invalid key {key}"))
        if "!500" in text:
            return reply(500, ERROR_BODIES[provider](f"boom while serving {key}"))
        return reply(200, fixture(ok_fixture))

    async def brave(request: Request) -> Response:
        return await handle(request, "brave", "brave_web_search_ok.json", request.query_params.get("q", ""))

    async def tavily(request: Request) -> Response:
        return await handle(request, "tavily", "tavily_search_ok.json", (await request.body()).decode())

    async def firecrawl(request: Request) -> Response:
        return await handle(request, "firecrawl", "firecrawl_v2_search_ok.json", (await request.body()).decode())

    async def jina(request: Request) -> Response:
        return await handle(request, "jina", "jina_reader_ok.json", str(request.url))

    async def chat(request: Request) -> Response:
        return await handle(request, "openai", "openai_chat_tool_call.json", (await request.body()).decode())

    return Starlette(routes=[
        Route("/brave/res/v1/web/search", brave),
        Route("/tavily/search", tavily, methods=["POST"]),
        Route("/firecrawl/v2/search", firecrawl, methods=["POST"]),
        Route("/jina/{target:path}", jina),
        Route("/openai/v1/chat/completions", chat, methods=["POST"]),
    ])
