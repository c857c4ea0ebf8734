"""docs/concepts/security.md against the three real servers on 127.0.0.1 (`view`, `proxy`, the sandbox as `sandbox serve` runs it):
Host allow-list, same-origin only, JSON bodies, the view's token, body / nesting / header caps, over raw sockets."""

from __future__ import annotations

import json
import random
import re
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from searchtrace.adapters._local_server import json_too_deep
from searchtrace.adapters.sandbox._serve import MAX_BODY as SANDBOX_MAX
from searchtrace.web._app import MAX_BODY as VIEW_MAX
from tests.proxy.support import write_questions
from tests.web.servers import View

PROXY_MAX = 256 * 1024  # the proxy runs with --max-body 256KiB (the option parsed and applied)


class Server(NamedTuple):
    """One server under test: its port, a GET and a JSON POST it answers, what the query needs, its body cap."""

    name: str
    port: int
    get: str
    post: str
    post_body: dict[str, Any]
    query: str  # appended to every path ("token=…" for view)
    cap: int


class Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


def exchange(port: int, head: bytes, chunks: Iterable[bytes] = ()) -> Reply:
    """One request over a raw socket (head as given, then body chunks, stopping when the server stops reading)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head)
        for chunk in chunks:
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
        data = b""
        while b"\r\n\r\n" not in data:
            got = s.recv(65536)
            if not got:
                break
            data += got
        top, _, body = data.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.setdefault(k.strip().lower(), v.strip())
        need = int(headers.get("content-length", "0"))
        while len(body) < need:
            try:
                got = s.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            body += got
    return Reply(int(lines[0].split()[1]), headers, body)


def request(srv: Server, method: str = "GET", path: str | None = None, *, host: str | None = "",
            headers: dict[str, str] | None = None, body: bytes | None = None, version: str = "1.1") -> Reply:
    path = path or (srv.post if method == "POST" else srv.get)
    sep = "&" if "?" in path else "?"
    lines = [f"{method} {path}{sep + srv.query if srv.query else ''} HTTP/{version}"]
    if host is not None:
        lines.append(f"Host: {host or f'127.0.0.1:{srv.port}'}")
    hdrs = dict(headers or {})
    if body is not None:
        hdrs.setdefault("Content-Length", str(len(body)))
    lines += [f"{k}: {v}" for k, v in hdrs.items()]
    lines.append("Connection: close")
    return exchange(srv.port, ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))


def post(srv: Server, doc: Any = None, *, ctype: str | None = "application/json", **kw: Any) -> Reply:
    headers = {"Content-Type": ctype} if ctype else {}
    headers.update(kw.pop("headers", {}))
    body = doc if isinstance(doc, bytes) else json.dumps(srv.post_body if doc is None else doc).encode()
    return request(srv, "POST", headers=headers, body=body, **kw)


def refused(reply: Reply | httpx.Response, status: int, *words: str) -> None:
    """A refusal by the guard: the status, one JSON line {"error": ...} naming `words`."""
    if isinstance(reply, httpx.Response):
        reply = Reply(reply.status_code, dict(reply.headers), reply.content)
    assert reply.status == status, reply
    assert reply.body.endswith(b"\n") and reply.body.count(b"\n") == 1, reply.body
    message = json.loads(reply.body)["error"]
    assert isinstance(message, str) and all(w.lower() in message.lower() for w in words), message


@pytest.fixture(scope="module")
def qid(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_questions(tmp_path_factory.mktemp("guard-q") / "q.jsonl", 1)[0]["qid"]


@pytest.fixture(params=["view", "proxy", "sandbox"])
def srv(request: pytest.FixtureRequest, qid: str) -> Server:
    if request.param == "view":
        v: View = request.getfixturevalue("view")
        return Server("view", int(v.root.rsplit(":", 1)[1]), "/api/runs", "/api/sql", {"sql": "SELECT 42 AS n"},
                      f"token={v.token}", VIEW_MAX)
    if request.param == "proxy":
        url: str = request.getfixturevalue("proxy_url")
        return Server("proxy", int(url.rsplit(":", 1)[1]), "/", f"/t/tavily/{qid}/tavily/search",
                      {"query": "Elmwyn Athletic"}, "", PROXY_MAX)
    root, _ = request.getfixturevalue("upstream")
    return Server("sandbox", int(root.rsplit(":", 1)[1]), "/", "/tavily/search",
                  {"query": "Elmwyn Athletic", "api_key": "sandbox"}, "", SANDBOX_MAX)


def test_the_official_way_in_works(srv: Server) -> None:
    """What clients send (JSON, no Origin, the printed address) passes, under any loopback name of the port."""
    assert request(srv).status == 200
    assert post(srv).status == 200
    for host in (f"localhost:{srv.port}", f"[::1]:{srv.port}", f"LOCALHOST:{srv.port}", f"127.0.0.1:{srv.port}"):
        assert request(srv, host=host).status == 200, host
    assert post(srv, ctype="application/json; charset=utf-8").status == 200
    for same in ("same-origin", "none"):  # the page's own fetches, a typed URL
        assert request(srv, headers={"Sec-Fetch-Site": same}).status == 200
    for own in (f"http://127.0.0.1:{srv.port}", f"http://localhost:{srv.port}"):
        assert post(srv, headers={"Origin": own}).status == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "EVIL.EXAMPLE:{port}", "127.0.0.1",
                                  "localhost", "127.0.0.1:{other}", "[::2]:{port}", "[::1]", "localhost.:{port}",
                                  "127.0.0.1.nip.io:{port}", "0.0.0.0:{port}", "127.0.0.2:{port}", "{port}", ""])
def test_a_foreign_host_gets_421(srv: Server, host: str) -> None:
    """DNS rebinding: a name that resolves to 127.0.0.1 is still not this server's name (nor another port)."""
    shown = host.format(port=srv.port, other=srv.port + 1)
    refused(request(srv, host=shown or " "), 421, "host")
    refused(post(srv, host=shown or " "), 421, "host")


