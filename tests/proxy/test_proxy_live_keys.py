"""`proxy --upstream live` with fake keys against a local fixture server: keys go upstream, nowhere else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters.sandbox import create_app, running
from searchtrace.store import EventLog, SearchCompleted
from tests.proxy.support import proxy, run_example, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

KEYS = {"TAVILY_API_KEY": "tvly-FAKE-upstream-1111", "BRAVE_API_KEY": "BRAVE-FAKE-upstream-2222",
        "OPENAI_API_KEY": "sk-FAKE-upstream-3333", "JINA_API_KEY": "jina-FAKE-upstream-4444"}
CLIENT_KEYS = ("not-a-key", "tvly-not-a-key")


class Recording:
    """ASGI wrapper around the sandbox: keeps every request's path, headers and body; echoes the key on demand."""

    def __init__(self) -> None:
        self.app = create_app()
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append({"path": scope["path"], "query": scope["query_string"].decode(), "headers": headers,
                              "body": body.decode("utf-8", "replace")})
        if b"ECHO-THE-KEY" in body:  # a provider that echoes the key in its error body
            reply = json.dumps({"detail": {"error": f"Unauthorized: key {headers.get('authorization')} is bad"}})
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": reply.encode()})
            return None
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)


def test_live_upstream_gets_the_proxy_keys_and_nothing_stores_them(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 2)
    db = tmp_path / "live.duckdb"
    fixture = Recording()
    with running(fixture) as root:
        env = {**KEYS, "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily", "SEARCHTRACE_BRAVE_BASE_URL": f"{root}/brave",
               "SEARCHTRACE_JINA_BASE_URL": f"{root}/jina", "OPENAI_BASE_URL": f"{root}/openai/v1"}
        with proxy(db, qfile, "live", upstream="live", env=env) as p:
            run_example("openai_tavily_agent.py", p.url, qfile, tmp_path / "seen_t.jsonl")
            run_example("plain_agent.py", p.url, qfile, tmp_path / "seen_b.jsonl")
            r = httpx.post(f"{p.url}/t/tavily/{rows[0]['qid']}~x/tavily/search", json={"query": "x"}, timeout=HANG_S)
            assert r.status_code == 404
            echo = httpx.post(f"{p.url}/t/tavily/{rows[0]['qid']}/tavily/search",
                              json={"query": "ECHO-THE-KEY", "api_key": "tvly-not-a-key"},
                              headers={"Authorization": "Bearer not-a-key", "X-Searchtrace-Epoch": "2"}, timeout=HANG_S)
            assert echo.status_code == 401
            assert p.stop() == 0
            log_text = p.log.read_bytes()
    by_route: dict[str, list[dict[str, Any]]] = {}
    for req in fixture.requests:
        by_route.setdefault(req["path"].split("/")[1], []).append(req)
    assert {"tavily", "brave", "jina", "openai"} <= set(by_route)
    expect = {"tavily": ("authorization", f"Bearer {KEYS['TAVILY_API_KEY']}"),
              "brave": ("x-subscription-token", KEYS["BRAVE_API_KEY"]),
              "jina": ("authorization", f"Bearer {KEYS['JINA_API_KEY']}"),
              "openai": ("authorization", f"Bearer {KEYS['OPENAI_API_KEY']}")}
    for route, (header, value) in expect.items():
        assert all(r["headers"].get(header) == value for r in by_route[route]), route
    for req in fixture.requests:  # the client's own key never went upstream, in a header, the query or the body
        blob = json.dumps(req)
        assert not any(k in blob for k in CLIENT_KEYS), blob[:300]
    # the echoed key was recorded scrubbed
    echoed = [p for evs in streams(db).values() for _, _, p in evs if isinstance(p, SearchCompleted) and p.status != "ok"]
    assert echoed and echoed[0].http_status == 401 and "***" in (echoed[0].error or "")
    # nothing written holds a key: events, blobs (decompressed), the raw file, the proxy's log
    secrets = [*KEYS.values(), *CLIENT_KEYS]
    log = EventLog(db, read_only=True)
    try:
        cur = log.cursor()
        payloads = " ".join(str(r[0]) for r in cur.execute("SELECT payload FROM events").fetchall())
        digests = [str(r[0]) for r in cur.execute("SELECT sha256 FROM blobs").fetchall()]
        cur.close()
        blobs = [log.get_blob(d) for d in digests]
    finally:
        log.close()
    assert len(blobs) > 10 and "search.result" in payloads
    files = [db.read_bytes(), log_text] + [f.read_bytes() for f in tmp_path.glob("live.duckdb*")]
    for s in secrets:
        assert s not in payloads
        assert not any(s.encode() in b for b in blobs + files), s
