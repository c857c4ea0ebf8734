"""Hosted search layers (docs/how-to/hosted.md): the official clients ask `sandbox serve` with OpenAI's web_search,
Claude's web_search and web_fetch and Gemini's google_search (and Perplexity's Agent API over HTTP); each reply's
sources become ranked search.result events with the surface its caller received."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from searchtrace.adapters._hosted import read_hosted, resolve_redirects
from searchtrace.adapters.sandbox._hosted import seal, unseal
from searchtrace.engine import Builder
from searchtrace.store import FetchCompleted, SearchCalled, SearchCompleted, SearchResult, digest
from tests.adapters.test_official_clients import ANSWER, QUESTION, env  # noqa: F401  (the `sandbox serve` fixture)

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)


def recorded(api: str, body: bytes, resolve: Any = None) -> tuple[list[Any], dict[str, bytes], Any]:
    """The events (and blobs) a hosted reply records through the trajectory builder, and the turn read."""
    turn = read_hosted(api, body)
    assert turn is not None and not turn.empty
    if resolve is not None:
        turn = resolve_redirects(turn, resolve)
    b = Builder("t1")
    b.hosted(turn)
    b.final("FINAL ANSWER: x", citations=turn.citations)
    payloads, blobs = b.take()
    return payloads, {digest(x): x for x in blobs}, turn


def results(payloads: list[Any]) -> list[SearchResult]:
    return [p for p in payloads if isinstance(p, SearchResult)]


def test_openai_web_search_gives_urls_ranked_and_a_cited_title(env: dict[str, str],  # noqa: F811
                                                              request: pytest.FixtureRequest) -> None:
    from openai import OpenAI
    client = OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox")
    request.addfinalizer(client.close)
    resp = client.responses.create(model="sandbox-agent", input=QUESTION, tools=[{"type": "web_search"}],
                                   include=["web_search_call.action.sources"])
    assert resp.output[0].type == "web_search_call" and ANSWER in resp.output_text
    payloads, _, turn = recorded("responses", resp.model_dump_json().encode())
    got = results(payloads)
    assert [r.rank for r in got] == list(range(1, len(got) + 1)) and len(got) == 5
    assert all(r.snippet == "" and r.model_saw_more for r in got)
    cited = {c.url for c in turn.citations}
    assert len(cited) == 1
    assert all(r.surface == (["url", "title"] if r.url in cited else ["url"]) for r in got)
    assert isinstance(payloads[0], SearchCalled) and payloads[0].provider == "openai_web_search"
    final = payloads[-1]
    assert final.citations[0].item == got[[r.url for r in got].index(next(iter(cited)))].url_normalized
    # without the include, the call says it searched and names no source
    bare = client.responses.create(model="sandbox-agent", input=QUESTION, tools=[{"type": "web_search"}])
    assert "sources" not in bare.output[0].model_dump()["action"] or not bare.output[0].model_dump()["action"]["sources"]


def test_claude_web_search_and_fetch_give_titles_opaque_content_and_the_page(env: dict[str, str],  # noqa: F811
                                                                             request: pytest.FixtureRequest) -> None:
    from anthropic import Anthropic
    client = Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="sandbox")
    request.addfinalizer(client.close)
    msg = client.messages.create(
        model="sandbox-agent", max_tokens=1024, messages=[{"role": "user", "content": QUESTION}],
        tools=[{"type": "web_search_20250305", "name": "web_search"},
               {"type": "web_fetch_20250910", "name": "web_fetch"}])  # type: ignore[list-item]
    kinds = [b.type for b in msg.content]
    assert kinds[:4] == ["server_tool_use", "web_search_tool_result", "server_tool_use", "web_fetch_tool_result"]
    payloads, blobs, turn = recorded("anthropic", msg.model_dump_json().encode())
    got = results(payloads)
    assert turn.layer == "anthropic_web_fetch" and len(got) == 5 and [r.rank for r in got] == [1, 2, 3, 4, 5]
    assert all(r.snippet == "" and r.model_saw_more and r.surface[:2] == ["url", "title"] for r in got)
    assert [r.surface for r in got if "cited_text" in r.surface]  # the cited result carries its passage
    opaque = blobs[got[0].metadata["opaque_blob"]].decode()
    assert opaque.startswith("stx1.") and unseal(opaque) is not None and got[0].title not in opaque  # a stand-in
    fetched = [p for p in payloads if isinstance(p, FetchCompleted)]
    assert len(fetched) == 1 and fetched[0].status == "ok" and fetched[0].doc_id == got[0].doc_id
    assert ANSWER in blobs[fetched[0].content_digest].decode() or fetched[0].n_bytes > 0  # type: ignore[index]
    assert seal("x") != "x" and unseal(seal("abc")) == "abc"
    with client.messages.stream(  # streamed: the results arrive whole, the citations as deltas; the same message
            model="sandbox-agent", max_tokens=1024, messages=[{"role": "user", "content": QUESTION}],
            tools=[{"type": "web_search_20250305", "name": "web_search"},
                   {"type": "web_fetch_20250910", "name": "web_fetch"}]) as s:  # type: ignore[list-item]
        streamed = s.get_final_message()
    assert [b.type for b in streamed.content] == kinds
    again, _, turn_again = recorded("anthropic", streamed.model_dump_json().encode())
    assert [(r.url, r.surface) for r in results(again)] == [(r.url, r.surface) for r in got]
    assert turn_again.citations == turn.citations


def test_gemini_grounding_redirects_resolve_to_the_page(env: dict[str, str]) -> None:  # noqa: F811
    from google import genai
    from google.genai import types as genai_types
    client = genai.Client(api_key="sandbox", http_options=genai_types.HttpOptions(base_url=env["GOOGLE_GEMINI_BASE_URL"]))
    config = genai_types.GenerateContentConfig(tools=[genai_types.Tool(google_search=genai_types.GoogleSearch())])
    resp = client.models.generate_content(model="sandbox-agent", contents=QUESTION, config=config)
    meta = resp.candidates[0].grounding_metadata  # type: ignore[index]
    assert meta is not None and meta.web_search_queries == [QUESTION] and meta.grounding_chunks
    body = msgspec.json.encode(resp.model_dump(mode="json", by_alias=True, exclude_none=True))

    def follow(uri: str) -> str | None:
        r = httpx.get(uri, follow_redirects=False, timeout=HANG_S)
        return r.headers.get("location") if r.is_redirect else None

    payloads, _, turn = recorded("gemini", body, follow)
    got = results(payloads)
    assert len(got) == 5 and all("grounding-api-redirect" in r.metadata["redirect"] for r in got)
    assert all("grounding-api-redirect" not in r.url and r.surface == ["url", "title"] for r in got)
    assert all(r.title == r.domain for r in got)  # the domain as title, as Google gives it
    assert turn.citations and all("grounding-api-redirect" not in c.url for c in turn.citations)
    final = payloads[-1]
    assert final.citations[0].item in {r.url_normalized for r in got}


def test_perplexity_agent_gives_snippets_and_a_fetched_page(env: dict[str, str]) -> None:  # noqa: F811
    r = httpx.post(env["SEARCHTRACE_PERPLEXITY_BASE_URL"].rstrip("/") + "/v1/responses",
                   headers={"Authorization": "Bearer sandbox"},
                   json={"model": "sandbox-agent", "input": QUESTION,
                         "tools": [{"type": "web_search"}, {"type": "fetch_url"}]}, timeout=HANG_S)
    assert r.status_code == 200, r.text
    payloads, _, _ = recorded("perplexity", r.content)
    got = results(payloads)
    assert len(got) == 5 and all(r.snippet and r.surface == ["url", "title", "snippet"] for r in got)
    assert not any(r.model_saw_more for r in got)
    assert [p.status for p in payloads if isinstance(p, FetchCompleted)] == ["ok"]
    assert [p.n_results for p in payloads if isinstance(p, SearchCompleted)] == [5]
