"""The httpx transport for real endpoints: one aiohttp session per endpoint, every failure raised as an httpx error.

Why our own: httpx's default pool collapses above ~16 in flight (issue #5) and httpx-aiohttp is reached only
through its internals. This is `httpx.AsyncBaseTransport`'s public contract over aiohttp's public API: a keep-alive
connector sized to the endpoint's concurrency, no cookie jar (providers authenticate by key), no decompression
(httpx decodes, so the fetch read cap counts decoded bytes), the body streamed in 16 KiB reads. Whatever aiohttp or
its HTTP parser raises becomes the httpx exception of the same meaning (`as_httpx_error`), so a misbehaving server
is a typed transport error for the caller, never a foreign exception or a traceback.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from aiohttp import http_exceptions

CHUNK_SIZE = 16 * 1024  # bytes per read off aiohttp's stream (a capped read stops at most this far past the cap)
KEEPALIVE_S = 5.0  # idle keep-alive connections are closed after this (httpx's default keepalive_expiry)

_Timeouts = tuple[float | None, float | None, float | None]


def as_httpx_error(exc: Exception, *, reading: bool) -> httpx.TransportError:
    """The httpx exception meaning what `exc` (from aiohttp, its parser or the socket) means.

    `reading`: the status and headers had arrived (the body broke off), else the request was being sent or its
    answer awaited. Timeouts are only ever timeouts: a refused connection or a failed DNS lookup is a ConnectError.
    """
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return httpx.ConnectError(f"DNS lookup failed: {text}")
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(exc, TimeoutError):  # aiohttp.SocketTimeoutError and every other timeout
        return httpx.ReadTimeout(text)
    if isinstance(exc, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        return httpx.ProxyError(text)
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ServerFingerprintMismatch):
        return httpx.ConnectError(text)  # refused, unreachable, TLS handshake or certificate
    if isinstance(exc, aiohttp.NonHttpUrlClientError | aiohttp.InvalidURL):
        return httpx.UnsupportedProtocol(text)
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError | aiohttp.ClientResponseError
                  | http_exceptions.HttpProcessingError):
        # closed before an answer, a body cut short (bad length or chunking), or a status line / header the parser
        # refused (HTTP/0.9, bad status line, line too long, too many headers, bad Content-Length)
        return httpx.RemoteProtocolError(text)
    if isinstance(exc, ValueError | TypeError | UnicodeError):
        return httpx.LocalProtocolError(text)  # a request aiohttp will not send (e.g. a newline in a header)
    if isinstance(exc, OSError):  # a connection made, then reset or broken (failed connects are connector errors)
        return httpx.ReadError(text)
    return httpx.ReadError(text) if reading else httpx.ConnectError(text)  # anything else aiohttp may raise


class _Body(httpx.AsyncByteStream):
    """The response body in reads of at most CHUNK_SIZE bytes, straight off aiohttp's stream."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        while True:
            try:
                chunk = await content.read(CHUNK_SIZE)
            except Exception as exc:
                raise as_httpx_error(exc, reading=True) from exc
            if not chunk:
                return
            yield chunk

    async def aclose(self) -> None:
        """Back to the pool when the body was read to its end, else the connection is closed."""
        try:
            self._response.release()
            await self._response.wait_for_close()
        except Exception as exc:
            raise as_httpx_error(exc, reading=True) from exc


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests through one aiohttp session, opened in the running event loop on first use.

    Timeouts come from the request's `timeout` extension as httpx sets it (connect, read, pool); no redirects are
    followed and no cookies kept, as our endpoints need neither.
    """

    def __init__(self, max_connections: int, *, verify: ssl.SSLContext | bool = True) -> None:
        self.max_connections = max(1, max_connections)
        self._verify = verify
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[_Timeouts, aiohttp.ClientTimeout] = {}

    def _open(self) -> aiohttp.ClientSession:
        ssl_context = self._verify if isinstance(self._verify, ssl.SSLContext) else httpx.create_ssl_context(
            verify=self._verify)  # the CA bundle httpx itself would use
        connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=KEEPALIVE_S, ssl=ssl_context)
        self._session = aiohttp.ClientSession(
            connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, trust_env=False
        )
        return self._session

    def _timeout(self, request: httpx.Request) -> aiohttp.ClientTimeout:
        """One ClientTimeout per distinct setting (requests of an endpoint share one)."""
        t: dict[str, Any] = request.extensions.get("timeout") or {}
        key = (t.get("connect"), t.get("read"), t.get("pool"))
        timeout = self._timeouts.get(key)
        if timeout is None:
            timeout = aiohttp.ClientTimeout(sock_connect=key[0], sock_read=key[1], connect=key[2])
            self._timeouts[key] = timeout
        return timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._session or self._open()
        data: Any
        try:
            data = request.content or None
        except httpx.RequestNotRead:
            data = request.stream  # a streamed body: aiohttp frames it itself
            request.headers.pop("transfer-encoding", None)
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
            raise as_httpx_error(exc, reading=False) from exc
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
        return httpx.Response(
            status_code=response.status,
            headers=list(response.raw_headers),
            stream=_Body(response),
            request=request,
            extensions=extensions,
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
