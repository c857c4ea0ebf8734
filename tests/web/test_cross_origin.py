"""A hostile page in a real Chromium (Debian's, through Playwright), served by a second local server on another
port, while the user has `view` open (its cookie set) and a proxy records: it reads nothing from `view` and makes
the proxy call nothing upstream; a DNS-rebound name (foreign Host) gets 421 (docs/concepts/security.md)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from searchtrace.adapters.sandbox import free_port
from tests.proxy.support import write_questions
from tests.web.servers import View

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run",
        # two names that resolve to 127.0.0.1, as an attacker's DNS makes them: a foreign site, and a rebound name
        "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebind.test 127.0.0.1"]

pytest.importorskip("playwright.sync_api", reason="playwright is installed by `make` (the dev extra)")
if not Path(CHROMIUM).exists():
    pytest.skip("no chromium here: `apt-get install chromium` (the Makefile does it as root)", allow_module_level=True)
from playwright import sync_api as playwright_sync  # noqa: E402

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

# What the page tries: read the API (cors and no-cors, with the user's cookie), POST SQL as text/plain and as a
# form, preflighted JSON; make the proxy search (text/plain POST, no-cors GET, an <img>, a form).
ATTACK = """<!doctype html><meta charset="utf-8"><title>hostile</title><body><script>
const V = %(view)s, P = %(proxy)s, Q = %(qid)s, out = {};
async function attempt(name, fn) { try { out[name] = String(await fn()); } catch (e) { out[name] = "error: " + e; } }
async function seen(r) { return r.type + ":" + r.status + ":" + (await r.text()); }
function form(action, body) {
  return new Promise((done) => {
    const frame = document.createElement("iframe"); frame.name = "f" + Math.random(); document.body.append(frame);
    const f = document.createElement("form"); f.method = "POST"; f.action = action; f.target = frame.name;
    f.enctype = "text/plain"; const i = document.createElement("input"); i.name = body; i.value = '"}';
    f.append(i); document.body.append(f); frame.onload = () => done("sent"); f.submit();
    setTimeout(() => done("timeout"), 5000);
  });
}
(async () => {
  const plain = {method: "POST", mode: "no-cors", credentials: "include", headers: {"Content-Type": "text/plain"}};
  await attempt("view runs (cors)", async () => seen(await fetch(V + "/api/runs", {credentials: "include"})));
  await attempt("view runs (no-cors)", async () => seen(await fetch(V + "/api/runs", {mode: "no-cors", credentials: "include"})));
  await attempt("view page (no-cors)", async () => seen(await fetch(V + "/", {mode: "no-cors", credentials: "include"})));
  await attempt("view sql text/plain", async () => seen(await fetch(V + "/api/sql", {...plain, body: '{"sql": "SELECT 42"}'})));
  await attempt("view sql json (cors)", async () => seen(await fetch(V + "/api/sql", {method: "POST", credentials: "include",
    headers: {"Content-Type": "application/json"}, body: '{"sql": "SELECT 42"}'})));
  await attempt("proxy search text/plain", async () => seen(await fetch(P + "/t/tavily/" + Q + "/tavily/search",
    {...plain, body: '{"query": "Elmwyn Athletic"}'})));
  await attempt("proxy search json (cors)", async () => seen(await fetch(P + "/t/tavily/" + Q + "/tavily/search",
    {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"query": "Elmwyn Athletic"}'})));
  await attempt("proxy brave (no-cors)", async () => seen(await fetch(P + "/t/brave/" + Q + "/brave/res/v1/web/search?q=Elmwyn",
    {mode: "no-cors"})));
  await attempt("proxy brave <img>", () => new Promise((done) => { const im = new Image();
    im.onload = () => done("loaded"); im.onerror = () => done("failed");
    im.src = P + "/t/brave/" + Q + "/brave/res/v1/web/search?q=Elmwyn+img"; }));
  await attempt("view sql form", () => form(V + "/api/sql", '{"sql": "SELECT 42", "x": "'));
  await attempt("proxy search form", () => form(P + "/t/tavily/" + Q + "/tavily/search", '{"query": "Elmwyn", "x": "'));
  window.done = out;
})();
</script>"""


class _Page(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass


@pytest.fixture(scope="module")
def attacker(view: View, proxy_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A second tiny HTTP server on another port serving the hostile page; yields its port and the qid it uses."""
    qid = write_questions(tmp_path_factory.mktemp("xo") / "q.jsonl", 1)[0]["qid"]
    handler = type("Hostile", (_Page,), {"page": (ATTACK % {"view": json.dumps(view.root), "proxy": json.dumps(proxy_url),
                                                            "qid": json.dumps(qid)}).encode()})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1]), qid
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.mark.parametrize("site", ["127.0.0.1", "attacker.test"])  # the same site as the servers (another port), and not
def test_a_page_of_another_origin_reads_nothing_and_spends_nothing(
        site: str, view: View, proxy_url: str, upstream: tuple[str, Any], attacker: tuple[int, str], browser: Any) -> None:
    _, totals = upstream
    port, qid = attacker
    before = totals.copy()
    context = browser.new_context()
    own = context.new_page()  # the user's own tab on the printed URL: the cookie is set
    assert own.goto(f"{view.root}/?token={view.token}").status == 200
    assert any(c["name"].startswith("searchtrace-view-") for c in context.cookies())
    page = context.new_page()  # the hostile page, in another tab of the same browser
    answers: list[tuple[str, int]] = []
    page.on("response", lambda r: answers.append((r.url, r.status)) if r.url.startswith((view.root, proxy_url)) else None)
    page.goto(f"http://{site}:{port}/")
    page.wait_for_function("window.done !== undefined", timeout=30_000)
    results: dict[str, str] = page.evaluate("window.done")
    context.close()
    assert len(results) == 11, results
    for name, text in results.items():  # nothing of the servers' answers reached the page
        assert "run_id" not in text and "42" not in text and "results" not in text, (name, text)
        assert text.startswith(("error:", "opaque:0:", "sent", "failed", "timeout")), (name, text)
    assert all(status in (403, 415, 421) for _, status in answers), answers  # each refused by the guard
    if site == "127.0.0.1":
        assert len(answers) >= 4, answers  # the requests did arrive (and were refused), not only blocked by the browser
    assert totals == before  # the proxy forwarded nothing upstream (the module's sandbox starts at zero)
    # the same search sent the proxy's way by a client (not a page) does reach upstream: the count can move
    assert httpx.post(f"{proxy_url}/t/tavily/{qid}/tavily/search", json={"query": "Elmwyn Athletic"}, timeout=HANG_S).status_code == 200
    assert totals["tavily"] == before["tavily"] + 1


def test_a_rebound_name_gets_421(view: View, proxy_url: str, upstream: tuple[str, Any], browser: Any) -> None:
    """DNS rebinding: rebind.test resolves to 127.0.0.1, so the browser treats the servers as rebind.test's own."""
    page = browser.new_page()
    for root in (view.root, proxy_url, upstream[0]):
        port = root.rsplit(":", 1)[1]
        reply = page.goto(f"http://rebind.test:{port}/?token={view.token}")
        assert reply.status == 421, root
        assert "is not this server's" in json.loads(reply.body())["error"]
        assert page.evaluate("fetch('/api/runs').then(r => r.status)") == 421
    page.close()
