"""Each sandbox route answers in its provider's real wire format (checked against the research fixtures)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from searchtrace.adapters.sandbox import base_urls, default_world
from searchtrace.engine import TOOL_SCHEMAS
from tests.adapters.sandbox.harness import HEADERS, ROOT, app_client
from tests.adapters.support import FIXTURES

B = base_urls(ROOT)
Q = default_world().questions[0].question


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def keys_ok(got: dict[str, Any], want: dict[str, Any], optional: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Every key of the fixture is present with the same JSON type (except documented-optional ones)."""
    for k, v in want.items():
        if k in optional or k.startswith("_"):
            continue
        assert k in got, f"missing {k}"
        if v is not None and got[k] is not None:
            assert type(got[k]) is type(v) or {type(got[k]), type(v)} <= {int, float}, (k, got[k], v)


@pytest.mark.anyio
async def test_brave_shape_and_count(client: httpx.AsyncClient) -> None:
    r = await client.get(f"{B['brave']}/res/v1/web/search", params={"q": Q, "count": 4, "extra_snippets": "true"},
                         headers=HEADERS["brave"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body, want = r.json(), fixture("brave_web_search_ok.json")
    keys_ok(body, want)
    keys_ok(body["query"], want["query"])
    keys_ok(body["web"], want["web"])
    results = body["web"]["results"]
    assert len(results) == 4
    for res in results:
        keys_ok(res, want["web"]["results"][1], optional={"thumbnail"})
        assert res["type"] == "search_result" and res["meta_url"]["hostname"]
    assert "<strong>" in results[0]["description"]
    assert any(res.get("extra_snippets") for res in results)
    plain = await client.get(f"{B['brave']}/res/v1/web/search",
                             params={"q": Q, "count": 2, "text_decorations": "false", "extra_snippets": "false"},
                             headers=HEADERS["brave"])
    assert all("<strong>" not in x["description"] and "extra_snippets" not in x for x in plain.json()["web"]["results"])
    page2 = await client.get(f"{B['brave']}/res/v1/web/search", params={"q": Q, "count": 2, "offset": 1},
                             headers=HEADERS["brave"])
    assert [x["url"] for x in page2.json()["web"]["results"]] == [x["url"] for x in results[2:4]]


@pytest.mark.anyio
async def test_brave_auth_and_validation(client: httpx.AsyncClient) -> None:
    url = f"{B['brave']}/res/v1/web/search"
    missing = await client.get(url, params={"q": Q})
    assert missing.status_code == 422
    assert missing.json()["error"]["code"] == "VALIDATION"
    assert missing.json()["error"]["meta"]["errors"][0]["loc"] == ["header", "x-subscription-token"]
    bad = await client.get(url, params={"q": Q}, headers={"X-Subscription-Token": "bad-key"})
    assert bad.status_code == 422
    keys_ok(bad.json(), fixture("brave_422_subscription_token_invalid.json"))
    assert bad.json()["error"]["code"] == "SUBSCRIPTION_TOKEN_INVALID"
    empty = await client.get(url, params={"q": " "}, headers=HEADERS["brave"])
    assert empty.status_code == 422 and empty.json()["error"]["meta"]["errors"][0]["loc"] == ["query", "q"]
    too_many = await client.get(url, params={"q": Q, "count": 21}, headers=HEADERS["brave"])
    assert too_many.status_code == 422
    nothing = await client.get(url, params={"q": "zzzqqqxxy"}, headers=HEADERS["brave"])
    assert nothing.status_code == 200 and "web" not in nothing.json()


@pytest.mark.anyio
async def test_tavily_shape_auth_and_max_results(client: httpx.AsyncClient) -> None:
    url = f"{B['tavily']}/search"
    r = await client.post(url, json={"query": Q, "max_results": 3}, headers=HEADERS["tavily"])
    assert r.status_code == 200
    body, want = r.json(), fixture("tavily_search_ok.json")
    keys_ok(body, want, optional={"auto_parameters"})
    assert len(body["results"]) == 3
    for res in body["results"]:
        keys_ok(res, want["results"][0], optional={"favicon"})
        assert 0 < res["score"] <= 1 and res["raw_content"] is None
    in_body = await client.post(url, json={"query": Q, "api_key": "tvly-x", "include_raw_content": True})
    assert in_body.status_code == 200 and in_body.json()["results"][0]["raw_content"].startswith("# ")
    body_wins = await client.post(url, json={"query": Q, "api_key": "bad-placeholder"}, headers=HEADERS["tavily"])
    assert body_wins.status_code == 401 and body_wins.json() == fixture("tavily_401.json")
    none = await client.post(url, json={"query": Q})
    assert none.status_code == 401
    long = await client.post(url, json={"query": "x" * 401}, headers=HEADERS["tavily"])
    assert long.status_code == 400 and long.json() == fixture("tavily_400_query_too_long.json")
    news = await client.post(url, json={"query": Q, "topic": "news"}, headers=HEADERS["tavily"])
    assert all("published_date" in x for x in news.json()["results"]) and len(news.json()["results"]) == 5


@pytest.mark.anyio
async def test_firecrawl_v2_and_v1(client: httpx.AsyncClient) -> None:
    v2 = await client.post(f"{B['firecrawl']}/v2/search", json={"query": Q, "limit": 3, "sources": ["web"]},
                           headers=HEADERS["firecrawl"])
    assert v2.status_code == 200
    want = fixture("firecrawl_v2_search_web_only_ok.json")
    keys_ok(v2.json(), want)
    web = v2.json()["data"]["web"]
    assert [x["position"] for x in web] == [1, 2, 3]
    for item in web:
        keys_ok(item, want["data"]["web"][0])
    v1 = await client.post(f"{B['firecrawl']}/v1/search", json={"query": Q, "limit": 2}, headers=HEADERS["firecrawl"])
    keys_ok(v1.json(), fixture("firecrawl_v1_search_ok.json"))
    assert len(v1.json()["data"]) == 2 and "position" not in v1.json()["data"][0]
    scraped = await client.post(f"{B['firecrawl']}/v1/search",
                                json={"query": Q, "limit": 1, "scrapeOptions": {"formats": ["markdown"]}},
                                headers=HEADERS["firecrawl"])
    keys_ok(scraped.json()["data"][0], fixture("firecrawl_v1_search_scrape_ok.json")["data"][0], optional={"links"})
    strict = await client.post(f"{B['firecrawl']}/v1/search", json={"query": Q, "sources": ["web"]},
                               headers=HEADERS["firecrawl"])
    assert strict.status_code == 400
    keys_ok(strict.json(), fixture("firecrawl_400_bad_request.json"))
    empty = await client.post(f"{B['firecrawl']}/v1/search", json={"query": "zzzqqqxxy"}, headers=HEADERS["firecrawl"])
    assert empty.json() == fixture("firecrawl_v1_search_empty.json")
    for headers, message in [({}, "Unauthorized"), ({"Authorization": "Bearer "}, "Unauthorized: Token missing"),
                             ({"Authorization": "Bearer bad-1"}, "Unauthorized: Invalid token")]:
        r = await client.post(f"{B['firecrawl']}/v2/search", json={"query": Q}, headers=headers)
        assert r.status_code == 401 and r.json() == {"success": False, "error": message}


@pytest.mark.anyio
async def test_jina_text_json_variants_and_errors(client: httpx.AsyncClient) -> None:
    world = default_world()
    page = next(p for p in world.pages if p.kind == "gold")
    variant = "https://" + page.url[8:].capitalize()[:1] + page.url[9:] + "/?utm_source=x"  # host case, slash, utm_
    text = await client.get(f"{B['jina']}/{variant}")
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert text.text.startswith(f"Title: {page.title}\n\nURL Source: {variant}\n\n")
    assert "Markdown Content:\n" + page.body in text.text and int(text.headers["x-usage-tokens"]) > 0
    js = await client.get(f"{B['jina']}/{page.url}", headers={"Accept": "application/json"})
    body, want = js.json(), fixture("jina_reader_ok.json")
    keys_ok(body, want)
    keys_ok(body["data"], want["data"])
    assert body["data"]["content"] == page.body and body["meta"]["usage"]["tokens"] == body["data"]["usage"]["tokens"]
    gone = await client.get(f"{B['jina']}/https://nowhere.invalid/x", headers={"Accept": "application/json"})
    assert gone.status_code == 422
    keys_ok(gone.json(), fixture("jina_422_assertion_failure.json"), optional={"cause"})
    missing = await client.get(f"{B['jina']}/https://wikiverse.example/wiki/No_Such_Page")
    assert missing.status_code == 200 and "Warning: Target URL returned error 404" in missing.text
    bad = await client.get(f"{B['jina']}/{page.url}", headers={"Authorization": "Bearer bad-key"})
    assert bad.status_code == 401 and bad.json()["name"] == "AuthenticationFailedError"
    plain = await client.get(f"{B['jina']}/https://nowhere.invalid/x", headers={"Accept": "text/plain"})
    assert plain.status_code == 422 and plain.text.startswith("AssertionFailureError: Failed to access")


@pytest.mark.anyio
async def test_chat_completion_shape_and_errors(client: httpx.AsyncClient) -> None:
    url = f"{B['openai']}/chat/completions"
    req = {"model": "sandbox-agent", "messages": [{"role": "user", "content": Q}], "tools": TOOL_SCHEMAS}
    r = await client.post(url, json=req, headers=HEADERS["chat"])
    want = fixture("openai_chat_tool_call.json")
    body = r.json()
    keys_ok(body, want)
    keys_ok(body["usage"], want["usage"])
    keys_ok(body["usage"]["prompt_tokens_details"], want["usage"]["prompt_tokens_details"])
    keys_ok(body["usage"]["completion_tokens_details"], want["usage"]["completion_tokens_details"])
    msg = body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "tool_calls" and msg["content"] is None
    call = msg["tool_calls"][0]
    assert call["id"].startswith("call_") and call["type"] == "function"
    assert call["function"]["name"] == "search_web" and json.loads(call["function"]["arguments"]) == {"query": Q}
    u = body["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] > 0
    assert u["completion_tokens_details"]["reasoning_tokens"] < u["completion_tokens"]
    no_key = await client.post(url, json=req)
    assert no_key.status_code == 401 and set(no_key.json()["error"]) == {"message", "type", "param", "code"}
    bad = await client.post(url, json=req, headers={"Authorization": "Bearer bad-sk-secret"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_api_key"
    assert "bad-sk-secret" not in bad.text
    unknown = await client.post(url, json={**req, "model": "gpt-9"}, headers=HEADERS["chat"])
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    broken = await client.post(url, content=b"{not json", headers=HEADERS["chat"])
    assert broken.status_code == 400


@pytest.mark.anyio
async def test_chat_request_rules_like_openai(client: httpx.AsyncClient) -> None:
    url = f"{B['openai']}/chat/completions"
    first = {"model": "sandbox-agent", "messages": [{"role": "user", "content": Q}], "tools": TOOL_SCHEMAS}
    reply = (await client.post(url, json=first, headers=HEADERS["chat"])).json()["choices"][0]["message"]
    call_id = reply["tool_calls"][0]["id"]
    assistant = {"role": "assistant", "content": None, "tool_calls": reply["tool_calls"]}
    unanswered = {**first, "messages": [*first["messages"], assistant]}
    r = await client.post(url, json=unanswered, headers=HEADERS["chat"])
    assert r.status_code == 400 and call_id in r.json()["error"]["message"]
    orphan = {**first, "messages": [*first["messages"], {"role": "tool", "tool_call_id": "call_x", "content": "x"}]}
    assert (await client.post(url, json=orphan, headers=HEADERS["chat"])).status_code == 400
    empty_tools = await client.post(url, json={**first, "tools": []}, headers=HEADERS["chat"])
    assert empty_tools.status_code == 400 and empty_tools.json()["error"]["param"] == "tools"
    named = {**first, "tool_choice": {"type": "function", "function": {"name": "search_web"}}}
    choice = (await client.post(url, json=named, headers=HEADERS["chat"])).json()["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["tool_calls"]  # OpenAI's documented quirk
    no_tools = (await client.post(url, json={**first, "tool_choice": "none"}, headers=HEADERS["chat"])).json()
    assert no_tools["choices"][0]["message"]["content"] and "tool_calls" not in no_tools["choices"][0]["message"]


def test_scores_do_not_depend_on_the_hash_seed() -> None:
    """Rankings sum floats: the raw scores must be bit-identical in processes with different PYTHONHASHSEED."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib\n"
        "from searchtrace.adapters.sandbox import default_world\n"
        "from searchtrace.adapters.sandbox._world import sentences\n"
        "w, h = default_world(), hashlib.sha256()\n"
        "for q in w.questions:\n"
        "    h.update(repr(w.bm25(q.question)).encode() + repr(w.bm25(q.question, 'head')).encode())\n"
        "    h.update(repr([w.passage_score(q.question, s) for s in sentences(w.pages[0].body)]).encode())\n"
        "print(h.hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


@pytest.mark.anyio
async def test_same_requests_give_byte_identical_responses() -> None:
    """Two fresh apps, same request sequence: identical bytes on every route."""
    bodies: list[list[bytes]] = []
    for _ in range(2):
        async with app_client() as c:
            got = [
                (await c.get(f"{B['brave']}/res/v1/web/search", params={"q": Q}, headers=HEADERS["brave"])).content,
                (await c.post(f"{B['tavily']}/search", json={"query": Q}, headers=HEADERS["tavily"])).content,
                (await c.post(f"{B['firecrawl']}/v2/search", json={"query": Q}, headers=HEADERS["firecrawl"])).content,
                (await c.get(f"{B['jina']}/https://wikiverse.example/wiki/X", headers={"Accept": "application/json"})).content,
                (await c.post(f"{B['openai']}/chat/completions", headers=HEADERS["chat"],
                              json={"model": "sandbox-agent", "messages": [{"role": "user", "content": Q}]})).content,
            ]
            bodies.append(got)
    assert bodies[0] == bodies[1]


@pytest.mark.anyio
async def test_counters_per_route_and_trace(client: httpx.AsyncClient) -> None:
    app = client._transport.app  # type: ignore[attr-defined]
    for trace in ("t1", "t1", None):
        headers = {**HEADERS["tavily"], **({"X-Searchtrace-Trace": trace} if trace else {})}
        await client.post(f"{B['tavily']}/search", json={"query": Q}, headers=headers)
    await client.get(f"{B['jina']}/https://wikiverse.example/", headers={"X-Searchtrace-Trace": "t1"})
    assert app.state.counters[("tavily", "t1")] == 2
    assert app.state.counters[("tavily", None)] == 1
    assert app.state.counters[("jina", "t1")] == 1
    assert app.state.totals["tavily"] == 3 and app.state.totals["jina"] == 1
