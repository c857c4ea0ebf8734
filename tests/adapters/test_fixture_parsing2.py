"""Every fixture in research/fixtures2 (eight more providers) parses into the schema or the right typed error.

Each provider folder's manifest gives the status (and headers) a fixture came with; the expected surface is
computed here from the fixture's own fields by the docs/how-to/providers.md rule, independently of the adapter's code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from searchtrace.adapters import SEARCH_PROVIDERS, normalize_url
from searchtrace.adapters._keys import DEFAULT_KEY_ENV
from tests.adapters.support import Recorder, fast_endpoint
from tests.shared_data import shared_path

FIXTURES2 = shared_path("research/fixtures2")  # ../shared beside the repo, else the copy in tests/data
FOLDER = {"exa": "exa", "perplexity": "perplexity", "serpapi": "serpapi", "serper": "serper", "parallel": "parallel",
          "youcom": "youcom", "linkup": "linkup", "jina_search": "jina"}


def _join(parts: list[Any]) -> str:
    return "\n".join(dict.fromkeys(t for t in (str(p).strip() for p in parts if p) if t))


def _exa(b: Any) -> list[tuple[str, str]]:
    return [(r["url"], _join([*(r.get("highlights") or []), r.get("summary"), r.get("text")])) for r in b["results"]]


def _perplexity(b: Any) -> list[tuple[str, str]]:
    flat = [p for item in b["results"] for p in (item if isinstance(item, list) else [item])]
    return [(p["url"], _join([p["snippet"]])) for p in flat]


def _serpapi(b: Any) -> list[tuple[str, str]]:
    return [(r["link"], _join([r.get("snippet")])) for r in b.get("organic_results", [])]


def _serper(b: Any) -> list[tuple[str, str]]:
    return [(r["link"], _join([r.get("snippet")])) for r in b.get("organic", [])]


def _parallel(b: Any) -> list[tuple[str, str]]:
    return [(r["url"], _join(r["excerpts"])) for r in b["results"]]


def _youcom(b: Any) -> list[tuple[str, str]]:
    items = b["results"].get("web", []) + b["results"].get("news", [])  # knowledge answers have no URL
    return [(r["url"], _join([r.get("description"), *r.get("snippets", []), *r.get("contents", {}).get("highlights", [])]))
            for r in items]


def _linkup(b: Any) -> list[tuple[str, str]]:
    return [(r["url"], _join([r["content"]])) for r in b["results"] if r["type"] == "text"]


def _jina(b: Any) -> list[tuple[str, str]]:
    return [(d["url"], _join([d.get("description"), d.get("content")])) for d in b["data"] if d.get("url")]


SURFACE: dict[str, Callable[[Any], list[tuple[str, str]]]] = {
    "exa": _exa, "perplexity": _perplexity, "serpapi": _serpapi, "serper": _serper, "parallel": _parallel,
    "youcom": _youcom, "linkup": _linkup, "jina_search": _jina}

# what each error fixture must become: auth (a key error naming the variable), retry (429 retried),
# quota (not retried, not a key error), invalid (a request error), empty (ok, zero hits)
ERRORS: dict[tuple[str, str], str] = {
    ("exa", "badkey.json"): "auth", ("exa", "nocredits.json"): "quota", ("exa", "ratelimit.json"): "retry",
    ("exa", "validation400.json"): "invalid",
    ("perplexity", "badkey.json"): "auth", ("perplexity", "quota401.json"): "quota",
    ("perplexity", "ratelimit.json"): "retry",
    ("serpapi", "badkey.json"): "auth", ("serpapi", "ratelimit.json"): "quota",
    ("serpapi", "quirk_empty_200.json"): "empty",
    ("serper", "badkey.json"): "auth", ("serper", "nocredits.json"): "quota", ("serper", "ratelimit.json"): "retry",
    ("serper", "quirk_no_organic.json"): "empty",
    ("parallel", "badkey.json"): "auth", ("parallel", "nocredits.json"): "quota",
    ("parallel", "ratelimit.json"): "retry", ("parallel", "validation422.json"): "invalid",
    ("youcom", "badkey.json"): "auth", ("youcom", "nocredits402.json"): "quota",
    ("youcom", "ratelimit.json"): "retry", ("youcom", "validation422.json"): "invalid",
    ("linkup", "badkey.json"): "auth", ("linkup", "nocredits.json"): "quota", ("linkup", "ratelimit.json"): "retry",
    ("linkup", "noresult400.json"): "empty", ("linkup", "validation400.json"): "invalid",
    ("jina_search", "badkey.json"): "auth", ("jina_search", "nocredits402.json"): "quota",
    ("jina_search", "ratelimit.json"): "retry",
}


def _cases() -> list[tuple[str, str, int, dict[str, str]]]:
    out = []
    for provider, folder in FOLDER.items():
        manifest = json.loads((FIXTURES2 / folder / "manifest.json").read_text())
        for f in manifest["fixtures"]:
            headers = {k: str(v) for k, v in (f.get("headers") or {}).items() if not str(v).startswith(("<", "not "))}
            out.append((provider, f["file"], int(f["status"]), headers))
    return out


CASES = _cases()


def test_every_fixture_file_has_a_case() -> None:
    files = {(p, f) for p, f, _, _ in CASES}
    for provider, folder in FOLDER.items():
        on_disk = {p.name for p in (FIXTURES2 / folder).iterdir() if p.name != "manifest.json"}
        assert on_disk == {f for p, f in files if p == provider}
    assert set(ERRORS) <= files


@pytest.mark.anyio
@pytest.mark.parametrize("provider,name,status,headers", CASES, ids=[f"{p}/{n}" for p, n, _, _ in CASES])
async def test_fixture(provider: str, name: str, status: int, headers: dict[str, str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    var = DEFAULT_KEY_ENV[provider]
    monkeypatch.setenv(var, "test-key-123")
    body = (FIXTURES2 / FOLDER[provider] / name).read_bytes()
    rec = Recorder(lambda _r, _n: httpx.Response(status, content=body,
                                                 headers={"content-type": "application/json", **headers}))
    cls = SEARCH_PROVIDERS[provider]
    async with cls(fast_endpoint("http://provider", var), transport=rec.transport) as adapter:
        resp = await adapter.search("cold climate heat pump efficiency below freezing", trace_id="t-1")
    kind = ERRORS.get((provider, name), "ok" if status < 300 else "?")
    assert kind != "?", f"{provider}/{name}: an error fixture without an expectation"
    if kind in ("ok", "empty"):
        assert (resp.status, resp.error) == ("ok", None)
        want = SURFACE[provider](json.loads(body)) if kind == "ok" else []
        assert [(h.url, h.snippet) for h in resp.hits] == want
        assert [h.rank for h in resp.hits] == list(range(1, len(want) + 1))
        assert all(h.domain == normalize_url(h.url).split("/")[2] for h in resp.hits)
        assert all(isinstance(h.title, str) for h in resp.hits)  # null titles become ""
        assert len(rec.requests) == 1 and resp.raw == body
        return
    assert (resp.status, resp.http_status) == ("http_error", status)
    assert resp.error is not None and "test-key-123" not in resp.error
    assert len(rec.requests) == (3 if kind == "retry" else 1)
    assert [r.reason for r in resp.retries] == (["429", "429"] if kind == "retry" else [])
    assert (var in resp.error) is (kind == "auth")
    decoded = json.loads(body)
    messages = [decoded.get("error"), decoded.get("message"), decoded.get("detail")]
    inner = decoded.get("error") if isinstance(decoded.get("error"), dict) else {}
    messages += [inner.get("message")]
    assert any(isinstance(m, str) and m in resp.error for m in messages), resp.error


def test_surface_is_the_provider_text_only() -> None:
    """Jina's no-content reply has a shorter surface than its default (page text inlined) reply."""
    full = _jina(json.loads((FIXTURES2 / "jina" / "ok.json").read_bytes()))
    lean = _jina(json.loads((FIXTURES2 / "jina" / "ok_no_content.json").read_bytes()))
    assert [u for u, _ in full] == [u for u, _ in lean]
    assert all(len(s) > len(t) for (_, s), (_, t) in zip(full, lean, strict=True))


