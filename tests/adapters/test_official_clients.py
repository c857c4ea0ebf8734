"""The official Python clients (dev dependencies) against `searchtrace sandbox serve` on 127.0.0.1: each gets
parsed results from the base URL the command prints for it (its own absolute paths work under that URL)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from exa_py import Exa
from firecrawl import AsyncFirecrawl, Firecrawl
from openai import AsyncOpenAI, OpenAI
from tavily import TavilyClient

from searchtrace.adapters.sandbox import default_world
from searchtrace.engine import TOOL_SCHEMAS

QUESTION = "What is the founding year of Elmwyn Athletic?"
GOLD = "https://almanac-central.example/entries/elmwyn-athletic"
ANSWER = next(q.answer for q in default_world().questions if q.question == QUESTION)


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    """`searchtrace sandbox serve --port 0` in a subprocess; the `export NAME=VALUE` lines it printed."""
    cmd = [sys.executable, "-c", "from searchtrace.cli import main; main()", "sandbox", "serve", "--port", "0"]
    exports: dict[str, str] = {}
    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc:
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("export "):
                    name, _, value = line[len("export "):].strip().partition("=")
                    exports[name] = value
                if line.startswith("#   openai:"):  # the last example: everything is listening
                    break
            assert exports, "".join(lines)
            exports["_examples"] = "".join(line for line in lines if line.startswith("#   "))
            yield exports
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def test_serve_prints_every_base_url_and_an_example(env: dict[str, str]) -> None:
    for name in ("BRAVE", "TAVILY", "FIRECRAWL", "EXA", "PERPLEXITY", "SERPAPI", "SERPER", "PARALLEL", "YOUCOM",
                 "LINKUP", "JINA_SEARCH", "JINA"):
        assert env[f"SEARCHTRACE_{name}_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["OPENAI_BASE_URL"].endswith("/v1")
    assert len({v for k, v in env.items() if k.endswith("_BASE_URL")}) == 13  # one port each
    for client in ("OpenAI(base_url=", "TavilyClient(", "Firecrawl(", "Exa("):
        assert client in env["_examples"]


def test_openai_plain_and_streamed(env: dict[str, str], request: pytest.FixtureRequest) -> None:
    client = OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox")
    request.addfinalizer(client.close)
    messages = [{"role": "user", "content": QUESTION}]
    plain = client.chat.completions.create(model="sandbox-agent", messages=messages, tools=TOOL_SCHEMAS)  # type: ignore[arg-type]
    call = plain.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "search_web" and QUESTION in call.function.arguments  # type: ignore[union-attr]
    stream = client.chat.completions.create(model="sandbox-agent", messages=messages, tools=TOOL_SCHEMAS,  # type: ignore[arg-type]
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert len(chunks) > 3
    args = "".join(tc.function.arguments or "" for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []
                   if tc.function)
    assert args == call.function.arguments  # type: ignore[union-attr]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == plain.usage.total_tokens  # type: ignore[union-attr]
    judge = client.chat.completions.create(model="sandbox-judge", messages=messages, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in judge if c.choices)
    assert '"supports_gold"' in text


def test_openai_async_streamed(env: dict[str, str]) -> None:
    async def run() -> str:
        async with AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox") as client:
            stream = await client.chat.completions.create(model="sandbox-judge", stream=True,
                                                          messages=[{"role": "user", "content": QUESTION}])
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert '"supports_gold"' in asyncio.run(run())


def test_tavily_with_answer(env: dict[str, str]) -> None:
    client = TavilyClient(api_key="tvly-sandbox", api_base_url=env["SEARCHTRACE_TAVILY_BASE_URL"])
    out = client.search(QUESTION, max_results=5, include_answer=True, include_favicon=True, include_usage=True,
                        include_images=True)
    assert len(out["results"]) == 5 and out["results"][0]["url"].startswith(GOLD)
    assert isinstance(out["answer"], str) and ANSWER in out["answer"]
    assert all(r["favicon"].startswith("https://") for r in out["results"]) and out["usage"] == {"credits": 1}
    assert out["images"] and all(isinstance(u, str) for u in out["images"])
    assert client.search(QUESTION, max_results=5, include_answer=True)["answer"] == out["answer"]  # deterministic


# AsyncFirecrawl has no public close: its connection is left to the garbage collector
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning", "ignore::ResourceWarning")
def test_firecrawl_sync_and_async(env: dict[str, str]) -> None:
    url = env["SEARCHTRACE_FIRECRAWL_BASE_URL"]
    data = Firecrawl(api_key="fc-sandbox", api_url=url).search(QUESTION, limit=5)
    assert data.web and len(data.web) == 5 and data.web[0].url.rstrip("/") == GOLD  # type: ignore[union-attr]
    adata = asyncio.run(AsyncFirecrawl(api_key="fc-sandbox", api_url=url).search(QUESTION, limit=5))
    gc.collect()
    assert [r.url for r in adata.web or []] == [r.url for r in data.web]  # type: ignore[union-attr]


def test_exa_default_and_highlights(env: dict[str, str]) -> None:
    exa = Exa(api_key="sandbox", base_url=env["SEARCHTRACE_EXA_BASE_URL"])
    default = exa.search(QUESTION, num_results=5)  # the SDK asks for up to 10,000 characters of page text
    assert len(default.results) == 5 and GOLD in [r.url for r in default.results]
    assert all(r.text for r in default.results)
    lean = exa.search(QUESTION, num_results=5, contents={"highlights": True})
    assert all(r.highlights and not r.text for r in lean.results)


def test_reader_post_form_and_jina_search(env: dict[str, str]) -> None:
    with httpx.Client(timeout=10) as c:
        page = c.post(env["SEARCHTRACE_JINA_BASE_URL"] + "/", json={"url": GOLD}, headers={"Accept": "application/json"})
        assert page.status_code == 200 and page.json()["data"]["url"] == GOLD and ANSWER in page.json()["data"]["content"]
        form = c.post(env["SEARCHTRACE_JINA_BASE_URL"] + "/", data={"url": GOLD})
        assert form.status_code == 200 and form.text.startswith("Title: ")
        found = c.get(env["SEARCHTRACE_JINA_SEARCH_BASE_URL"] + "/", params={"q": QUESTION},
                      headers={"Authorization": "Bearer sandbox", "Accept": "application/json"})
        assert found.status_code == 200 and found.json()["data"][0]["content"]
