"""Where a proxied request goes: which endpoint (by the sandbox's sub-path), what it is, and whose key it carries."""

from __future__ import annotations

import os
from typing import Literal

import msgspec

from searchtrace.adapters.keys import DEFAULT_KEY_ENV
from searchtrace.adapters.registry import BASE_URLS, FETCHERS, SANDBOX_KEY, SEARCH_PROVIDERS

Kind = Literal["search", "fetch", "chat", "other"]

# Request headers that carry a client's credentials (dropped, never forwarded or stored) or belong to one hop.
DROP_REQUEST = frozenset({
    "authorization", "proxy-authorization", "x-subscription-token", "x-api-key", "api-key", "cookie",
    "host", "content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "te", "upgrade",
    "x-searchtrace-epoch",
})
DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
                           "set-cookie", "date", "server"})
# Query parameters and JSON body fields some providers' clients put the key in.
KEY_FIELDS = ("api_key", "apiKey", "key")
# How each endpoint takes its key (header name, value format); the rest use `Authorization: Bearer`.
AUTH: dict[str, tuple[str, str]] = {
    "brave": ("X-Subscription-Token", "{key}"),
    "exa": ("x-api-key", "{key}"),
    "serper": ("X-API-KEY", "{key}"),
    "parallel": ("x-api-key", "{key}"),
    "youcom": ("X-API-Key", "{key}"),
}
QUERY_KEY = {"serpapi": "api_key"}  # endpoints that take the key as a query parameter


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """One request's destination: the endpoint name (registry.BASE_URLS), its kind, and the path below it."""

    kind: Kind
    endpoint: str
    path: str


def _prefixes() -> list[tuple[str, str]]:
    """(sandbox sub-path, endpoint name), longest first so `openai/v1` wins over a shorter prefix."""
    return sorted(((sub, name) for name, (_, _, sub) in BASE_URLS.items()), key=lambda p: -len(p[0]))


def classify(rest: str) -> Target | None:
    """The route below `/t/<provider>/<qid>/`: None when it names no endpoint the sandbox serves."""
    for sub, name in _prefixes():
        if rest == sub or rest.startswith(sub + "/"):
            path = rest[len(sub) + 1:] if rest != sub else ""
            kind: Kind
            if name in SEARCH_PROVIDERS:
                kind = "search"
            elif name in FETCHERS:
                kind = "fetch" if path else "other"
            elif name == "openai" and path.rstrip("/") == "chat/completions":
                kind = "chat"
            else:
                kind = "other"
            return Target(kind=kind, endpoint=name, path=path)
    return None


def key_env(endpoint: str) -> str:
    return DEFAULT_KEY_ENV.get(endpoint) or f"{endpoint.upper()}_API_KEY"


def upstream_key(endpoint: str, live: bool) -> str | None:
    """The proxy's own key for an endpoint: its environment when live, the sandbox's dummy key otherwise."""
    if not live:
        return SANDBOX_KEY
    return os.environ.get(key_env(endpoint), "").strip() or None


def live_base(endpoint: str) -> str:
    """The real endpoint's base URL, or the one its base-URL variable names."""
    default, env, _ = BASE_URLS[endpoint]
    return (os.environ.get(env, "").strip() or default).rstrip("/")


def auth_header(endpoint: str, key: str) -> tuple[str, str] | None:
    """The header that carries `key` to `endpoint` (None: it goes in the query)."""
    if endpoint in QUERY_KEY:
        return None
    name, fmt = AUTH.get(endpoint, ("Authorization", "Bearer {key}"))
    return name, fmt.format(key=key)