# where each provider takes its key, and an error body that echoes it (a hostile or careless server)
KEY_IN: dict[str, tuple[str, str]] = {
    "exa": ("header", "x-api-key"), "perplexity": ("header", "authorization"), "serpapi": ("query", "api_key"),
    "serper": ("header", "x-api-key"), "parallel": ("header", "x-api-key"), "youcom": ("header", "x-api-key"),
    "linkup": ("header", "authorization"), "jina_search": ("header", "authorization")}
ECHO: dict[str, Callable[[str], Any]] = {
    "exa": lambda m: {"error": m, "tag": "INVALID_API_KEY"},
    "perplexity": lambda m: {"error": {"message": m, "type": "invalid_api_key", "code": 401}},
    "serpapi": lambda m: {"error": m}, "serper": lambda m: {"message": m, "statusCode": 401},
    "parallel": lambda m: {"type": "error", "error": {"ref_id": "x", "message": m}},
    "youcom": lambda m: {"detail": m},
    "linkup": lambda m: {"statusCode": 401, "error": {"code": "UNAUTHORIZED", "message": m, "details": []}},
    "jina_search": lambda m: {"data": None, "code": 401, "name": "AuthenticationFailedError", "message": m,
                              "readableMessage": f"AuthenticationFailedError: {m}"}}


@pytest.mark.anyio
@pytest.mark.parametrize("provider", sorted(FOLDER))
async def test_key_is_sent_where_the_provider_reads_it_and_never_kept(provider: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-live-0123456789abcdef"
    var = DEFAULT_KEY_ENV[provider]
    monkeypatch.setenv(var, secret)
    where, name = KEY_IN[provider]

    def answer(request: httpx.Request, _n: int) -> httpx.Response:
        got = request.url.params.get(name) if where == "query" else request.headers.get(name, "")
        assert got in (secret, f"Bearer {secret}"), (where, name, got)
        return httpx.Response(401, json=ECHO[provider](f"invalid key {secret}"))

    rec = Recorder(answer)
    async with SEARCH_PROVIDERS[provider](fast_endpoint("http://provider", var), transport=rec.transport) as adapter:
        resp = await adapter.search("q")
    assert resp.status == "http_error" and resp.error is not None and var in resp.error
    assert secret not in resp.error and "invalid key ***" in resp.error
    assert resp.raw is not None and secret.encode() not in resp.raw
    assert secret not in repr(adapter)
