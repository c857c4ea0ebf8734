"""The httpx transport for real endpoints: one shared aiohttp session, with less work per request than httpx_aiohttp's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, NoReturn

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport
from httpx_aiohttp.transport import AIOHTTP_EXC_MAP, AiohttpResponseStream

_CHUNK = AiohttpResponseStream.CHUNK_SIZE


def _raise_as_httpx(exc: Exception) -> NoReturn:
    """Raise what httpx_aiohttp's map_aiohttp_exceptions raises for `exc`: its httpx error, or `exc` itself."""
    mapped: type[Exception] | None = None
    for from_exc, to_exc in AIOHTTP_EXC_MAP.items():
        if isinstance(exc, from_exc) and (mapped is None or issubclass(to_exc, mapped)):
            mapped = to_exc
    if mapped is None:
        raise exc
    raise mapped(str(exc)) from exc


class _Body(AiohttpResponseStream):
    """The response body in chunks of at most 16 KiB, read straight off aiohttp's stream (no iterator object).

    Errors map as in httpx_aiohttp, by try/except instead of a generator context manager per call.
    """

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._aiohttp_response.content
        while True:
            try:
                chunk = await content.read(_CHUNK)
            except Exception as exc:
                _raise_as_httpx(exc)
            if not chunk:
                return
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._aiohttp_response.__aexit__(None, None, None)
        except Exception as exc:
            _raise_as_httpx(exc)


class LeanAiohttpTransport(AiohttpTransport):
    """httpx_aiohttp's transport (same error mapping, same 16 KiB streamed chunks) minus its per-request overhead.

    Why: at 128 in flight the per-request Python work of the client layers, not the network, sets the rate
    (issue #5, perf.md §4). This transport builds its ClientTimeout once per timeout setting, hands aiohttp the
    headers as a plain list (no httpx.Headers -> CIMultiDict round trip through the mapping API), and its session
    keeps no cookies (a dummy jar: providers authenticate by key) and never decompresses (httpx decodes, so the
    fetch read cap counts decoded bytes exactly as before).
    """

    def __init__(self, limits: httpx.Limits, *, verify: bool = True) -> None:
        super().__init__(verify=verify, limits=limits)
        self._timeouts: dict[tuple[float | None, float | None, float | None], aiohttp.ClientTimeout] = {}

    def get_client(self) -> aiohttp.ClientSession:
        """A session on a keep-alive connector sized to the endpoint's concurrency (opened in the running loop)."""
        conns = self.limits.max_connections
        connector = aiohttp.TCPConnector(
            limit=conns if conns is not None else 100,
            keepalive_timeout=self.limits.keepalive_expiry,
            ssl=self.ssl_context,
        )
        return aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, trust_env=False
        )

    def _timeout(self, request: httpx.Request) -> aiohttp.ClientTimeout:
        t: dict[str, Any] = request.extensions.get("timeout") or {}
        key = (t.get("connect"), t.get("read"), t.get("pool"))
        timeout = self._timeouts.get(key)
        if timeout is None:
            timeout = aiohttp.ClientTimeout(sock_connect=key[0], sock_read=key[1], connect=key[2])
            self._timeouts[key] = timeout
        return timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self.client
        if not isinstance(session, aiohttp.ClientSession):
            session = self.client = self.get_client()
        data: bytes | httpx.AsyncByteStream | None
        try:
            data = request.content or None
        except httpx.RequestNotRead:
            data = request.stream  # type: ignore[assignment]
            request.headers.pop("transfer-encoding", None)  # aiohttp frames the body itself
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        try:
            response = await session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=data,
                allow_redirects=False,
                timeout=self._timeout(request),
                server_hostname=request.extensions.get("sni_hostname"),
            )
        except Exception as exc:
            _raise_as_httpx(exc)
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode()
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response),
            request=request,
            extensions=extensions,
        )
