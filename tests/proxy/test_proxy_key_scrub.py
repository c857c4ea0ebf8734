"""docs/concepts/security.md, keys in the proxy: a hostile upstream on 127.0.0.1 echoes every key it can see (the proxy's, every
configured one, and whatever the agent sent in a header, a parameter or a nested JSON field) into titles,
snippets, pages, chat text, tool calls, a split SSE stream and a response header. No key may reach an event,
a blob, a reply relayed to the agent, the stored params or the proxy's log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import searchtrace.engine.proxy._routes as routes
from searchtrace.adapters.sandbox import running
from searchtrace.store import ModelResponded, SearchCalled, SearchResult
from tests.proxy.support import proxy, streams, write_questions
from tests.reliability.test_security import store_texts

KEYS = {"TAVILY_API_KEY": "tvly-CONF-echo-5a1b2c3d", "BRAVE_API_KEY": "BRAVE-CONF-echo-6e7f8a9b",
        "OPENAI_API_KEY": "sk-CONF-echo-0c1d2e3f", "JINA_API_KEY": "jina-CONF-echo-4a5b6c7d",
        "FIRECRAWL_API_KEY": "fc-CONF-unused-8e9f0a1b"}  # configured, never sent: a reply may still echo it
AGENT = {"bearer": "agent-bearer-11aa22bb", "x_api_key": "agent-xapikey-33cc44dd", "api_key": "agent-apikey-55ee66ff",
         "apikey": "agent-apikey2-77aa88bb", "token": "agent-token-99cc00dd", "access_token": "agent-access-12ab34cd",
         "auth_nested": "agent-nested-56ef78ab", "query_token": "agent-qtoken-90cd12ef",
         "brave_header": "agent-subscr-34ab56cd", "cookie": "agent-cookie-78ef90ab"}
ALL = [*KEYS.values(), *AGENT.values()]


def _echo(request: Request, body: bytes) -> str:
    """Everything the request carried, plus every configured key (an upstream that knows them all)."""
    seen = [f"{k}={v}" for k, v in request.headers.items()] + [f"{k}={v}" for k, v in request.query_params.items()]
    return " ".join([*seen, body.decode("utf-8", "replace"), *KEYS.values()])


RECEIVED: list[str] = []  # what the upstream was sent


async def hostile(request: Request) -> Response:
    body = await request.body()
    echo = _echo(request, body)
    RECEIVED.append(echo)
    path = request.url.path
    headers = {"x-echo": KEYS["OPENAI_API_KEY"]}
    if path.startswith("/tavily/"):
        doc: Any = {"query": echo, "results": [{"url": f"https://echo.test/a?key={KEYS['TAVILY_API_KEY']}",
                                               "title": f"Zebra {echo}", "content": f"Snippet {echo}", "score": 0.5}]}
    elif path.startswith("/brave/"):
        doc = {"web": {"results": [{"url": "https://echo.test/b", "title": f"Zebra {echo}",
                                    "description": f"Snippet {echo}", "extra_snippets": [echo]}]}}
    elif path.startswith("/jina/"):
        return Response(f"Title: echo\n\nMarkdown Content:\n# Page\n\n{echo}\n", headers=headers,
                        media_type="text/plain")
    elif json.loads(body or b"{}").get("stream"):
        text = f"the answer {echo} FINAL ANSWER: {KEYS['OPENAI_API_KEY']}"

        async def chunks() -> Any:  # every key cut in two across consecutive chunks
            line = "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"
            cuts = sorted({line.find(k) + len(k) // 2 for k in ALL if k in line})
            start = 0
            for cut in [*cuts, len(line)]:
                yield line[start:cut].encode()
                start = cut
            yield b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'

        return StreamingResponse(chunks(), headers=headers, media_type="text/event-stream")
    else:
        doc = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": f"I saw {echo}",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "search_web", "arguments": json.dumps({"query": echo})}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}}
    return Response(json.dumps(doc), headers=headers, media_type="application/json")


def test_no_key_reaches_an_event_a_blob_a_relayed_reply_or_the_params(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "scrub.duckdb"
    app = Starlette(routes=[Route("/{path:path}", hostile, methods=["GET", "POST"])])
    relayed: list[tuple[str, bytes]] = []
    with running(app) as root:
        env = {**KEYS, "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily", "SEARCHTRACE_BRAVE_BASE_URL": f"{root}/brave",
               "SEARCHTRACE_JINA_BASE_URL": f"{root}/jina", "OPENAI_BASE_URL": f"{root}/openai/v1"}
        with proxy(db, qfile, "scrub", upstream="live", env=env) as p, httpx.Client(base_url=p.url, timeout=30) as c:
            base = f"/t/tavily/{qid}"
            agent_headers = {"Authorization": f"Bearer {AGENT['bearer']}", "X-Api-Key": AGENT["x_api_key"],
                             "Cookie": f"session={AGENT['cookie']}"}
            calls = [
                c.post(f"{base}/tavily/search", headers=agent_headers, json={
                    "query": "zebra", "max_results": 3, "api_key": AGENT["api_key"], "apikey": AGENT["apikey"],
                    "token": AGENT["token"], "access_token": AGENT["access_token"],
                    "auth": {"api_key": AGENT["auth_nested"], "note": {"deep": AGENT["auth_nested"]}}}),
                c.get(f"/t/brave/{qid}/brave/res/v1/web/search",
                      params={"q": "zebra", "count": "3", "token": AGENT["query_token"], "apiKey": AGENT["query_token"]},
                      headers={"X-Subscription-Token": AGENT["brave_header"]}),
                c.get(f"{base}/jina/https://echo.test/a", headers=agent_headers),
                c.post(f"{base}/openai/v1/chat/completions", headers=agent_headers,
                       json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
                c.post(f"{base}/openai/v1/chat/completions", headers=agent_headers,
                       json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
                c.post(f"{base}/final", headers=agent_headers,
                       json={"answer": f"done, the key was {KEYS['OPENAI_API_KEY']}", "token": AGENT["token"]}),
            ]
            for r in calls:
                assert r.status_code == 200, r.text
                relayed.append((str(r.url), r.content + json.dumps(dict(r.headers)).encode()))
            assert p.stop() == 0
            log_text = p.log.read_bytes()
    # the agent's credentials were not forwarded (the proxy sends its own key): top-level key fields and headers
    assert len(RECEIVED) == 5 and not [k for k in AGENT.values() for r in RECEIVED if k in r]
    # the echo went through: the relayed replies and the events carry the scrubbed marks, not nothing
    assert all(b"***" in body for _, body in relayed[:5])
    events = [pl for evs in streams(db).values() for _, _, pl in evs]
    titles = [e.title for e in events if isinstance(e, SearchResult)]
    assert len(titles) == 2 and all(t.startswith("Zebra") and "***" in t for t in titles)
    texts = [e.text or "" for e in events if isinstance(e, ModelResponded)]
    assert len(texts) == 2 and all("***" in t for t in texts)
    # stored params: no key-named field at any depth, the ordinary ones kept
    params = [e.params for e in events if isinstance(e, SearchCalled)]
    assert params[0] == {"max_results": 3} and params[1] == {"count": "3"}, params
    # nothing anywhere holds a key: relayed bodies and headers, every event column, every blob, the proxy's log
    texts_scanned = [*relayed, *store_texts(db), ("proxy log", log_text)]
    assert len(texts_scanned) > 15
    found = [f"{label}: {k}" for label, data in texts_scanned for k in ALL if k.encode() in data]
    assert not found, found[:5]


def test_the_stream_scrubber_finds_a_key_cut_at_every_point() -> None:
    import anyio

    from searchtrace.adapters import Secret

    key = "sk-split-0123456789"
    text = f"before {key} middle {key}{key} after".encode()

    async def pieces(cuts: list[int]) -> Any:
        start = 0
        for cut in [*cuts, len(text)]:
            yield text[start:cut]
            start = cut

    async def relay(cuts: list[int]) -> bytes:
        return b"".join([c async for c in routes.scrub_stream(pieces(cuts), [Secret(key), Secret("other-key-1")])])

    for a in range(1, len(text)):
        got = anyio.run(relay, [a])
        assert got == b"before *** middle ****** after", (a, got)
    got = anyio.run(relay, list(range(1, len(text))))  # one byte at a time
    assert got == b"before *** middle ****** after"


def test_key_names_and_the_values_they_hold() -> None:
    for name in ("api_key", "apiKey", "APIKEY", "token", "access_token", "auth", "x-api-key", "client_secret",
                 "Password", "key"):
        assert routes.is_key_name(name), name
    for name in ("query", "max_tokens", "max_results", "tokens", "keyword", "monkey", "author"):
        assert not routes.is_key_name(name), name
    doc = {"q": "x", "auth": {"user": "somebody-long", "inner": [{"k": "nested-value-1"}]}, "list": [{"token": "t-value-22"}]}
    assert routes.without_keys(doc) == {"q": "x", "list": [{}]}
    got = {s.reveal() for s in routes.request_secrets({"authorization": "Bearer agent-long-key"}, [("apikey", "query-key-1")],
                                                       doc, own=None)}
    assert {"agent-long-key", "Bearer agent-long-key", "query-key-1", "somebody-long", "nested-value-1",
            "t-value-22"} <= got
