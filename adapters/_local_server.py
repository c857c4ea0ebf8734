"""The guard every local HTTP server mounts (docs/concepts/security.md): a web page the user visits must not reach it.

`view`, `proxy` and `sandbox serve` bind 127.0.0.1 only, yet a browser on the same machine can still be made to
send them requests: a page of another origin (CSRF: forms, `fetch` in no-cors mode, `<img>`), or a foreign name
that resolves to 127.0.0.1 (DNS rebinding). `LocalGuard` wraps the app and, before it sees the request:

- answers 421 to a Host other than 127.0.0.1:<port>, localhost:<port> or [::1]:<port>, <port> being the port the
  socket is bound to (uvicorn's `scope["server"]`, so a server started on port 0 needs nothing more);
- answers 403 to a request with an `Origin` that is not this server's own, or a `Sec-Fetch-Site` other than
  `same-origin` / `none` (a page on another local port is `same-site` to a browser, and gets SameSite cookies);
- answers 415 to a POST, PUT or PATCH without `Content-Type: application/json` (a form or `text/plain` POST is how
  a page sends one without a CORS preflight); `media_paths` names the other media types a path takes (a real
  API's url-encoded form, `collect`'s OTLP protobuf);
- with a `token`, answers 403 unless the query (`?token=`) or the cookie holds it, and sets that cookie (HttpOnly,
  SameSite=Strict) on a response to a request that brought the token in its query;
- caps each header value (400), the body (413; by Content-Length at once, else while reading, never reading more
  than the cap) and the nesting of a JSON body (400).

Each refusal is one JSON line `{"error": "..."}`. Clients that are not browsers (the official SDKs, our adapters,
curl) send no Origin and no Sec-Fetch-*, use the address they were given, and send JSON: they pass unchanged.

`bind_local` and `serve_local` are how a long-running server (`proxy`, `collect`) takes its loopback port and serves
on it until SIGINT/SIGTERM, so that it can finish up (close open trajectories) after the server stops.
"""

from __future__ import annotations

import contextlib
import hmac
import signal
import socket
from collections.abc import Callable, Generator, Iterable, Mapping
from urllib.parse import parse_qs

import anyio
import msgspec
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from searchtrace.store import BadInput

KiB = 1 << 10
MiB = 1 << 20
MAX_DEPTH = 64
MAX_HEADER = 8 * KiB  # one header value (uvicorn itself refuses a header block over 16 KiB)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FETCH_SITES = frozenset({"same-origin", "none"})
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_PARENS = bytes.maketrans(b"[{]}", b"(())")  # the kind of bracket does not change the depth


def loopback_hosts(port: int) -> frozenset[str]:
    """The Host values a server bound to 127.0.0.1:`port` answers (lower case)."""
    names = ("127.0.0.1", "localhost", "[::1]")
    return frozenset(f"{n}:{port}" for n in names) | (frozenset(names) if port == 80 else frozenset())


