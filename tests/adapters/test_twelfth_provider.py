"""Adding a search provider is adding one module: a throw-away twelfth one, written here, is found by the registry,
served by the sandbox, recorded through the production adapter path and reported."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

import searchtrace.adapters._registry as registry
from searchtrace import pipeline
from searchtrace.adapters import providers
from searchtrace.adapters.sandbox import (  # EXAMPLES: read before acme exists
    EXAMPLES,
    ROOT,
    create_app,
    in_process,
)
from searchtrace.engine import parse_config

# The whole of the new provider: its wire format, normalisation, sandbox persona and route, and its spec.
ACME = '''\
"""Acme search: GET /find?q=; each item's `text` is the snippet surface."""

from __future__ import annotations

import msgspec

from searchtrace.adapters._http import Reply
from searchtrace.adapters._persona import Deferred, SandboxRoute, Shelf, WireReply, WireRequest, rejected, request_key
from searchtrace.adapters._search_base import ProviderSpec, clean_text, domain_or_url, join_surface; from searchtrace.adapters import SearchAdapter
from searchtrace.adapters._types import Limits; from searchtrace.adapters import SearchHit


class _Item(msgspec.Struct):
    link: str
    name: str = ""
    text: str = ""


class _Body(msgspec.Struct):
    items: list[_Item] = []


class AcmeSearch(SearchAdapter):
    kind = "acme"
    label = "Acme"

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        headers = {"Accept": "application/json", "X-Acme-Key": self._key.reveal() if self._key else ""}
        return await self._http.call("GET", "find", what=f"search:{self.name}", headers=headers,
                                     params={"q": query}, trace_id=trace_id)

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        items = msgspec.json.decode(body, type=_Body).items
        return [SearchHit(rank=rank, title=clean_text(i.name), url=i.link, domain=domain_or_url(None, i.link),
                          snippet=join_surface([i.text])) for rank, i in enumerate(items, start=1)]


def find(req: WireRequest, shelf: Shelf) -> WireReply | Deferred:
    """The sandbox persona: BM25's top 10, the page description as the text."""
    if rejected(req.headers.get("x-acme-key")):
        return WireReply({"error": "invalid key"}, 401)
    q = req.params.get("q", "")

    def produce() -> WireReply:
        pages = shelf.pages
        return WireReply({"items": [{"link": pages[i].url, "name": pages[i].title, "text": pages[i].description}
                                    for _, i in shelf.bm25_hits("acme", q, 10)]})

    return Deferred(request_key("acme", q), q, produce)


PROVIDER = ProviderSpec(
    adapter=AcmeSearch, key_env="ACME_API_KEY", base_url_env="SEARCHTRACE_ACME_BASE_URL",
    default_base_url="https://api.acme.example", limits=Limits(rps=1.0, concurrency=2, timeout_s=30.0),
    routes=(SandboxRoute("/find", ("GET",), find),),
    fault=lambda status, key: WireReply({"error": f"HTTP {status}"}, status),
    quota=lambda key: WireReply({"error": "out of credit"}, 402),
    example="curl -H 'X-Acme-Key: sandbox' '{url}/find?q=Elmwyn+Athletic'",
    auth_header="X-Acme-Key", auth_format="{key}",
)
'''


@pytest.fixture
def acme(tmp_path: Path) -> Iterator[str]:
    """The providers package with acme.py beside the real modules, for this test only."""
    folder = tmp_path / "more_providers"
    folder.mkdir()
    (folder / "acme.py").write_text(ACME)
    saved = list(providers.__path__)
    providers.__path__.append(str(folder))
    registry.discover()
    try:
        yield "acme"
    finally:
        providers.__path__[:] = saved
        sys.modules.pop(f"{providers.__name__}.acme", None)
        registry.discover()


def test_acme_is_small() -> None:
    assert len(ACME.splitlines()) < 70


def test_the_registry_finds_it_and_everything_asks_the_registry(acme: str) -> None:
    from searchtrace.adapters import default_key_env
    from searchtrace.adapters.sandbox import base_urls, env_exports, routes
    from searchtrace.engine.proxy._routes import auth_header, classify

    assert registry.search_provider_names()[-1] == acme and acme not in registry.paper_providers()
    assert registry.default_endpoint(acme).base_url == "https://api.acme.example"
    assert registry.sandbox_endpoint(acme, "http://sandbox").base_url == "http://sandbox/acme"
    assert default_key_env(acme) == "ACME_API_KEY"
    assert acme in routes()
    assert env_exports(base_urls("http://h"))["SEARCHTRACE_ACME_BASE_URL"] == "http://h/acme"
    assert acme not in EXAMPLES  # the sandbox-serve examples were read when serve.py was imported
    target = classify("acme/find")
    assert target is not None and (target.kind, target.endpoint) == ("search", acme)
    assert auth_header(acme, "k") == ("X-Acme-Key", "k")
    cfg = parse_config({"agent": {"model": "m"}, "providers": {acme: {}}, "dataset": {"path": "sandbox"}}, "<t>")
    assert cfg.providers[acme].key_env == "ACME_API_KEY" and cfg.providers[acme].rps == 1.0


def test_the_sandbox_serves_it(acme: str) -> None:
    box = in_process(create_app())

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=box.transport, base_url=ROOT) as client:
            ok = await client.get("/acme/find", params={"q": "Elmwyn Athletic founded"}, headers={"X-Acme-Key": "k"})
            refused = await client.get("/acme/find", params={"q": "x"})
            return ok, refused

    ok, refused = anyio.run(go)
    assert ok.status_code == 200 and "elmwyn-athletic" in ok.json()["items"][0]["link"]
    assert refused.status_code == 401
    assert box.app.state.totals["acme"] == 2


def test_recorded_and_reported(acme: str, tmp_path: Path) -> None:
    result = anyio.run(lambda: pipeline.demo(tmp_path / "acme.duckdb", tmp_path, 3, progress=False,
                                             providers=(acme,)))
    assert result.record.trajectories == 3
    assert list(result.report.providers) == [acme]
    row = result.report.providers[acme]
    assert row.trajectories == 3 and row.searches_per_trajectory >= 1 and row.valid_items > 0
