"""A misbehaving server on 127.0.0.1: every way it breaks HTTP reaches the caller as a typed httpx error, then as a
Reply outcome (never a foreign exception, never a traceback); timeouts are the only faults called timeouts."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import anyio
import httpx
import pytest
from aiohttp.client_reqrep import ConnectionKey

from searchtrace.adapters import Endpoint, EndpointClient
from searchtrace.adapters._aiohttp_transport import AiohttpTransport, as_httpx_error

pytestmark = pytest.mark.anyio

Writer = asyncio.StreamWriter


async def _send(w: Writer, data: bytes) -> None:
    w.write(data)
    await w.drain()


def _reset(w: Writer) -> None:
    """Close with RST instead of FIN (SO_LINGER 0): a connection reset on the client side."""
    sock = w.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    w.transport.abort()


async def bad_status_line(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok")


async def http09(w: Writer) -> None:
    await _send(w, b"<html>an HTTP/0.9 answer: a body, no status line, no headers</html>\n")


async def negative_length(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello")


async def two_lengths(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nhello")


async def long_header(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\nContent-Length: 2\r\n\r\nok")


async def many_headers(w: Writer) -> None:
    lines = b"".join(b"X-H%d: v\r\n" % i for i in range(500))
    await _send(w, b"HTTP/1.1 200 OK\r\n" + lines + b"Content-Length: 2\r\n\r\nok")


async def bad_chunking(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nmore\r\n")


async def bad_chunking_later(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
    await asyncio.sleep(0.05)  # the head is parsed and returned first: the body is what breaks
    await _send(w, b"zz\r\nmore\r\n")


async def closed_mid_body(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
    w.close()


async def reset_mid_body(w: Writer) -> None:
    await _send(w, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
    await asyncio.sleep(0.05)
    _reset(w)


async def reset_before_answer(w: Writer) -> None:
    _reset(w)


async def closed_before_answer(w: Writer) -> None:
    w.close()


async def silent(w: Writer) -> None:
    await asyncio.sleep(5)


SCENARIOS: dict[str, Callable[[Writer], Awaitable[None]]] = {
    f.__name__: f for f in (bad_status_line, http09, negative_length, two_lengths, long_header, many_headers,
                            bad_chunking, bad_chunking_later, closed_mid_body, reset_mid_body, reset_before_answer, closed_before_answer,
                            silent)
}


@pytest.fixture
async def server() -> AsyncIterator[str]:
    """Answers GET /<scenario> as the scenario says, after reading the request head."""

    async def handle(reader: asyncio.StreamReader, writer: Writer) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode().strip("/")
            await SCENARIOS[path](writer)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield f"http://127.0.0.1:{port}"


# scenario -> (httpx error the transport raises, Reply outcome, HTTP status in the Reply, error text starts with)
EXPECTED: dict[str, tuple[type[httpx.HTTPError], str, int | None, str]] = {
    "bad_status_line": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "http09": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "negative_length": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "two_lengths": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "long_header": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "many_headers": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "bad_chunking": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
    "closed_mid_body": (httpx.RemoteProtocolError, "bad_response", 200, "body cut off: RemoteProtocolError"),
    "reset_mid_body": (httpx.RemoteProtocolError, "bad_response", 200, "body cut off: RemoteProtocolError"),
    "reset_before_answer": (httpx.ReadError, "http_error", None, "transport error: ReadError"),
    "closed_before_answer": (httpx.RemoteProtocolError, "http_error", None, "transport error: RemoteProtocolError"),
}


async def _through_transport(root: str, scenario: str) -> BaseException | None:
    transport = AiohttpTransport(2)
    try:
        request = httpx.Request("GET", f"{root}/{scenario}", extensions={"timeout": {"connect": 2.0, "pool": 2.0}})
        response = await transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
    except Exception as exc:
        return exc
    finally:
        await transport.aclose()
    return None


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
async def test_a_broken_answer_is_the_matching_httpx_error(server: str, scenario: str) -> None:
    exc = await _through_transport(server, scenario)
    want = EXPECTED[scenario][0]
    assert type(exc) is want, repr(exc)
    assert isinstance(exc.__cause__, aiohttp.ClientError)  # the original stays attached for debugging


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
async def test_a_broken_answer_is_a_reply_outcome_and_is_retried(server: str, scenario: str) -> None:
    _, outcome, status, prefix = EXPECTED[scenario]
    ec = EndpointClient(Endpoint(base_url=server, rps=0.0, timeout_s=2.0, max_retries=1, max_wait_s=0.001))
    reply = await ec.call("GET", scenario, what="t")
    await ec.aclose()
    assert (reply.outcome, reply.http_status) == (outcome, status)
    assert reply.error is not None and reply.error.startswith(prefix), reply.error
    # a broken answer before any status is retried as a transport fault; a cut-off 2xx body is not (as before)
    assert [r.reason for r in reply.retries] == (["transport"] if status is None else [])


async def test_a_server_that_never_answers_is_a_timeout(server: str) -> None:
    ec = EndpointClient(Endpoint(base_url=server, rps=0.0, timeout_s=0.2, max_retries=0))
    reply = await ec.call("GET", "silent", what="t")
    await ec.aclose()
    assert (reply.outcome, reply.error) == ("timeout", "no complete answer within 0.2 s")


async def test_bad_chunking_after_the_head_ends_at_the_deadline(server: str) -> None:
    """aiohttp's C parser records a chunk-framing error that arrives after the head on the connection, not on the
    body stream, so the body read never ends (its pure-Python parser raises TransferEncodingError); the attempt's
    deadline bounds it: the call ends as a timeout after timeout_s, never hangs."""
    ec = EndpointClient(Endpoint(base_url=server, rps=0.0, timeout_s=0.3, max_retries=0))
    with anyio.fail_after(60):  # a guard against a hang: the body read alone would never end
        reply = await ec.call("GET", "bad_chunking_later", what="t")
    await ec.aclose()
    assert (reply.outcome, reply.http_status) == ("timeout", 200)  # ended by the attempt's 0.3 s deadline


def _conn_key(host: str) -> ConnectionKey:
    return ConnectionKey(host, 443, True, True, None, None, None)


def test_mapping_keeps_timeouts_apart_from_connection_failures() -> None:
    dns = aiohttp.ClientConnectorDNSError(_conn_key("no-such-host.invalid"), OSError(-2, "Name or service not known"))
    refused = aiohttp.ClientConnectorError(_conn_key("127.0.0.1"), ConnectionRefusedError(111, "Connect call failed"))
    cases: list[tuple[Exception, bool, type[httpx.HTTPError]]] = [
        (dns, False, httpx.ConnectError),
        (refused, False, httpx.ConnectError),
        (aiohttp.ConnectionTimeoutError("connect"), False, httpx.ConnectTimeout),
        (aiohttp.SocketTimeoutError("read"), True, httpx.ReadTimeout),
        (TimeoutError(), False, httpx.ReadTimeout),
        (aiohttp.ServerDisconnectedError(), False, httpx.RemoteProtocolError),
        (aiohttp.ClientPayloadError("cut"), True, httpx.RemoteProtocolError),
        (aiohttp.NonHttpUrlClientError("ftp://x"), False, httpx.UnsupportedProtocol),
        (aiohttp.InvalidURL("http://"), False, httpx.UnsupportedProtocol),
        (ValueError("Newline or carriage return character detected in HTTP status message or header"), False,
         httpx.LocalProtocolError),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), True, httpx.ReadError),
        (ConnectionResetError(104, "reset"), False, httpx.ReadError),
        (RuntimeError("Session is closed"), False, httpx.ConnectError),
    ]
    for exc, reading, want in cases:
        got = as_httpx_error(exc, reading=reading)
        assert type(got) is want, (exc, got)
    assert "DNS lookup failed" in str(as_httpx_error(dns, reading=False))


async def test_a_dns_failure_is_a_retried_transport_error_not_a_timeout() -> None:
    dns = aiohttp.ClientConnectorDNSError(_conn_key("no-such-host.invalid"), OSError(-2, "Name or service not known"))

    def fail(request: httpx.Request) -> httpx.Response:
        raise as_httpx_error(dns, reading=False)

    ec = EndpointClient(Endpoint(base_url="http://no-such-host.invalid", max_retries=1, max_wait_s=0.001),
                        httpx.MockTransport(fail))
    reply = await ec.call("GET", "x", what="t")
    await ec.aclose()
    assert (reply.outcome, [r.reason for r in reply.retries]) == ("http_error", ["transport"])
    assert reply.error is not None and "DNS lookup failed" in reply.error


async def test_a_request_aiohttp_refuses_to_send_is_final(server: str) -> None:
    ec = EndpointClient(Endpoint(base_url=server, max_retries=3, max_wait_s=0.001))
    reply = await ec.call("GET", "silent", what="t", headers={"X-Bad": "a\r\nInjected: 1"})
    await ec.aclose()
    assert (reply.outcome, reply.final, reply.retries) == ("http_error", True, [])
