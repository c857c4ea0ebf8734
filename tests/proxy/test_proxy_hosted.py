"""Hosted search through `searchtrace proxy` (docs/how-to/hosted.md): the official `openai` (Responses with web_search),
`anthropic` (web_search and web_fetch) and `google-genai` (google_search) clients each make one ordinary model call;
the hosted tool's items inside it become ranked search.result events with their surface, Gemini's redirects resolved,
and the answer's citations link to items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchtrace.store import AnswerFinal, FetchCompleted, ModelResponded, SearchCalled, SearchResult
from tests.proxy.support import proxy, streams, write_questions


def ask_openai(base: str, question: str) -> None:
    import openai
    with openai.OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key", max_retries=0) as client:
        client.responses.create(model="sandbox-agent", input=question, tools=[{"type": "web_search"}],
                                include=["web_search_call.action.sources"])


def ask_openai_streamed(base: str, question: str) -> list[str]:
    """The event types of one streamed Responses call with web_search."""
    import openai
    with openai.OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key", max_retries=0) as client:
        stream = client.responses.create(model="sandbox-agent", input=question, tools=[{"type": "web_search"}],
                                         include=["web_search_call.action.sources"], stream=True)
        return [e.type for e in stream]


def ask_claude(base: str, question: str) -> None:
    from anthropic import Anthropic
    tools: Any = [{"type": "web_search_20250305", "name": "web_search"}, {"type": "web_fetch_20250910", "name": "web_fetch"}]
    with Anthropic(base_url=f"{base}/anthropic", api_key="not-a-key", max_retries=0) as client:
        client.messages.create(model="sandbox-agent", max_tokens=1024, tools=tools,
                               messages=[{"role": "user", "content": question}])


def ask_gemini(base: str, question: str) -> None:
    from google import genai
    from google.genai import types as gt
    with genai.Client(api_key="not-a-key", http_options=gt.HttpOptions(base_url=f"{base}/gemini")) as client:
        client.models.generate_content(model="sandbox-agent", contents=question,
                                       config=gt.GenerateContentConfig(tools=[gt.Tool(google_search=gt.GoogleSearch())]))


def ask_gemini_streamed(base: str, question: str) -> None:
    from google import genai
    from google.genai import types as gt
    with genai.Client(api_key="not-a-key", http_options=gt.HttpOptions(base_url=f"{base}/gemini")) as client:
        chunks = list(client.models.generate_content_stream(
            model="sandbox-agent", contents=question,
            config=gt.GenerateContentConfig(tools=[gt.Tool(google_search=gt.GoogleSearch())])))
    assert chunks[-1].candidates[0].grounding_metadata is not None  # type: ignore[index]


LAYERS = {"openai_web_search": (ask_openai, [["url"], ["url", "title"]]),
          "anthropic_web_fetch": (ask_claude, [["url", "title"], ["url", "title", "cited_text"]]),
          "gemini_grounding": (ask_gemini, [["url", "title"]])}


def test_each_clients_hosted_sources_become_ranked_results_with_their_surface(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    row, second, third = write_questions(qfile, 3)  # the second one's answer is in no result: nothing cited
    db = tmp_path / "hosted.duckdb"
    with proxy(db, qfile, "hosted", extra=("--final", "last-reply")) as p:
        for layer, (ask, _) in LAYERS.items():
            ask(f"{p.url}/t/{layer}/{row['qid']}", row["question"])
        ask_gemini_streamed(f"{p.url}/t/gemini_grounding/{second['qid']}", second["question"])
        kinds = ask_openai_streamed(f"{p.url}/t/openai_web_search/{third['qid']}", third["question"])
        assert p.stop() == 0, p.log.read_text()
    # the hosted search's progress and the answer's citation, streamed as OpenAI streams them, then recorded whole
    assert [k for k in kinds if k.startswith("response.web_search_call.")] == [
        "response.web_search_call.in_progress", "response.web_search_call.searching",
        "response.web_search_call.completed"]
    assert "response.output_text.annotation.added" in kinds
    events = [e for _, _, e in streams(db)[f"traj:hosted:openai_web_search:{third['qid']}"]]
    assert [r.rank for r in events if isinstance(r, SearchResult)] == [1, 2, 3, 4, 5]
    answer = next(e for e in events if isinstance(e, AnswerFinal))
    assert answer.citations and answer.citations[0].item  # type: ignore[index]
    recorded = streams(db)
    streamed = [e for _, _, e in recorded[f"traj:hosted:gemini_grounding:{second['qid']}"]]
    got = [e for e in streamed if isinstance(e, SearchResult)]  # the metadata of the last chunk, kept whole
    assert got and [r.rank for r in got] == list(range(1, len(got) + 1))
    assert all(r.surface == ["url", "title"] for r in got)
    # resolved while recording, as a plain reply's are: the page is the item, the redirect kept beside it
    assert not any("grounding-api-redirect" in r.url for r in got)
    assert all("grounding-api-redirect" in r.metadata["redirect"] for r in got)
    for layer, (_, surfaces) in LAYERS.items():
        events = [e for _, _, e in recorded[f"traj:hosted:{layer}:{row['qid']}"]]
        assert sum(isinstance(e, ModelResponded) for e in events) == 1  # one ordinary model call
        called = [e for e in events if isinstance(e, SearchCalled)]
        assert [c.provider for c in called] == [layer] and called[0].query == row["question"]
        got = [e for e in events if isinstance(e, SearchResult)]
        assert [r.rank for r in got] == [1, 2, 3, 4, 5]
        assert {tuple(r.surface) for r in got} <= {tuple(s) for s in surfaces}  # type: ignore[arg-type]
        assert all(r.model_saw_more and r.snippet == "" for r in got)
        assert not any("grounding-api-redirect" in r.url for r in got)
        answer = next(e for e in events if isinstance(e, AnswerFinal))
        assert row["answer"] in answer.text
        assert answer.citations and answer.citations[0].item in {r.url_normalized for r in got}  # type: ignore[union-attr]
        if layer == "anthropic_web_fetch":
            assert [f.status for f in events if isinstance(f, FetchCompleted)] == ["ok"]
