"""What every search adapter shares: key, client, the call, the surface rule, mapping a Reply to a SearchResponse,
and the ProviderSpec each provider module (adapters/providers/<name>.py) declares as `PROVIDER`."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import httpx
import msgspec
import structlog

from searchtrace.adapters._errors import key_rejected
from searchtrace.adapters._http import OwnsClient, Reply
from searchtrace.adapters._keys import Secret, scrub_bytes, scrub_parsed, scrub_text
from searchtrace.adapters._persona import SandboxRoute, WireReply
from searchtrace.adapters._types import Endpoint, EndpointSpec, Limits, SearchHit, SearchResponse
from searchtrace.adapters._urls import domain_of, normalize_url

log = structlog.get_logger("searchtrace.adapters")

_TAG = re.compile(r"<[^>]*>")
_MAX_ERROR = 500  # characters of a provider message kept


def clean_text(text: str | None) -> str:
    """Strip HTML tags (Brave's <strong> decorations) and unescape entities; collapse whitespace."""
    if not text:
        return ""
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def domain_or_url(domain: str | None, url: str) -> str:
    """The provider's domain when it gave one, else the URL's host."""
    return (domain or "").strip().lower() or domain_of(url)


def join_surface(parts: Iterable[str | None]) -> str:
    """The snippet surface of docs/how-to/providers.md: every per-result text part the provider returned, stripped, empty and
    repeated parts dropped, joined by newlines in the provider's order."""
    return "\n".join(dict.fromkeys(t for t in (p.strip() for p in parts if p) if t))


def add_answer(hits: list[SearchHit], url: str, text: str) -> None:
    """A page-level answer box becomes part of the surface of the result it cites (dropped when none is shown)."""
    target = normalize_url(url)
    for i, hit in enumerate(hits):
        if text and normalize_url(hit.url) == target:
            hits[i] = msgspec.structs.replace(hit, snippet=join_surface([text, hit.snippet]),
                                              metadata={**hit.metadata, "answer_box": True})
            return


def str_message(value: Any) -> str:
    """An error field that is a message, or an object holding `message`; '' otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("message"):
        return str(value["message"])
    return ""


def shorten(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= _MAX_ERROR else message[: _MAX_ERROR - 1] + "…"


class SearchAdapter(OwnsClient):
    """Base of a search provider: subclasses build the request, parse hits and read error bodies."""

    kind: ClassVar[str]  # the provider ("brave"); `name` defaults to it and may be renamed per run
    name: str
    auth_statuses: ClassVar[tuple[int, ...]] = (401, 403)

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        params: dict[str, Any] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        key: Secret | None = None,
        key_fallback: str | None = None,
        name: str | None = None,
    ) -> None:
        self.name = name or self.kind
        self.params: dict[str, Any] = {**self.default_params(), **(params or {})}
        super().__init__(endpoint, transport, key, key_fallback)

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def page_text(cls, params: dict[str, Any]) -> bool:
        """Whether `params` put full page text into the results (docs/how-to/providers.md: off by default, recorded when on)."""
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.endpoint.base_url!r}, params={self.params!r})"

    async def search(self, query: str, *, trace_id: str | None = None) -> SearchResponse:
        """One search call, normalised; every remote fault becomes a status, never an exception."""
        reply = await self._send(query, trace_id)
        response = self._to_response(reply)
        log.info("search", provider=self.name, status=response.status, n=len(response.hits),
                 http_status=response.http_status, latency_ms=round(response.latency_ms, 1),
                 retries=len(response.retries))
        return response

    async def _send(self, query: str, trace_id: str | None) -> Reply:
        raise NotImplementedError

    def parse_hits(self, body: bytes) -> list[SearchHit]:
        """Hits in rank order from a 2xx body; raise (ValueError / msgspec errors) when the body is not usable."""
        raise NotImplementedError

    def error_message(self, body: Any, text: str) -> str:
        """The provider's own message from an error body (decoded JSON or None, and its text)."""
        return text

    def is_auth_failure(self, http_status: int, body: Any) -> bool:
        return http_status in self.auth_statuses

    def no_results(self, http_status: int, body: Any) -> bool:
        """An error status that means "found nothing" for this provider (Linkup's 400), recorded as zero hits."""
        return False

    def _to_response(self, reply: Reply) -> SearchResponse:
        secrets = self.secrets()
        raw = scrub_bytes(reply.body, *secrets) if reply.body else None
        common: dict[str, Any] = dict(raw=raw, latency_ms=reply.latency_ms, provider_ms=reply.provider_ms,
                                      queue_ms=reply.queue_ms, http_status=reply.http_status, retries=reply.retries)
        if reply.outcome == "timeout":
            return SearchResponse(status="timeout", error=scrub_text(reply.error or "", self._key) or None, **common)
        if reply.outcome in ("too_large", "bad_response"):
            return SearchResponse(status="bad_response", error=scrub_text(reply.error or "", self._key) or None,
                                  **common)
        if reply.outcome == "http_error" and reply.http_status is not None and self.no_results(
                reply.http_status, reply.json_or_none()):
            return SearchResponse(status="ok", **common)
        if reply.outcome == "http_error":
            return SearchResponse(status="http_error", error=scrub_text(self._http_error(reply), self._key), **common)
        try:
            hits = scrub_parsed(self.parse_hits(reply.body), secrets)
        except (ValueError, TypeError, KeyError, RecursionError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            return SearchResponse(status="bad_response", error=scrub_text(f"unusable body: {exc}", self._key),
                                  **common)
        return SearchResponse(status="ok", hits=hits, **common)

    def _http_error(self, reply: Reply) -> str:
        return http_error_text(reply, self.label, self.endpoint.key_env, self.error_message, self.is_auth_failure)


def http_error_text(
    reply: Reply,
    label: str,
    key_env: str | None,
    message_of: Callable[[Any, str], str],
    is_auth_failure: Callable[[int, Any], bool],
) -> str:
    """One line for a failed call: the provider's message (`message_of(decoded body or None, text)`), or the key
    rejection naming the variable to fix."""
    if reply.http_status is None:
        return reply.error or "transport error"
    text = reply.body.decode("utf-8", "replace")
    body = reply.json_or_none()
    try:
        message = shorten(message_of(body, text) or text) or f"HTTP {reply.http_status}"
    except (AttributeError, TypeError, KeyError, IndexError):
        message = shorten(text) or f"HTTP {reply.http_status}"
    if is_auth_failure(reply.http_status, body):
        return key_rejected(label, key_env, reply.http_status, message)
    return f"HTTP {reply.http_status}: {message}"


class ProviderSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Everything about one search provider; the registry finds it as `PROVIDER` in adapters/providers/<name>.py."""

    adapter: type[SearchAdapter]  # its `kind` is the provider's name, its `label` how messages call it
    order: int = 100  # place in listings (the paper's three, then docs/how-to/providers.md order); sandbox serve's port order
    paper: bool = False  # one of the paper's three: the default demo set
    key_env: str
    base_url_env: str
    default_base_url: str
    limits: Limits
    routes: tuple[SandboxRoute, ...]  # its sandbox paths below R/<name>
    fault: Callable[[int, str], WireReply]  # its own reply to an injected 429 / 401 / 500 / 503 (status, request key)
    quota: Callable[[str], WireReply]  # its own out-of-credit reply (request key)
    example: str  # how to point its official client (or curl) at its sandbox base URL `{url}`
    sample_config: str = ""  # its `[providers.<name>]` table in the sample run config (engine._config)
    auth_header: str = "Authorization"  # how the proxy sends its key: header name and value format
    auth_format: str = "Bearer {key}"
    key_param: str | None = None  # the query parameter carrying the key instead of a header
    mcp_tool: str | None = None  # the search tool of its own MCP server, whose replies are read as searches
    mcp_body: Callable[[Sequence[str]], dict[str, Any]] | None = None  # that tool's text content as the API body

    @property
    def name(self) -> str:
        return self.adapter.kind

    @property
    def label(self) -> str:
        return self.adapter.label

    @property
    def endpoint(self) -> EndpointSpec:
        return EndpointSpec(name=self.name, key_env=self.key_env, base_url_env=self.base_url_env,
                            default_base_url=self.default_base_url, limits=self.limits, sandbox_path=self.name)