def test_a_missing_or_doubled_host_gets_421(srv: Server) -> None:
    refused(request(srv, host=None, version="1.0"), 421, "host")
    assert request(srv, host=None).status == 400  # HTTP/1.1 without Host: uvicorn (h11) refuses it itself
    assert request(srv, headers={"Host": "evil.example"}).status == 400  # a second Host after the good one: also


@pytest.mark.parametrize("origin", ["null", "http://evil.example", "http://127.0.0.1:{other}", "https://127.0.0.1:{port}",
                                    "http://localhost", "http://127.0.0.1", "http://evil.example:{port}",
                                    "http://[::1]:{other}", "file://"])
def test_a_foreign_origin_gets_403(srv: Server, origin: str) -> None:
    shown = origin.format(port=srv.port, other=srv.port + 1)
    refused(post(srv, headers={"Origin": shown}), 403, "origin")
    refused(request(srv, headers={"Origin": shown}), 403, "origin")
    refused(request(srv, "OPTIONS", headers={"Origin": shown, "Access-Control-Request-Method": "POST"}), 403)


@pytest.mark.parametrize("site", ["cross-site", "same-site", "CROSS-SITE", "bogus"])
def test_a_cross_site_fetch_gets_403(srv: Server, site: str) -> None:
    """`same-site` too: a page on another port of 127.0.0.1 is the same site to a browser (and gets its cookies)."""
    refused(request(srv, headers={"Sec-Fetch-Site": site}), 403, "sec-fetch-site")
    refused(post(srv, headers={"Sec-Fetch-Site": site}), 403, "sec-fetch-site")


@pytest.mark.parametrize("ctype", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", "application/jsonx", "application/json-seq",
                                   None])
def test_a_body_that_is_not_declared_json_gets_415(srv: Server, ctype: str | None) -> None:
    """The POSTs a page can send without a CORS preflight (text/plain, forms) are refused, even with JSON inside."""
    refused(post(srv, ctype=ctype), 415, "application/json")
    refused(post(srv, b"sql=SELECT+1", ctype=ctype), 415, "application/json")


