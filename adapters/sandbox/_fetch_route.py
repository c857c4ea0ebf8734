"""Jina Reader routes: GET R/jina/{url} (or POST R/jina/ with the URL in the body) returns the page as Reader
text, or the JSON envelope on Accept: json."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import msgspec
from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters.sandbox._wire as wire
from searchtrace.adapters._persona import request_key
from searchtrace.adapters.sandbox._corpus import Page
from searchtrace.adapters.sandbox._faults import strip_markers
from searchtrace.adapters.sandbox._responses import json_response, oversized
from searchtrace.adapters.sandbox._state import json_body, sandbox_of

FAULT_HOST = "faults.sandbox.test"
PREFIX = "/jina/"


def target_url(request: Request) -> str:
    """The URL to read: everything after /jina/, with the request's own query string (it belongs to the URL)."""
    raw = request.scope.get("raw_path") or request.scope["path"].encode()
    path = raw.decode("latin-1")
    root = request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    url = path[len(PREFIX) :] if path.startswith(PREFIX) else path.lstrip("/")
    for scheme in ("https:/", "http:/"):  # some clients squash '//' in a path
        if url.startswith(scheme) and not url.startswith(scheme + "/"):
            url = scheme + "/" + url[len(scheme) :]
    if "://" not in url:
        url = "https://" + url
    query = request.scope.get("query_string", b"").decode("latin-1")
    return f"{url}?{query}" if query else url


def _fault_page(url: str) -> Page:
    clean = strip_markers(url)
    body = (f"# Fault test page\n\nThis page stands at {clean} and exists so that faults can be injected by URL.\n\n"
            "It has two short paragraphs of ordinary markdown.\n")
    return Page(url=url, title="Fault test page", site="Sandbox", description="A page for fault injection.",
                body=body, published="2026-01-01", authority=0.0, kind="filler")


def _not_found(url: str) -> Page:
    return Page(url=url, title="404 Not Found", site="", description="", body="# 404 Not Found\n\nThe requested URL was not found on this server.\n",
                published="2026-01-01", authority=0.0, kind="filler")


def _plain_errors(response: Response, accept: str) -> Response:
    """With Accept: text/plain, Reader's error body is its plain `readableMessage`."""
    if response.status_code < 400 or "text/plain" not in accept or "application/json" in accept:
        return response
    try:
        message = msgspec.json.decode(bytes(response.body))["readableMessage"]
    except (msgspec.DecodeError, KeyError, TypeError):
        return response
    headers = {k: v for k, v in response.headers.items() if k.lower() == "retry-after"}
    return Response(str(message).encode(), response.status_code, headers, media_type="text/plain; charset=utf-8")


async def jina_read(request: Request) -> Response:
    accept = request.headers.get("accept", "")
    return _plain_errors(await _read(request, "application/json" in accept, target_url(request)), accept)


async def jina_read_post(request: Request) -> Response:
    """Reader's POST form: `POST R/jina/` with `{"url": …}` as JSON (or a url-encoded form field)."""
    accept = request.headers.get("accept", "")
    url: object = None
    if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        url = next(iter(parse_qs((await request.body()).decode("utf-8", "replace")).get("url", [])), None)
    else:
        url = (await json_body(request) or {}).get("url")
    if not isinstance(url, str) or not url.strip():
        missing = wire.jina_error(400, "ParamValidationError", 40001, "url is required in the request body")
        return _plain_errors(json_response(missing, 400), accept)
    return _plain_errors(await _read(request, "application/json" in accept, url.strip()), accept)


async def _read(request: Request, as_json: bool, url: str) -> Response:
    sb = sandbox_of(request)
    sb.count("jina", request)
    auth = request.headers.get("authorization")
    if auth is not None:
        token = auth.partition(" ")[2].strip()
        if not token or token.startswith("bad"):
            return json_response(wire.jina_error(401, *wire.JINA_401), 401)
    host = (urlsplit(url).hostname or "").lower()
    key = request_key("jina", url, str(as_json))
    kind = sb.fault("jina", key, url)
    if kind == "oversized":
        return oversized(url, as_json)

    async def produce() -> Response:
        page, warning = sb.world.page(url), None
        if page is None and host == FAULT_HOST:
            page = _fault_page(url)
        elif page is None and host in sb.world.hosts:
            page, warning = _not_found(url), "Target URL returned error 404: Not Found"
        if page is None:
            return json_response(wire.jina_error(422, "AssertionFailureError", 42206,
                                                 f"Failed to access {url}: getaddrinfo ENOTFOUND {host}"), 422)
        tokens = wire.jina_tokens(page.body)
        if as_json:
            return json_response(wire.jina_json(page, url, warning), 200, {"X-Usage-Tokens": str(tokens)})
        return Response(wire.jina_text(page, url, warning).encode(), 200, {"X-Usage-Tokens": str(tokens)},
                        media_type="text/plain; charset=utf-8")

    return await sb.run("jina", kind, key, produce)
