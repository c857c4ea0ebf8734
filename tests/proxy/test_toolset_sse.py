"""The sandbox agent's view of a client's tools and replies, and a streamed completion put back together."""

from __future__ import annotations

import json

import msgspec
import pytest

import searchtrace.adapters.sandbox._agent as agent
from searchtrace.adapters import Tools, parse_completion, pick, read_page, read_results
from searchtrace.adapters import assemble_chunks as assemble
from searchtrace.adapters._toolset import DEFAULT
from searchtrace.engine import TOOL_SCHEMAS
from tests.shared_data import shared_path


def fn(name: str, props: dict[str, str], desc: str = "") -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


def test_pick_finds_the_searching_and_fetching_tools() -> None:
    assert pick(TOOL_SCHEMAS) == DEFAULT and pick(None) == DEFAULT
    tools = [fn("calculator", {"expression": "string"}), fn("read_url", {"url": "string"}, "Read a page"),
             fn("web_search", {"query": "string"})]
    assert pick(tools) == Tools(search="web_search", search_arg="query", fetch="read_url", fetch_arg="url",
                                fetch_by_url=True)
    assert pick([fn("lookup", {"q": "string"}), fn("get", {"doc_id": "string"})]) == Tools(
        search="lookup", search_arg="q", fetch="get", fetch_arg="doc_id", fetch_by_url=False)
    assert pick([fn("search", {"q": "string"})]).fetch is None


@pytest.mark.parametrize(("path", "first_url"), [
    ("research/fixtures/tavily_search_ok.json", None),
    ("research/fixtures/brave_web_search_ok.json", None),
    ("research/fixtures/firecrawl_v2_search_ok.json", None),
    ("research/fixtures2/exa/ok.json", None),
    ("research/fixtures2/serper/ok.json", None),
    ("research/fixtures2/serpapi/ok.json", None),
    ("research/fixtures2/linkup/ok.json", None),
])
def test_read_results_in_any_providers_shape(path: str, first_url: str | None) -> None:
    p = shared_path(path)
    if not p.exists():
        pytest.skip(f"{path} is only in ../shared")
    docs = read_results(p.read_text())
    assert docs and all(d.url.startswith("http") for d in docs)
    assert any(d.snippet for d in docs) and any(d.title for d in docs)
    assert [d.rank for d in docs] == list(range(1, len(docs) + 1))


def test_read_results_and_pages_as_text() -> None:
    (d,) = read_results("The founding year of X is 1937. See https://a.example/x for more.")
    assert d.url == "https://a.example/x" and "1937" in d.snippet
    assert read_results("Some text", plain_text=False) == []
    assert read_page(json.dumps({"data": {"content": "# Page"}})) == "# Page"
    assert read_page("# Markdown page") == "# Markdown page"
    assert read_page("Error: HTTP 500") is None


def test_sandbox_agent_drives_a_clients_own_tools() -> None:
    tools = [fn("web_search", {"query": "string"}), fn("read_url", {"url": "string"}, "Read a page")]
    t = pick(tools)
    q = "What is the founding year of Elmwyn Athletic?"
    messages: list[dict[str, object]] = [{"role": "user", "content": q}]
    turn = agent.decide(messages, tools=t)  # type: ignore[arg-type]
    assert turn.calls and turn.calls[0] == ("web_search", {"query": q})
    results = {"results": [
        {"url": "https://b.example/other", "title": "Elmwyn Athletic", "content": "Elmwyn Athletic is a club."},
        {"url": "https://a.example/x", "title": "Elmwyn Athletic history", "content": "A club in the north."}]}
    messages += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": json.dumps({"query": q})}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": json.dumps(results)}]
    turn = agent.decide(messages, tools=t)  # type: ignore[arg-type]
    assert turn.calls and all(name == "read_url" and set(args) == {"url"} for name, args in turn.calls)
    url = turn.calls[0][1]["url"]
    messages += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": "c2", "type": "function", "function": {"name": "read_url", "arguments": json.dumps({"url": url})}}]},
                 {"role": "tool", "tool_call_id": "c2", "content": "# Elmwyn\n\nThe founding year of Elmwyn Athletic is 1937."}]
    turn = agent.decide(messages, tools=t)  # type: ignore[arg-type]
    assert turn.text == "FINAL ANSWER: 1937"


def test_assemble_a_streamed_completion() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]},
        {"choices": [{"index": 0, "delta": {"content": "search.", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "web_", "arguments": '{"qu'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"name": "search", "arguments": 'ery": "x"}'}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
    ]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    text, calls, usage, finish = parse_completion(assemble(stream.encode()))
    assert text == "Let me search." and finish == "tool_calls"
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("call_1", "web_search", '{"query": "x"}')]
    assert (usage.input_tokens, usage.output_tokens) == (10, 5)
    with pytest.raises(ValueError):
        assemble(b"event: ping\n\n")
    with pytest.raises((ValueError, msgspec.DecodeError)):
        assemble(b"data: {not json\n\n")
