"""Where a proxied request goes: which endpoint (by the sandbox's sub-path), what it is, and whose key it carries."""

from __future__ import annotations

import os
from typing import Literal

import msgspec

from searchtrace.adapters.keys import default_key_env
from searchtrace.adapters.openai_chat import ENDPOINT as CHAT
from searchtrace.adapters.registry import FETCHERS, SANDBOX_KEY, SEARCH_PROVIDERS, endpoints, spec, specs

Kind = Literal["search", "fetch", "chat", "other"]

# Request headers that carry a client's credentials (dropped, never forwarded or stored), belong to one hop, or
# describe a browser's page (the proxy is the client upstream, not that page).
DROP_REQUEST = frozenset({
    "origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user",
    "authorization", "proxy-authorization", "x-subscription-token", "x-api-key", "api-key", "cookie",
    "host", "content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "te", "upgrade",
    "x-searchtrace-epoch",
})
DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
                           "set-cookie", "date", "server"})
# Query parameters and JSON body fields some providers' clients put the key in.
KEY_FIELDS = ("api_key", "apiKey", "key")
# endpoints that take the key as a query parameter, and its name (from each provider's module)
QUERY_KEY = {s.name: s.key_param for s in specs() if s.key_param}


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """One request's destination: the endpoint name (registry.endpoints), its kind, and the path below it."""

    kind: Kind
    endpoint: str
    path: str


def _prefixes() -> list[tuple[str, str]]:
    """(sandbox sub-path, endpoint name), longest first so `openai/v1` wins over a shorter prefix."""
    return sorted(((e.sandbox_path, name) for name, e in endpoints().items()), key=lambda p: -len(p[0]))


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
            elif name == CHAT.name and path.rstrip("/") == "chat/completions":
                kind = "chat"
            else:
                kind = "other"
            return Target(kind=kind, endpoint=name, path=path)
    return None


def key_env(endpoint: str) -> str:
    return default_key_env(endpoint)


def upstream_key(endpoint: str, live: bool) -> str | None:
    """The proxy's own key for an endpoint: its environment when live, the sandbox's dummy key otherwise."""
    if not live:
        return SANDBOX_KEY
    return os.environ.get(key_env(endpoint), "").strip() or None


def live_base(endpoint: str) -> str:
    """The real endpoint's base URL, or the one its base-URL variable names."""
    e = endpoints()[endpoint]
    return (os.environ.get(e.base_url_env, "").strip() or e.default_base_url).rstrip("/")


def auth_header(endpoint: str, key: str) -> tuple[str, str] | None:
    """The header that carries `key` to `endpoint` (None: it goes in the query, QUERY_KEY); the fetch and chat
    endpoints take `Authorization: Bearer`, each search provider the way its module says."""
    if endpoint not in SEARCH_PROVIDERS:
        return "Authorization", f"Bearer {key}"
    s = spec(endpoint)
    return None if s.key_param else (s.auth_header, s.auth_format.format(key=key))
