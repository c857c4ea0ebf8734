"""Build a search provider, the fetch backend or a chat model by name, with endpoints from config and env."""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path
from typing import Any

import httpx
import msgspec

import searchtrace.adapters._anthropic_messages as anthropic
import searchtrace.adapters._gemini as gemini
import searchtrace.adapters._jina as jina
import searchtrace.adapters._openai_chat as openai_chat
from searchtrace.adapters import providers
from searchtrace.adapters._jina import JinaFetcher
from searchtrace.adapters._keys import register_key_env
from searchtrace.adapters._openai_chat import OpenAIChat
from searchtrace.adapters._search_base import ProviderSpec, SearchAdapter
from searchtrace.adapters._types import Endpoint, EndpointSpec
from searchtrace.adapters._urls import base_url_problem
from searchtrace.store import BadInput

_SPECS: dict[str, ProviderSpec] = {}  # name -> spec, in listing order (ProviderSpec.order)
SEARCH_PROVIDERS: dict[str, type[SearchAdapter]] = {}  # name -> adapter class, the same order
FETCHERS = (jina.ENDPOINT.name,)
# the fetch backend and the model endpoints (OpenAI's chat and Responses, Anthropic's Messages, Gemini)
_OTHER_ENDPOINTS = (jina.ENDPOINT, openai_chat.ENDPOINT, anthropic.ENDPOINT, gemini.ENDPOINT)


def discover() -> None:
    """(Re)reads the providers package: every module in it declares `PROVIDER = ProviderSpec(...)`, named after it."""
    found: list[ProviderSpec] = []
    for info in pkgutil.iter_modules(providers.__path__):
        module = importlib.import_module(f"{providers.__name__}.{info.name}")
        spec = getattr(module, "PROVIDER", None)
        if not isinstance(spec, ProviderSpec) or spec.name != info.name:
            raise TypeError(f"{module.__name__}: PROVIDER must be a ProviderSpec whose adapter kind is {info.name!r}")
        found.append(spec)
    found.sort(key=lambda s: (s.order, s.name))
    _SPECS.clear()
    _SPECS.update((s.name, s) for s in found)
    SEARCH_PROVIDERS.clear()
    SEARCH_PROVIDERS.update((s.name, s.adapter) for s in found)
    for e in endpoints().values():
        register_key_env(e.name, e.key_env)


def search_provider_names() -> tuple[str, ...]:
    """Every search provider (docs/how-to/providers.md), the paper's three first."""
    return tuple(_SPECS)


def paper_providers() -> tuple[str, ...]:
    """The paper's three: the default demo set."""
    return tuple(n for n, s in _SPECS.items() if s.paper)


def specs() -> list[ProviderSpec]:
    """Every search provider's spec, in listing order."""
    return list(_SPECS.values())


def spec(name: str) -> ProviderSpec:
    """The spec of search provider `name`; unknown names are BadInput listing the known."""
    if name not in _SPECS:
        raise BadInput(f"unknown search provider {name!r} ({_known('providers', _SPECS)})")
    return _SPECS[name]


def endpoints() -> dict[str, EndpointSpec]:
    """Every endpoint by name: the search providers, the fetch backend and the chat endpoint."""
    return {**{n: s.endpoint for n, s in _SPECS.items()}, **{e.name: e for e in _OTHER_ENDPOINTS}}


def endpoint_spec(name: str) -> EndpointSpec:
    """The endpoint `name`; unknown names are BadInput listing the known."""
    known = endpoints()
    if name not in known:
        raise BadInput(f"unknown endpoint {name!r} ({_known('endpoints', known)})")
    return known[name]


SANDBOX_KEY = "sandbox-key"  # what the sandbox accepts when no key variable is set


def _known(kind: str, names: Any) -> str:
    return f"known {kind}: {', '.join(sorted(names))}"


def default_endpoint(name: str, *, base_url: str | None = None, key_env: str | None = None, **limits: Any) -> Endpoint:
    """An Endpoint for `name`: base URL from the argument (config), else its env variable, else the real default."""
    e = endpoint_spec(name)
    url = base_url or os.environ.get(e.base_url_env, "").strip() or e.default_base_url
    if not base_url and (problem := base_url_problem(url)):
        raise BadInput(f"{e.base_url_env}: base URL {problem}")
    fields = {**msgspec.to_builtins(e.limits), **limits}
    return Endpoint(base_url=url, key_env=key_env or e.key_env, **fields)


def sandbox_endpoint(name: str, root: str, **limits: Any) -> Endpoint:
    """An Endpoint for `name` inside the sandbox app at `root` (e.g. http://sandbox or http://127.0.0.1:PORT)."""
    e = endpoint_spec(name)
    fields: dict[str, Any] = {"rps": 0.0, "concurrency": 16, "timeout_s": 10.0, "max_wait_s": 2.0}
    if name in FETCHERS:
        fields["concurrency"] = jina.CONCURRENCY
    fields.update(limits)
    return Endpoint(base_url=f"{root.rstrip('/')}/{e.sandbox_path}", key_env=e.key_env, **fields)


def build_search(
    name: str,
    endpoint: Endpoint | None = None,
    *,
    params: dict[str, Any] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
    run_name: str | None = None,
) -> SearchAdapter:
    """A search provider by kind (`run_name`: what this run calls it); unknown kinds are BadInput listing the known."""
    cls = spec(name).adapter
    return cls(endpoint or default_endpoint(name), params=params, transport=transport, key_fallback=key_fallback,
               name=run_name)


def build_fetcher(
    name: str = FETCHERS[0],
    endpoint: Endpoint | None = None,
    *,
    cache_dir: Path | None = None,
    read_cap: int = jina.READ_CAP,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
) -> JinaFetcher:
    """The fetch backend by name (only Jina Reader so far); `cache_dir=None` disables the cache."""
    if name not in FETCHERS:
        raise BadInput(f"unknown fetch backend {name!r} ({_known('fetch backends', FETCHERS)})")
    return JinaFetcher(endpoint or default_endpoint(name), cache_dir=cache_dir, read_cap=read_cap,
                       transport=transport, key_fallback=key_fallback)


def build_chat(
    model: str,
    endpoint: Endpoint | None = None,
    *,
    params: dict[str, Any] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    key_fallback: str | None = None,
    api: str = "chat",
) -> OpenAIChat:
    """A chat model asked over Chat Completions, the Responses API, Anthropic's Messages or Gemini (`api`), at the
    API's endpoint (its base-URL and key variables, e.g. OPENAI_BASE_URL / OPENAI_API_KEY, unless configured)."""
    if not model:
        raise BadInput("chat model: empty model name")
    api_ = next((a for a in openai_chat.APIS if a == api), None)
    if api_ is None:
        raise BadInput(f"chat api: must be one of {', '.join(openai_chat.APIS)}, got {api!r}")
    cls = openai_chat.chat_class(api_)
    return cls(endpoint or default_endpoint(openai_chat.API_ENDPOINTS[api_]), model, params=params,
               transport=transport, key_fallback=key_fallback, api=api_)


discover()