def test_bodies_are_capped_by_length_and_by_stream(srv: Server) -> None:
    """Over the cap: 413 by Content-Length before any byte of the body is sent, or while a chunked body streams."""
    head = (f"POST {srv.post}{'?' + srv.query if srv.query else ''} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
            "Content-Type: application/json\r\nConnection: close\r\n")
    refused(exchange(srv.port, f"{head}Content-Length: {srv.cap + 1}\r\n\r\n".encode()), 413, str(srv.cap))
    refused(exchange(srv.port, f"{head}Content-Length: {10 ** 15}\r\n\r\n".encode()), 413)
    chunk = b"[" + b" " * 65534 + b"\n"

    def stream() -> Iterator[bytes]:
        for _ in range(srv.cap // len(chunk) + 8):  # a little over the cap; the server stops reading at it
            yield f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        yield b"0\r\n\r\n"

    refused(exchange(srv.port, f"{head}Transfer-Encoding: chunked\r\n\r\n".encode(), stream()), 413, str(srv.cap))
    assert exchange(srv.port, f"{head}Content-Length: 12abc\r\n\r\n".encode()).status == 400  # uvicorn's own
    fits = json.dumps({**srv.post_body, "pad": "x" * (min(srv.cap, 300_000) - 200)}).encode()
    assert len(fits) < srv.cap and post(srv, fits).status == 200


def test_json_nesting_is_capped_at_64(srv: Server) -> None:
    deep = json.dumps({**srv.post_body, "deep": json.loads("[" * 62 + "]" * 62)})  # 63 levels with the object
    assert post(srv, deep.encode()).status == 200
    for levels in (65, 3000, 100_000):
        refused(post(srv, ("[" * levels + "]" * levels).encode()), 400, "nested", "64")
    refused(post(srv, ('{"a":' * 70 + "1" + "}" * 70).encode()), 400, "nested")


def test_header_values_are_capped(srv: Server) -> None:
    refused(request(srv, headers={"X-Padding": "a" * 9000}), 400, "x-padding")
    assert request(srv, headers={"X-Padding": "a" * 8000}).status == 200


def test_refused_requests_never_reach_upstream(proxy_url: str, upstream: tuple[str, Any], qid: str) -> None:
    """Every refusal above happens before the proxy forwards anything (the sandbox counts what arrives)."""
    _, totals = upstream
    srv = Server("proxy", int(proxy_url.rsplit(":", 1)[1]), "/", f"/t/tavily/{qid}/tavily/search",
                 {"query": "Elmwyn Athletic"}, "", PROXY_MAX)
    before = totals["tavily"]
    post(srv, ctype="text/plain")
    post(srv, headers={"Origin": "http://evil.example"})
    post(srv, headers={"Sec-Fetch-Site": "cross-site"})
    post(srv, host=f"evil.example:{srv.port}")
    post(srv, ("[" * 100 + "]" * 100).encode())
    request(srv, path=f"/t/brave/{qid}/brave/res/v1/web/search?q=x", headers={"Sec-Fetch-Site": "same-site"})
    assert totals["tavily"] == before and totals["brave"] == 0
    assert post(srv).status == 200 and totals["tavily"] == before + 1  # the same call, sent properly, goes through


def test_view_needs_its_token_and_sets_it_as_a_strict_cookie(view: View) -> None:
    port = int(view.root.rsplit(":", 1)[1])
    for path in ("/", "/static/app.js", "/report.html", "/api/runs", "/api/trajectories", "/api/report", "/api/vocabulary"):
        refused(httpx.get(f"{view.root}{path}"), 403, "token")
        refused(httpx.get(f"{view.root}{path}", params={"token": view.token[:-1]}), 403)
        refused(httpx.get(f"{view.root}{path}", headers={"Cookie": f"searchtrace-view-{port}=x{view.token}"}), 403)
        refused(httpx.get(f"{view.root}{path}", headers={"Cookie": f"searchtrace-view-{port + 1}={view.token}"}), 403)
    refused(httpx.post(f"{view.root}/api/sql", json={"sql": "SELECT 1"}), 403, "token")
    first = httpx.get(f"{view.root}/", params={"token": view.token})
    assert first.status_code == 303 and first.headers["location"] == "/"  # the token leaves the address bar
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"searchtrace-view-{port}={view.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    by_cookie = httpx.post(f"{view.root}/api/sql", json={"sql": "SELECT 42 AS n"},
                           headers={"Cookie": f"other=1; searchtrace-view-{port}={view.token}"})
    assert by_cookie.status_code == 200 and by_cookie.json()["rows"] == [[42]], by_cookie.text
    assert "set-cookie" not in by_cookie.headers


