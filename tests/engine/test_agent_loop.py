"""The agent loop's exact contract with in-memory adapters: ordering, refusals, limits, rebuild."""

from __future__ import annotations

from typing import Any

import pytest

from searchtrace.adapters import ChatError, RetryInfo
from searchtrace.engine import Agent, Recorder, Stats, Trajectory, final_answer, get_prompt, rebuild_messages
from searchtrace.replay._reexec import Tape
from searchtrace.store import (
    AnswerFinal,
    CallRetried,
    FetchCalled,
    FetchCompleted,
    ModelResponded,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    ToolRefused,
    TrajectoryFinished,
)
from tests.engine.fakes import FakeChat, FakeFetch, FakeSearch, reply

pytestmark = pytest.mark.anyio
TRAJ = Trajectory(run_id="r", provider="fake", qid="q1", question="Who built the tower?", gold_answer="Ada")


def make_agent(chat: FakeChat, search: FakeSearch | None = None, fetch: FakeFetch | None = None, max_iterations: int = 10) -> Agent:
    return Agent(chat=chat, search=search or FakeSearch(), fetch=fetch or FakeFetch(), prompt=get_prompt(),
                 max_iterations=max_iterations, stats=Stats())


def blobs_of(rec: Recorder) -> Any:
    return lambda d: rec.blobs[d]


