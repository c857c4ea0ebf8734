"""Jina Reader fetch backend: GET {base}/{url} as markdown, 2 MB read cap while streaming, on-disk cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import msgspec
import structlog

from searchtrace.adapters._fetch_cache import CachedPage, FetchCache
from searchtrace.adapters._http import OwnsClient, Reply
from searchtrace.adapters._keys import Secret, json_headers, scrub_parsed, scrub_text
from searchtrace.adapters._search_base import http_error_text
from searchtrace.adapters._types import Endpoint, EndpointSpec, FetchResponse, Limits
from searchtrace.adapters._urls import normalize_url

log = structlog.get_logger("searchtrace.adapters")

DEFAULT_BASE_URL = "https://r.jina.ai"
READ_CAP = 2 * 1024 * 1024
TIMEOUT_S = 15.0
CONCURRENCY = 4
ENDPOINT = EndpointSpec(name="jina", key_env="JINA_API_KEY", base_url_env="SEARCHTRACE_JINA_BASE_URL",
                        default_base_url=DEFAULT_BASE_URL, limits=Limits(rps=3.0, concurrency=CONCURRENCY,
                                                                         timeout_s=TIMEOUT_S), sandbox_path="jina")
_TEXT_MARKER = "Markdown Content:\n"


class _Data(msgspec.Struct):
    content: str | None = None
    title: str | None = None
    url: str | None = None


class _Envelope(msgspec.Struct):
    data: _Data | None = None


def envelope_message(body: dict[str, Any], text: str) -> str:
    """The message of Jina's error envelope `{code, name, status, message, readableMessage}` (Reader and Search)."""
    return str(body.get("readableMessage") or body.get("message") or body.get("name") or text)


def estimate_tokens(text: str) -> int:
    """A provider-independent estimate, len(text) // 4 (about 4 characters per token for English markdown)."""
    return len(text) // 4


def page_markdown(body: bytes, content_type: str) -> str:
    """The markdown of a Reader answer: JSON mode `data.content`, or text mode after `Markdown Content:`."""
    text = body.decode("utf-8")
    if "json" in content_type or text.lstrip().startswith("{"):
        env = msgspec.json.decode(body, type=_Envelope)
        if env.data is None or env.data.content is None:
            raise ValueError("no data.content in the Reader answer")
        return env.data.content
    head, sep, rest = text.partition(_TEXT_MARKER)
    return rest if sep else text


class JinaFetcher(OwnsClient):
    """Fetches a page as markdown through Jina Reader; concurrency 4 and 15 s timeout by default (registry)."""

    name = "jina"
    label = "Jina Reader"

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        cache_dir: Path | None = None,
        read_cap: int = READ_CAP,
        transport: httpx.AsyncBaseTransport | None = None,
        key: Secret | None = None,
        key_fallback: str | None = None,
    ) -> None:
        super().__init__(endpoint, transport, key, key_fallback, key_required=False)  # Reader works without a key
        self.read_cap = read_cap
        self.cache = FetchCache(cache_dir) if cache_dir is not None else None
        self.params: dict[str, Any] = {"timeout_s": endpoint.timeout_s, "read_cap": read_cap,
                                       "concurrency": endpoint.concurrency, "cache": cache_dir is not None}

    def __repr__(self) -> str:
        return f"JinaFetcher(base_url={self.endpoint.base_url!r}, params={self.params!r})"

    async def fetch(self, url: str, *, trace_id: str | None = None) -> FetchResponse:
        """The page as markdown, from the cache when present; remote faults become statuses, never exceptions."""
        key = normalize_url(url)
        if self.cache is not None:
            cached = await self.cache.get(key)
            if cached is not None:
                log.info("fetch", status="ok", cache_hit=True, n_bytes=cached.n_bytes)
                return FetchResponse(status="ok", content=cached.content, n_bytes=cached.n_bytes,
                                     n_tokens=estimate_tokens(cached.content), cache_hit=True,
                                     http_status=cached.http_status)
        headers = json_headers(self._key, json_body=False)  # the JSON envelope; Reader's default is markdown
        reply = await self._http.call("GET", "/" + url.strip(), what=f"fetch:{self.name}", headers=headers,
                                      trace_id=trace_id, read_cap=self.read_cap)
        response = self._to_response(reply)
        if response.status == "ok" and self.cache is not None and response.content is not None:
            await self.cache.put(CachedPage(url_normalized=key, content=response.content,
                                            n_bytes=response.n_bytes, http_status=response.http_status))
        log.info("fetch", status=response.status, cache_hit=False, n_bytes=response.n_bytes,
                 http_status=response.http_status, latency_ms=round(response.latency_ms, 1),
                 retries=len(response.retries))
        return response

    def _to_response(self, reply: Reply) -> FetchResponse:
        common: dict[str, Any] = dict(latency_ms=reply.latency_ms, provider_ms=reply.provider_ms,
                                      queue_ms=reply.queue_ms, http_status=reply.http_status,
                                      retries=reply.retries, n_bytes=reply.n_read)
        if reply.outcome in ("timeout", "too_large", "bad_response"):
            return FetchResponse(status=reply.outcome, error=reply.error, **common)
        if reply.outcome == "http_error":
            return FetchResponse(status="http_error", error=scrub_text(self._http_error(reply), self._key), **common)
        ctype = reply.headers.get("content-type", "") if reply.headers is not None else ""
        try:
            content = page_markdown(reply.body, ctype)
        except (ValueError, UnicodeDecodeError, RecursionError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            return FetchResponse(status="bad_response", error=scrub_text(f"unusable body: {exc}", self._key), **common)
        content = scrub_parsed(content, self.secrets())
        return FetchResponse(status="ok", content=content, n_tokens=estimate_tokens(content), **common)

    def _http_error(self, reply: Reply) -> str:
        """Reader's `{code, name, message, readableMessage}` envelope, a plain text message, or an HTML edge page."""

        def message_of(body: Any, text: str) -> str:
            if isinstance(body, dict):
                return envelope_message(body, text)
            if "<html" in text[:500].lower():
                return f"HTML error page from the edge (HTTP {reply.http_status})"
            return text

        return http_error_text(reply, self.label, self.endpoint.key_env, message_of,
                               lambda status, _body: status in (401, 403))


