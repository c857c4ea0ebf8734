"""Claude's `pause_turn` through `searchtrace proxy` (docs/how-to/claude-gemini.md): the official `anthropic` client
asks the sandbox (over loopback HTTP) through the proxy, plain and streamed, with client tools and with the hosted
web_search/web_fetch tools; each paused call and its continuation is its own model.responded, a paused reply is never
taken as the answer (`--final last-reply`), the trajectory stays open until `…/final`, its usage is the calls' sum."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from searchtrace.adapters.sandbox import running
from searchtrace.store import (
    AnswerFinal,
    ModelResponded,
    Payload,
    SearchCalled,
    SearchResult,
    TrajectoryFinished,
)
from tests.builders import summed_usage
from tests.proxy.support import proxy, streams, write_questions
from tests.proxy.test_proxy_claude_gemini import SEARCH, SYSTEM, tool

if TYPE_CHECKING:
    from anthropic import Anthropic

SERVER_TOOLS: Any = [{"type": "web_search_20250305", "name": "web_search"},
                     {"type": "web_fetch_20250910", "name": "web_fetch"}]
CLIENT_TOOLS: Any = [{"name": SEARCH["name"], "description": SEARCH["description"], "input_schema": SEARCH["parameters"]}]
SLOW = 120.0  # seconds a proxied call may take on a loaded machine (a hang guard, not a tolerance)


def hosted_arm(base: str, question: str) -> list[str | None]:
    """A hosted turn asked to pause: the paused reply plain, sent back as it came, the rest streamed."""
    from anthropic import Anthropic
    with Anthropic(base_url=f"{base}/anthropic", api_key="not-a-key", max_retries=0, timeout=SLOW) as client:
        return _hosted(client, question)


def _hosted(client: Anthropic, question: str) -> list[str | None]:
    messages: Any = [{"role": "user", "content": f"{question} !fault:pause"}]
    paused = client.messages.create(model="sandbox-agent-claude", max_tokens=1024, tools=SERVER_TOOLS,
                                    messages=messages)
    messages.append({"role": "assistant", "content": paused.content})
    with client.messages.stream(model="sandbox-agent-claude", max_tokens=1024, tools=SERVER_TOOLS,
                                messages=messages) as s:
        rest = s.get_final_message()
    return [paused.stop_reason, rest.stop_reason]


def client_arm(base: str, question: str) -> list[str | None]:
    """A client-tool loop whose every turn is asked to pause (the marker rides on each user turn); streamed turns."""
    from anthropic import Anthropic
    with Anthropic(base_url=f"{base}/anthropic", api_key="not-a-key", max_retries=0, timeout=SLOW) as client:
        return _client_loop(client, base, question)


def _client_loop(client: Anthropic, base: str, question: str) -> list[str | None]:
    messages: Any = [{"role": "user", "content": f"{question} !fault:pause"}]
    stops: list[str | None] = []
    for _ in range(12):
        with client.messages.stream(model="sandbox-agent-claude", max_tokens=1024, system=SYSTEM, tools=CLIENT_TOOLS,
                                    messages=messages) as s:
            reply = s.get_final_message()
        stops.append(reply.stop_reason)
        messages.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason == "pause_turn":
            continue
        if reply.stop_reason != "tool_use":
            return stops
        messages.append({"role": "user", "content": [
            *({"type": "tool_result", "tool_use_id": b.id, "content": tool(base, b.name, dict(b.input))}  # type: ignore[arg-type]
              for b in reply.content if b.type == "tool_use"),
            {"type": "text", "text": "!fault:pause"}]})
    raise AssertionError(f"no answer in 12 calls: {stops}")


def test_paused_turns_through_the_proxy_are_each_recorded_and_continued(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 1)
    qid, db = rows[0]["qid"], tmp_path / "pause.duckdb"
    with running() as root:
        env = {"ANTHROPIC_BASE_URL": f"{root}/anthropic", "ANTHROPIC_API_KEY": "upstream-key-1a2b",
               "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily", "TAVILY_API_KEY": "upstream-key-3c4d",
               "SEARCHTRACE_JINA_BASE_URL": f"{root}/jina", "JINA_API_KEY": "upstream-key-5e6f"}
        with proxy(db, qfile, "pause", upstream="live", env=env, extra=("--final", "last-reply")) as p:
            made = {"anthropic_web_fetch": hosted_arm(f"{p.url}/t/anthropic_web_fetch/{qid}", rows[0]["question"]),
                    "tavily": client_arm(f"{p.url}/t/tavily/{qid}", rows[0]["question"])}
            for arm in made:
                done = httpx.post(f"{p.url}/t/{arm}/{qid}/final", json={}, timeout=SLOW)
                assert done.status_code == 200, done.text
            assert p.stop() == 0, p.log.read_text()

    recorded = streams(db)
    for arm, stops in made.items():
        events: list[Payload] = [e for _, _, e in recorded[f"traj:pause:{arm}:{qid}"]]
        turns = [e for e in events if isinstance(e, ModelResponded)]
        assert [t.finish_reason for t in turns] == stops and stops.count("pause_turn") == len(stops) // 2 >= 1
        assert {(t.model, t.api) for t in turns} == {("sandbox-agent-claude", "anthropic")}, turns
        assert sum(isinstance(e, TrajectoryFinished) for e in events) == 1  # ended by `final` only
        finished = events[-1]
        assert isinstance(finished, TrajectoryFinished) and finished.reason == "answered"
        assert finished.usage == summed_usage(turns)
        answer = next(e for e in events if isinstance(e, AnswerFinal))
        assert answer.iteration == len(turns) and rows[0]["answer"] in answer.text  # never the paused reply
        assert answer.text == rows[0]["answer"] or arm == "anthropic_web_fetch"  # (a hosted reply is kept whole)
        if arm == "anthropic_web_fetch":  # the server tools' items come with the paused call, once
            assert [c.iteration for c in events if isinstance(c, SearchCalled)] == [1]
            assert [r.rank for r in events if isinstance(r, SearchResult)] == [1, 2, 3, 4, 5]
        else:
            assert sum(isinstance(e, SearchCalled) for e in events) == sum(len(t.tool_calls) for t in turns) >= 1