async def test_parallel_calls_run_concurrently_and_are_recorded_in_call_order() -> None:
    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:  # the slow search first: it finishes last but must be recorded first
            return reply(calls=[("a", "search_web", '{"query": "slow one"}'), ("b", "search_web", '{"query": "fast"}'),
                                ("c", "fetch_page", '{"doc_id": "d1"}')])
        if turn == 2:
            return reply(calls=[("e", "fetch_page", '{"doc_id": "d5"}'), ("f", "fetch_page", '{"doc_id": "d2"}')])
        return reply("FINAL ANSWER: Ada")

    search = FakeSearch(delays={"slow one": 0.05, "fast": 0.0})
    fetch = FakeFetch()
    chat = FakeChat(policy)
    rec = Recorder(TRAJ)
    done = await make_agent(chat, search, fetch).run(TRAJ, rec)
    assert done.reason == "answered" and done.iterations == 3
    assert search.max_in_flight == 2
    kinds = [type(p).__name__ for p in rec.payloads]
    first_turn = kinds[kinds.index("ModelResponded") + 1 : kinds.index("ModelResponded", 2)]
    assert first_turn == ["SearchCalled", *["SearchResult"] * 3, "SearchCompleted",
                          "SearchCalled", *["SearchResult"] * 3, "SearchCompleted", "ToolRefused"]
    results = [p for p in rec.payloads if isinstance(p, SearchResult)]
    assert [(r.call_id, r.doc_id, r.rank) for r in results] == [
        ("a", "d1", 1), ("a", "d2", 2), ("a", "d3", 3), ("b", "d4", 1), ("b", "d5", 2), ("b", "d6", 3)]
    assert results[0].url_normalized == "https://ex1.org/slow-one" and results[0].domain == "ex1.org"
    # d1 did not exist when turn 1 was planned: refused, never fetched; turn 2 fetches d5 then d2 in that order
    refused = [p for p in rec.payloads if isinstance(p, ToolRefused)]
    assert [(r.call_id, r.iteration) for r in refused] == [("c", 1)]
    assert [p.doc_id for p in rec.payloads if isinstance(p, FetchCalled)] == ["d5", "d2"]
    assert fetch.urls == [results[4].url, results[1].url]
    tool_msgs = [m for m in chat.received[1] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["a", "b", "c"]
    assert tool_msgs[0]["content"].count("<document ") == 3 and 'doc_id="d1"' in tool_msgs[0]["content"]
    assert tool_msgs[2]["content"].startswith("Error: unknown doc_id 'd1'")
    fetched = [m for m in chat.received[2] if m["role"] == "tool"][-2:]
    assert "<page># page\n" + results[4].url in fetched[0]["content"] and 'doc_id="d5"' in fetched[0]["content"]
    assert isinstance(rec.payloads[-2], AnswerFinal) and rec.payloads[-2].text == "Ada"
    # the transcript re-derived from events is exactly what the model was sent, turn by turn
    assert rebuild_messages(rec.payloads, get_prompt().text, blobs_of(rec)) == chat.received
    fc = [p for p in rec.payloads if isinstance(p, FetchCompleted)]
    assert rec.blobs[fc[0].content_digest].decode() == "# page\n" + results[4].url  # type: ignore[index]


async def test_forged_doc_id_is_refused_and_the_model_sees_why() -> None:
    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:
            return reply(calls=[("s", "search_web", '{"query": "tower"}')])
        if turn == 2:
            return reply(calls=[("x", "fetch_page", '{"doc_id": "d99"}'), ("y", "fetch_page", "not json"),
                                ("z", "open_url", '{"url": "https://evil.example"}')])
        return reply("FINAL ANSWER: unknown")

    fetch = FakeFetch()
    chat = FakeChat(policy)
    rec = Recorder(TRAJ)
    await make_agent(chat, fetch=fetch).run(TRAJ, rec)
    assert fetch.urls == []
    refused = [p for p in rec.payloads if isinstance(p, ToolRefused)]
    assert [(r.call_id, r.name) for r in refused] == [("x", "fetch_page"), ("y", "fetch_page"), ("z", "open_url")]
    assert "d99" in refused[0].reason
    seen = [m["content"] for m in chat.received[2] if m["role"] == "tool"][-3:]
    assert all(s.startswith("Error: ") for s in seen) and "d99" in seen[0]
    assert rebuild_messages(rec.payloads, get_prompt().text, blobs_of(rec)) == chat.received


async def test_max_iterations_ends_without_answer_and_skips_last_turn_tools() -> None:
    search = FakeSearch()
    chat = FakeChat(lambda m, turn: reply(calls=[(f"c{turn}", "search_web", f'{{"query": "q{turn}"}}')]))
    rec = Recorder(TRAJ)
    done = await make_agent(chat, search, max_iterations=3).run(TRAJ, rec)
    assert (done.reason, done.iterations) == ("max_iterations", 3)
    assert len(chat.received) == 3 and search.queries == ["q1", "q2"]
    assert done.usage.input_tokens == 300 and done.usage.output_tokens == 30
    assert not any(isinstance(p, AnswerFinal) for p in rec.payloads)
    assert [p.iteration for p in rec.payloads if isinstance(p, ModelResponded)] == [1, 2, 3]


async def test_reply_without_tools_or_answer_gets_a_nudge() -> None:
    chat = FakeChat(lambda m, turn: reply("thinking…") if turn == 1 else reply("Done.\nFINAL ANSWER: Ada\n"))
    rec = Recorder(TRAJ)
    done = await make_agent(chat).run(TRAJ, rec)
    assert done.reason == "answered"
    assert chat.received[1][-1]["role"] == "user" and "FINAL ANSWER" in chat.received[1][-1]["content"]
    assert rebuild_messages(rec.payloads, get_prompt().text, blobs_of(rec)) == chat.received


async def test_chat_failure_ends_the_trajectory_with_error_and_records_retries() -> None:
    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:
            return reply(calls=[("s", "search_web", '{"query": "tower"}')])
        raise ChatError("http_error", "boom: HTTP 500", [RetryInfo(what="chat:m", attempt=1, reason="5xx", wait_s=0.1)],
                        http_status=500)

    rec = Recorder(TRAJ)
    done = await make_agent(FakeChat(policy)).run(TRAJ, rec)
    assert done.reason == "error" and "boom" in (done.error or "")
    assert isinstance(rec.payloads[-2], CallRetried) and isinstance(rec.payloads[-1], TrajectoryFinished)
    assert sum(isinstance(p, SearchCompleted) for p in rec.payloads) == 1
    assert sum(isinstance(p, SearchCalled) for p in rec.payloads) == 1


def test_final_answer_prefix() -> None:
    assert final_answer("FINAL ANSWER: 42") == "42"
    assert final_answer("  FINAL ANSWER:   Paris, France \n") == "Paris, France"
    assert final_answer("I looked.\nFINAL ANSWER: 1887") == "1887"
    assert final_answer("the final answer: 3") is None
    assert final_answer("no FINAL ANSWER: inline") is None
    assert final_answer(None) is None


async def test_a_reused_tool_call_id_rebuilds_and_replays_each_call() -> None:
    """Two calls of one turn under one tool-call id: the transcript rebuilt from events gives each its own result
    (as the model was sent), and the replay tape answers both searches."""
    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:
            return reply(calls=[("a", "search_web", '{"query": "one"}'), ("a", "search_web", '{"query": "two"}')])
        return reply("FINAL ANSWER: Ada")

    chat = FakeChat(policy)
    rec = Recorder(TRAJ)
    await make_agent(chat).run(TRAJ, rec)
    tool_msgs = [m["content"] for m in chat.received[1] if m["role"] == "tool"]
    assert len(tool_msgs) == 2 and "one 1" in tool_msgs[0] and "two 1" in tool_msgs[1]
    assert rebuild_messages(rec.payloads, get_prompt().text, blobs_of(rec)) == chat.received
    tape = Tape.from_payloads(TRAJ.trajectory_id, rec.payloads)
    assert {q: len(d) for q, d in tape.searches.items()} == {"one": 1, "two": 1}


async def test_a_paused_turn_is_continued_as_it_is_and_rebuilds_the_same() -> None:
    """Anthropic's `pause_turn`: the reply goes back as the assistant's turn, with no nudge, and the model is asked
    again; replay rebuilds exactly the messages sent."""

    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:
            paused = reply("Searching on the server side…")
            paused.finish_reason = "pause_turn"
            return paused
        return reply("FINAL ANSWER: Ada")

    chat = FakeChat(policy)
    rec = Recorder(TRAJ)
    done = await make_agent(chat).run(TRAJ, rec)
    assert done.reason == "answered" and done.iterations == 2
    second = chat.received[1]
    assert second[-1] == {"role": "assistant", "content": "Searching on the server side…"}  # no nudge after it
    assert rebuild_messages(rec.payloads, get_prompt().text, blobs_of(rec)) == chat.received
