"""The official Python clients (dev dependencies) against `searchtrace sandbox serve` on 127.0.0.1: each gets
parsed results from the base URL the command prints for it (its own absolute paths work under that URL): the
search providers', OpenAI's, Anthropic's and Google's (google-genai)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from searchtrace.adapters.sandbox import default_world
from searchtrace.engine import TOOL_SCHEMAS

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai import OpenAI

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

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
            proc.wait(timeout=60)  # a hang guard: a loaded server may take seconds to stop


def test_serve_prints_every_base_url_and_an_example(env: dict[str, str]) -> None:
    for name in ("BRAVE", "TAVILY", "FIRECRAWL", "EXA", "PERPLEXITY", "SERPAPI", "SERPER", "PARALLEL", "YOUCOM",
                 "LINKUP", "JINA_SEARCH", "JINA"):
        assert env[f"SEARCHTRACE_{name}_BASE_URL"].startswith("http://127.0.0.1:")
    assert env["OPENAI_BASE_URL"].endswith("/v1")
    # the official SDKs' base URLs, the APIs' own paths below them (no /v1, no /v1beta)
    assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:") and env["ANTHROPIC_BASE_URL"].count("/") == 2
    assert env["GOOGLE_GEMINI_BASE_URL"].startswith("http://127.0.0.1:") and env["GOOGLE_GEMINI_BASE_URL"].count("/") == 2
    assert len({v for k, v in env.items() if k.endswith("_BASE_URL")}) == 15  # one port each
    for client in ("OpenAI(base_url=", "TavilyClient(", "Firecrawl(", "Exa("):
        assert client in env["_examples"]


def test_openai_plain_and_streamed(env: dict[str, str], request: pytest.FixtureRequest) -> None:
    from openai import OpenAI
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
    from openai import AsyncOpenAI
    async def run() -> str:
        async with AsyncOpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox") as client:
            stream = await client.chat.completions.create(model="sandbox-judge", stream=True,
                                                          messages=[{"role": "user", "content": QUESTION}])
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert '"supports_gold"' in asyncio.run(run())


def test_tavily_with_answer(env: dict[str, str]) -> None:
    from tavily import TavilyClient
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
    from firecrawl import AsyncFirecrawl, Firecrawl
    url = env["SEARCHTRACE_FIRECRAWL_BASE_URL"]
    data = Firecrawl(api_key="fc-sandbox", api_url=url).search(QUESTION, limit=5)
    assert data.web and len(data.web) == 5 and data.web[0].url.rstrip("/") == GOLD  # type: ignore[union-attr]
    adata = asyncio.run(AsyncFirecrawl(api_key="fc-sandbox", api_url=url).search(QUESTION, limit=5))
    gc.collect()
    assert [r.url for r in adata.web or []] == [r.url for r in data.web]  # type: ignore[union-attr]


def test_exa_default_and_highlights(env: dict[str, str]) -> None:
    from exa_py import Exa
    exa = Exa(api_key="sandbox", base_url=env["SEARCHTRACE_EXA_BASE_URL"])
    default = exa.search(QUESTION, num_results=5)  # the SDK asks for up to 10,000 characters of page text
    assert len(default.results) == 5 and GOLD in [r.url for r in default.results]
    assert all(r.text for r in default.results)
    lean = exa.search(QUESTION, num_results=5, contents={"highlights": True})
    assert all(r.highlights and not r.text for r in lean.results)


def test_reader_post_form_and_jina_search(env: dict[str, str]) -> None:
    with httpx.Client(timeout=HANG_S) as c:
        page = c.post(env["SEARCHTRACE_JINA_BASE_URL"] + "/", json={"url": GOLD}, headers={"Accept": "application/json"})
        assert page.status_code == 200 and page.json()["data"]["url"] == GOLD and ANSWER in page.json()["data"]["content"]
        form = c.post(env["SEARCHTRACE_JINA_BASE_URL"] + "/", data={"url": GOLD})
        assert form.status_code == 200 and form.text.startswith("Title: ")
        found = c.get(env["SEARCHTRACE_JINA_SEARCH_BASE_URL"] + "/", params={"q": QUESTION},
                      headers={"Authorization": "Bearer sandbox", "Accept": "application/json"})
        assert found.status_code == 200 and found.json()["data"][0]["content"]


RESPONSES_TOOLS = [{"type": "function", **t["function"]} for t in TOOL_SCHEMAS]  # the flattened Responses form


def _tool_result(env: dict[str, str], name: str, arguments: str) -> str:
    """What a harness hands back for one call: the Tavily client's JSON for a search, Jina's text for a fetch
    (of the URL the agent names in `doc_id`, as these results carry no doc ids)."""
    from tavily import TavilyClient
    args = json.loads(arguments)
    if name == "search_web":
        tavily = TavilyClient(api_key="tvly-sandbox", api_base_url=env["SEARCHTRACE_TAVILY_BASE_URL"])
        return json.dumps(tavily.search(args["query"], max_results=5))
    page = httpx.get(f"{env['SEARCHTRACE_JINA_BASE_URL']}/{args['doc_id']}", headers={"Authorization": "Bearer jina"}, timeout=HANG_S)
    return page.text


def _chat_loop(client: OpenAI, env: dict[str, str]) -> list[tuple[str, str] | str]:
    """The scripted agent driven over chat completions: each turn's tool calls (name, arguments), then its text."""
    messages: list[Any] = [{"role": "system", "content": "Search, then answer."}, {"role": "user", "content": QUESTION}]
    said: list[tuple[str, str] | str] = []
    for _ in range(8):
        reply = client.chat.completions.create(model="sandbox-agent", messages=messages, tools=TOOL_SCHEMAS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        calls = [(c.function.name, c.function.arguments) for c in message.tool_calls or []]  # type: ignore[union-attr]
        if not calls:
            said.append(message.content or "")
            return said
        said += calls
        messages.append(message.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": c.id, "content": _tool_result(env, *call)}
                     for c, call in zip(message.tool_calls or [], calls, strict=True)]
    return said


def test_openai_responses_plain_streamed_with_tools(env: dict[str, str], request: pytest.FixtureRequest) -> None:
    from openai import OpenAI
    client = OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox")
    request.addfinalizer(client.close)
    ask: dict[str, Any] = {"model": "sandbox-agent", "instructions": "Search, then answer.", "input": QUESTION,
                           "tools": RESPONSES_TOOLS}
    plain = client.responses.create(**ask)
    assert [item.type for item in plain.output] == ["reasoning", "function_call"] and plain.output_text == ""
    call = plain.output[1]
    assert call.type == "function_call" and call.name == "search_web" and QUESTION in json.loads(call.arguments)["query"]
    assert plain.usage is not None and plain.usage.output_tokens_details.reasoning_tokens > 0
    assert plain.status == "completed" and plain.tools[0].type == "function"
    events = list(client.responses.create(**ask, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed" and [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert deltas == call.arguments and [e.arguments for e in done] == [call.arguments]
    assert events[-1].response == plain
    with client.responses.stream(**ask) as stream:  # the client's own accumulator rebuilds the same reply
        final = stream.get_final_response()
    assert final.model_dump(exclude={"output"}) == plain.model_dump(exclude={"output"})
    assert [o.model_dump(exclude={"parsed_arguments"}) for o in final.output] == [o.model_dump() for o in plain.output]
    judge = client.responses.create(model="sandbox-judge", input=QUESTION, stream=True)
    text = "".join(e.delta for e in judge if e.type == "response.output_text.delta")
    assert '"supports_gold"' in text


def test_openai_responses_chain_matches_chat(env: dict[str, str], request: pytest.FixtureRequest) -> None:
    """previous_response_id carries the conversation: each turn sends only the tool results, and the scripted
    agent makes exactly the calls and the answer it makes over chat completions."""
    from openai import BadRequestError, OpenAI
    client = OpenAI(base_url=env["OPENAI_BASE_URL"], api_key="sandbox")
    request.addfinalizer(client.close)
    said: list[tuple[str, str] | str] = []
    cached: list[int] = []
    reply = client.responses.create(model="sandbox-agent", instructions="Search, then answer.", input=QUESTION,
                                    tools=RESPONSES_TOOLS)  # type: ignore[arg-type]
    for _ in range(8):
        calls = [o for o in reply.output if o.type == "function_call"]
        if not calls:
            said.append(reply.output_text)
            break
        said += [(c.name, c.arguments) for c in calls]
        outputs: list[Any] = [{"type": "function_call_output", "call_id": c.call_id,
                               "output": _tool_result(env, c.name, c.arguments)} for c in calls]
        reply = client.responses.create(model="sandbox-agent", previous_response_id=reply.id, input=outputs,
                                        instructions="Search, then answer.", tools=RESPONSES_TOOLS)  # type: ignore[arg-type]
        assert reply.previous_response_id is not None and reply.usage is not None
        cached.append(reply.usage.input_tokens_details.cached_tokens)
    assert max(cached) > 0  # the earlier turns count as a cached prefix (in whole blocks of 64 tokens)
    assert said[-1] == f"FINAL ANSWER: {ANSWER}" and len(said) >= 2
    assert said == _chat_loop(client, env)
    with pytest.raises(BadRequestError) as missing:
        client.responses.create(model="sandbox-agent", previous_response_id="resp_nowhere", input="more?")
    assert missing.value.code == "previous_response_not_found"
    unstored = client.responses.create(model="sandbox-agent", input=QUESTION, tools=RESPONSES_TOOLS, store=False)  # type: ignore[arg-type]
    with pytest.raises(BadRequestError):
        client.responses.create(model="sandbox-agent", previous_response_id=unstored.id, input="more?")


ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in TOOL_SCHEMAS]


def test_anthropic_plain_streamed_and_a_tool_result(env: dict[str, str], request: pytest.FixtureRequest) -> None:
    from anthropic import Anthropic
    from anthropic import NotFoundError as AnthropicNotFound
    client = Anthropic(base_url=env["ANTHROPIC_BASE_URL"], api_key="sandbox")  # the SDK's base URL: no /v1
    request.addfinalizer(client.close)
    asked: list[MessageParam] = [{"role": "user", "content": QUESTION}]
    plain = client.messages.create(model="sandbox-agent", max_tokens=1024, tools=ANTHROPIC_TOOLS, messages=asked)  # type: ignore[arg-type]
    use = next(b for b in plain.content if b.type == "tool_use")
    assert plain.stop_reason == "tool_use" and use.name == "search_web" and use.input == {"query": QUESTION}  # type: ignore[union-attr]
    assert plain.usage.input_tokens > 0 and plain.usage.cache_read_input_tokens == 0
    with client.messages.stream(model="sandbox-agent", max_tokens=1024, tools=ANTHROPIC_TOOLS, messages=asked) as s:  # type: ignore[arg-type]
        deltas = [e for e in s if e.type == "content_block_delta"]
        streamed = s.get_final_message()
    assert len(deltas) > 1 and streamed.content == plain.content and streamed.usage.output_tokens == plain.usage.output_tokens
    page = "<document doc_id=\"d1\" rank=\"1\">Elmwyn Athletic, an almanac entry</document>"
    second = client.messages.create(model="sandbox-agent", max_tokens=1024, tools=ANTHROPIC_TOOLS, messages=[  # type: ignore[arg-type]
        *asked, {"role": "assistant", "content": plain.content},  # type: ignore[typeddict-item]
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": page}]}])  # type: ignore[union-attr]
    assert second.usage.cache_read_input_tokens is not None and second.stop_reason in ("tool_use", "end_turn")
    judge = client.messages.create(model="sandbox-judge", max_tokens=1024, messages=asked)
    assert '"supports_gold"' in judge.content[0].text  # type: ignore[union-attr]
    with pytest.raises(AnthropicNotFound):
        client.messages.create(model="claude-nope", max_tokens=16, messages=asked)


def test_google_genai_plain_and_streamed(env: dict[str, str]) -> None:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
    client = genai.Client(api_key="sandbox", http_options=genai_types.HttpOptions(base_url=env["GOOGLE_GEMINI_BASE_URL"]))
    decls = [genai_types.FunctionDeclaration(name=t["function"]["name"], description=t["function"]["description"],
                                             parameters_json_schema=t["function"]["parameters"]) for t in TOOL_SCHEMAS]
    config = genai_types.GenerateContentConfig(
        tools=[genai_types.Tool(function_declarations=decls)],
        automatic_function_calling=genai_types.AutomaticFunctionCallingConfig(disable=True))
    plain = client.models.generate_content(model="sandbox-agent", contents=QUESTION, config=config)
    assert plain.function_calls and plain.function_calls[0].name == "search_web"
    assert plain.function_calls[0].args == {"query": QUESTION}
    assert plain.usage_metadata and plain.usage_metadata.prompt_token_count and plain.usage_metadata.thoughts_token_count
    chunks = list(client.models.generate_content_stream(model="sandbox-agent", contents=QUESTION, config=config))
    assert [c.name for ch in chunks for c in ch.function_calls or []] == ["search_web"]
    assert chunks[-1].usage_metadata == plain.usage_metadata
    judged = client.models.generate_content(model="sandbox-judge", contents=QUESTION)
    assert '"supports_gold"' in (judged.text or "")
    pieces = list(client.models.generate_content_stream(model="sandbox-judge", contents=QUESTION))
    assert len(pieces) > 2 and "".join(p.text or "" for p in pieces) == judged.text
    with pytest.raises(genai_errors.ClientError) as caught:
        client.models.generate_content(model="gemini-nope", contents=QUESTION)
    assert caught.value.code == 404 and caught.value.status == "NOT_FOUND"