def json_too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON text nests arrays/objects deeper than `limit` (brackets in strings ignored), without parsing
    it and with byte-string operations only (a Python loop runs only over what is left of a deep or broken text)."""
    text = body.replace(b"\\\\", b"").replace(b'\\"', b"")  # escapes gone, every quote left delimits a string
    brackets = b"".join(text.split(b'"')[::2]).translate(_PARENS, _NOT_BRACKET)  # outside strings: ( and ) only
    if brackets.count(b"(") <= limit:
        return False
    peeled = 0
    while peeled < limit:  # each pass takes exactly one level off every innermost pair
        inner = brackets.replace(b"()", b"")
        if not inner:
            return False
        if len(inner) == len(brackets):
            break
        brackets, peeled = inner, peeled + 1
    depth = 0
    for b in brackets:
        depth += 1 if b == 0x28 else -1
        if depth > limit - peeled:
            return True
    return False


def refusal(status: int, message: str) -> list[Message]:
    """The ASGI messages of a one-line JSON refusal."""
    body = msgspec.json.encode({"error": message}) + b"\n"
    return [{"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                         (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]},
            {"type": "http.response.body", "body": body}]


class TooLarge(Exception):
    """The body grew past the cap while it was read."""


class LocalGuard:
    """ASGI middleware with the checks above; `max_body` in bytes, `token` for a server that needs one (`view`)."""

    def __init__(self, app: ASGIApp, *, max_body: int, token: str | None = None, cookie: str = "searchtrace-token",
                 max_depth: int = MAX_DEPTH, max_header: int = MAX_HEADER,
                 media_paths: Mapping[str, frozenset[str]] | None = None) -> None:
        self.app = app
        # path -> media types its POST may carry besides JSON: a url-encoded form only where the real API takes one
        # (a page can send a form without a CORS preflight), OTLP's application/x-protobuf (a page cannot)
        self.media_paths = dict(media_paths or {})
        self.max_body = max_body
        self.token = token
        self.cookie = cookie
        self.max_depth = max_depth
        self.max_header = max_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        port = (scope.get("server") or (None, None))[1]
        cookie = f"{self.cookie}-{port}"  # cookies ignore ports: one name per server, so two views do not collide
        refused, from_query = self._check(scope, port, cookie)
        if refused is None and scope["type"] == "http":
            try:
                receive, refused = await self._body(scope, receive)
            except TooLarge:
                refused = (413, f"request body over {self.max_body} bytes")
        if refused is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            for message in refusal(*refused):
                await send(message)
            return
        if from_query and self.token is not None:
            morsel = f"{cookie}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode()

            async def send_cookie(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", []), (b"set-cookie", morsel)]
                await send(message)

            await self.app(scope, receive, send_cookie)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope, port: int | None, cookie: str) -> tuple[tuple[int, str] | None, bool]:
        """The refusal (status, message) by the request line and headers, if any; and whether the query held the token."""
        headers: dict[str, list[str]] = {}
        for raw_name, raw_value in scope.get("headers", []):
            if len(raw_value) > self.max_header:
                return (400, f"header {raw_name.decode('latin-1')!r} is longer than {self.max_header} bytes"), False
            headers.setdefault(raw_name.decode("latin-1").lower(), []).append(raw_value.decode("latin-1"))
        hosts = headers.get("host", [])
        allowed = loopback_hosts(port) if isinstance(port, int) else frozenset()
        if len(hosts) != 1 or hosts[0].strip().lower() not in allowed:
            shown = hosts[0][:100] if hosts else "(none)"
            return (421, f"Host {shown!r} is not this server's; use http://127.0.0.1:{port}/"), False
        for origin in headers.get("origin", []):
            if origin.strip().lower() not in {f"http://{h}" for h in allowed}:
                return (403, f"cross-origin request from {origin[:100]!r} refused"), False
        for site in headers.get("sec-fetch-site", []):
            if site.strip().lower() not in _FETCH_SITES:
                return (403, f"cross-site request (Sec-Fetch-Site: {site[:40]}) refused"), False
        method = scope.get("method", "GET")
        if method in BODY_METHODS:
            kinds = headers.get("content-type", [])
            media = kinds[0].split(";", 1)[0].strip().lower() if len(kinds) == 1 else ""
            other = media in self.media_paths.get(scope.get("path", ""), frozenset())
            if media != "application/json" and not other:
                return (415, f"{method} needs Content-Type: application/json"), False
        if self.token is None:
            return None, False
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(hmac.compare_digest(t.encode(), self.token.encode()) for t in query.get("token", [])):
            return None, True
        if any(hmac.compare_digest(t.encode(), self.token.encode()) for t in _cookie_values(headers.get("cookie", []), cookie)):
            return None, False
        return (403, "this server needs the token from the URL it printed (http://127.0.0.1:PORT/?token=…)"), False

    async def _body(self, scope: Scope, receive: Receive) -> tuple[Receive, tuple[int, str] | None]:
        """The body read up to the cap (never past it) and handed to the app again; or why it is refused."""
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        length = headers.get(b"content-length")
        if length is not None:
            if not length.strip().isdigit():
                return receive, (400, "Content-Length is not a number")
            if int(length) > self.max_body:
                return receive, (413, f"request body of {int(length)} bytes is over {self.max_body} bytes")
            if int(length) == 0:
                return receive, None
        elif b"transfer-encoding" not in headers:
            return receive, None
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left: let the app see it
                return _replay([message], receive), None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(parts)
        media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if media == b"application/json" and json_too_deep(body, self.max_depth):
            return receive, (400, f"JSON nested deeper than {self.max_depth} levels")
        return _replay([{"type": "http.request", "body": body, "more_body": False}], receive), None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives `messages` first, then the connection's own (a disconnect, later)."""
    queue = list(messages)

    async def replayed() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replayed


def _cookie_values(headers: Iterable[str], name: str) -> list[str]:
    """The values of cookie `name` in Cookie headers (other sites' cookies on 127.0.0.1 may be anything: skipped)."""
    out = []
    for header in headers:
        for pair in header.split(";"):
            key, eq, value = pair.strip().partition("=")
            if eq and key == name:
                out.append(value.strip().strip('"'))
    return out


def bind_local(port: int) -> socket.socket:
    """The socket on 127.0.0.1:`port` (0: any free port), bound before a store is opened: a port in use is bad input
    and leaves the store untouched. It listens only once the server starts serving it (uvicorn and asyncio call
    listen): until the server is ready a client is refused at once, never queued behind a store still opening."""
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto says TCP, and an accepted
    # socket inherits proto 0 from a listener made without it (each reply then waited ~40 ms for a delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise BadInput(f"--port: 127.0.0.1:{port} is in use ({exc.strerror}); pick another port "
                       "(or 0 for any free one)") from None
    sock.set_inheritable(True)
    return sock


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: the server stops on our signal receiver, and its caller finishes up."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def serve_local(app: ASGIApp, listener: socket.socket, *,
                      ready: Callable[[str, int], None] | None = None, grace_s: int = 2) -> None:
    """Serves `app` on `listener` (from `bind_local`) until SIGINT/SIGTERM; `ready(host, port)` once it listens;
    requests still running `grace_s` after the signal are cancelled."""
    port = int(listener.getsockname()[1])
    server = _QuietServer(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                                         lifespan="off", timeout_graceful_shutdown=grace_s))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, server)
        if ready is not None:
            tg.start_soon(_announce, server, ready, port)
        await server.serve(sockets=[listener])
        tg.cancel_scope.cancel()


async def _stop_on_signal(server: uvicorn.Server) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            server.should_exit = True
            return


async def _announce(server: uvicorn.Server, ready: Callable[[str, int], None], port: int) -> None:
    while not server.started:
        await anyio.sleep(0.01)
    ready("127.0.0.1", port)