def test_sandbox_serve_and_the_view_cli_mount_the_guard(tmp_path: Path) -> None:
    """The command-line servers themselves (not only the apps): `sandbox serve --port 0` refuses a foreign Host."""
    proc = subprocess.Popen([sys.executable, "-c", "from searchtrace.cli import main; main()", "sandbox", "serve",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "sandbox listening on http://127.0.0.1:PORT …", once every port listens
        printed = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        assert printed, (first, proc.poll() is not None and proc.communicate()[1])
        port = int(printed[1])
        own_url = next(line.split("=", 1)[1].strip() for line in proc.stdout if "SEARCHTRACE_TAVILY_BASE_URL=" in line)
        srv = Server("sandbox", port, "/", "/tavily/search", {"query": "x", "api_key": "sandbox"}, "", SANDBOX_MAX)
        assert request(srv).status == 200
        refused(request(srv, host=f"rebind.example:{port}"), 421)
        refused(post(srv, ctype="text/plain"), 415)
        reader = request(srv, "POST", "/jina/", headers={"Content-Type": "application/x-www-form-urlencoded"},
                         body=b"url=https%3A%2F%2Falmanac-central.example%2Fentries%2Felmwyn-athletic")
        assert reader.status == 200 and reader.body.startswith(b"Title: ")  # the Reader's form, as the real one takes
        refused(request(srv, "POST", "/jina/", headers={"Content-Type": "text/plain"}, body=b"url=x"), 415)
        own = httpx.post(f"{own_url}/search", json={"query": "x", "api_key": "sandbox"})  # a provider on its own port
        assert own.status_code == 200
        refused(httpx.post(f"{own_url}/search", json={"query": "x"}, headers={"Host": "evil.example"}), 421)
        refused(httpx.post(f"{own_url}/search", content=b'{"query": "x"}', headers={"Content-Type": "text/plain"}), 415)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


_LEAVES = ["[{", '\\"]', "\\", '"}"', "x", 1, None, "\\\\[", "]]]]", [], {}]


def _nested(rng: random.Random, depth: int) -> tuple[Any, int]:
    """A random JSON value (strings full of brackets, quotes and backslashes) and its nesting depth: one chain
    `depth` deep with leaves and shallow branches beside it."""
    if depth == 0:
        return rng.choice(_LEAVES[:-2]), 0
    chain, below = _nested(rng, depth - 1)
    items = [chain, *(rng.choice(_LEAVES) for _ in range(rng.randint(0, 2)))]
    rng.shuffle(items)
    inner = max(below + 1, *(1 + (isinstance(v, list | dict)) for v in items))
    if rng.random() < 0.5:
        return items, inner
    return {f"k{i}[": v for i, v in enumerate(items)}, inner


def test_the_depth_scan_agrees_with_the_parsed_depth() -> None:
    rng = random.Random(21)
    for _ in range(3000):
        value, depth = _nested(rng, rng.randint(1, 80))
        text = json.dumps(value, indent=rng.choice([None, 1])).encode()
        for limit in {max(depth - 1, 0), depth, 64}:
            assert json_too_deep(text, limit) == (depth > limit), (text[:200], depth, limit)


def test_the_depth_scan_ignores_brackets_in_strings() -> None:
    assert not json_too_deep(json.dumps({"s": "[" * 500 + "{" * 500, "t": '\\"[[[['}).encode())
    assert json_too_deep(("[" * 65 + "]" * 65).encode()) and not json_too_deep(("[" * 64 + "]" * 64).encode())
    assert not json_too_deep(b'"unterminated \\" [[[')  # an escaped quote does not end the string
