"""Claude's `pause_turn` (docs/how-to/claude-gemini.md): the sandbox pauses a turn when asked (the in-band
`!fault:pause` or a FaultPlan rate) and answers the rest when the conversation comes back with the paused content
last; the official `anthropic` client sees it plain and streamed, and `record` over real HTTP with `[agent] api =
"anthropic"` (client tools) and a Claude hosted layer continues every paused turn, each call its own
model.responded, the trajectory's usage their sum."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest

from searchtrace.adapters.sandbox import FaultPlan, default_world, running, running_all
from searchtrace.adapters.sandbox._serve import env_exports
from searchtrace.store import (
    AnswerFinal,
    EventLog,
    ModelResponded,
    Payload,
    SearchCalled,
    TrajectoryFinished,
)
from tests.builders import run_cli, summed_usage

if TYPE_CHECKING:
    from anthropic import Anthropic

QUESTION = "What is the founding year of Elmwyn Athletic?"
ANSWER = next(q.answer for q in default_world().questions if q.question == QUESTION)
SERVER_TOOLS: Any = [{"type": "web_search_20250305", "name": "web_search"},
                     {"type": "web_fetch_20250910", "name": "web_fetch"}]
CLIENT_TOOLS: Any = [{"name": "search", "description": "Web search.",
                      "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}]


@pytest.fixture(scope="module")
def claude() -> Any:
    from anthropic import Anthropic
    with running() as root:
        client = Anthropic(base_url=f"{root}/anthropic", api_key="sandbox", max_retries=0)
        yield client
        client.close()


def test_a_marked_hosted_turn_pauses_after_its_server_tools_and_continues_streamed(claude: Anthropic) -> None:
    messages: Any = [{"role": "user", "content": f"{QUESTION} !fault:pause"}]
    paused = claude.messages.create(model="sandbox-agent", max_tokens=1024, tools=SERVER_TOOLS, messages=messages)
    assert paused.stop_reason == "pause_turn"
    assert [b.type for b in paused.content] == ["server_tool_use", "web_search_tool_result", "server_tool_use",
                                                "web_fetch_tool_result"]
    assert paused.content[0].input == {"query": QUESTION}  # type: ignore[union-attr]  # the marker is not searched
    messages.append({"role": "assistant", "content": paused.content})  # sent back as it came
    with claude.messages.stream(model="sandbox-agent", max_tokens=1024, tools=SERVER_TOOLS, messages=messages) as s:
        rest = s.get_final_message()
    assert rest.stop_reason == "end_turn" and {b.type for b in rest.content} == {"text"}
    assert f"FINAL ANSWER: {ANSWER}" in "".join(b.text for b in rest.content)  # type: ignore[union-attr]
    used = [r.usage.server_tool_use for r in (paused, rest)]
    assert [(u.web_search_requests, u.web_fetch_requests) for u in used if u] == [(1, 1), (0, 0)]  # searched once
    whole = claude.messages.create(model="sandbox-agent", max_tokens=1024, tools=SERVER_TOOLS,
                                   messages=[{"role": "user", "content": QUESTION}])
    assert whole.stop_reason == "end_turn"  # unmarked: one whole reply
    assert [b.type for b in whole.content] == [b.type for b in (*paused.content, *rest.content)]


def test_a_marked_client_tool_turn_pauses_then_calls_its_tools(claude: Anthropic) -> None:
    messages: Any = [{"role": "user", "content": f"{QUESTION} !fault:pause"}]
    with claude.messages.stream(model="sandbox-agent", max_tokens=1024, tools=CLIENT_TOOLS, messages=messages) as s:
        paused = s.get_final_message()
    assert paused.stop_reason == "pause_turn" and [b.type for b in paused.content] == ["text"]
    messages.append({"role": "assistant", "content": paused.content})
    rest = claude.messages.create(model="sandbox-agent", max_tokens=1024, tools=CLIENT_TOOLS, messages=messages)
    assert rest.stop_reason == "tool_use" and {b.type for b in rest.content} == {"tool_use"}
    judged = claude.messages.create(model="sandbox-judge", max_tokens=1024, messages=messages[:1])
    assert judged.stop_reason == "end_turn"  # a judge's turn runs no server tool: never paused


CONFIG = """run_id = "p"
[agent]
model = "sandbox-agent"
api = "anthropic"
[providers.brave]
[providers.claude_search]
kind = "anthropic_web_fetch"
model = "sandbox-agent-claude"
[fetch]
cache_dir = ""
[dataset]
path = "sandbox"
[sample]
n = 2
"""


def test_record_over_http_continues_every_paused_turn(tmp_path: Path) -> None:
    """Every turn pauses first (FaultPlan `pause` = 1): the agent's six calls and the hosted layer's two are each
    recorded, paused ones never taken as the answer, and each trajectory is answered right."""
    (tmp_path / "run.toml").write_text(CONFIG)
    db = tmp_path / "p.duckdb"
    with running_all(faults=FaultPlan(seed=0, rates={"pause": 1.0})) as served:
        env = env_exports(served.urls)
        env["SEARCHTRACE_CLAUDE_SEARCH_BASE_URL"] = env["ANTHROPIC_BASE_URL"]
        with mock.patch.dict(os.environ, env):
            ran = run_cli("record", "--config", str(tmp_path / "run.toml"), "--db", str(db), "--no-progress")
    assert ran.code == 0, ran.err
    by: dict[str, list[Payload]] = {}
    with EventLog(db, read_only=True) as log:
        for ev in log.read():
            if ev.stream_id.startswith("traj:"):
                by.setdefault(ev.stream_id, []).append(ev.payload)
    gold = {q.qid: q.answer for q in default_world().questions}
    assert sorted(k.split(":")[2] for k in by) == ["brave", "brave", "claude_search", "claude_search"]
    for stream, events in by.items():
        turns = [e for e in events if isinstance(e, ModelResponded)]
        stops = [t.finish_reason for t in turns]
        assert stops[0::2] == ["pause_turn"] * (len(turns) // 2) and "pause_turn" not in stops[1::2]
        assert len(turns) == (2 if ":claude_search:" in stream else 6)  # search, fetch, answer: each paused once
        assert [t.iteration for t in turns] == list(range(1, len(turns) + 1))
        assert all((t.model, t.api) == (turns[0].model, "anthropic") for t in turns)
        finished = events[-1]
        assert isinstance(finished, TrajectoryFinished) and finished.reason == "answered"
        assert finished.iterations == len(turns) and finished.usage == summed_usage(turns)
        answer = next(e for e in events if isinstance(e, AnswerFinal))
        assert answer.text == gold[stream.rsplit(":", 1)[1]] and answer.iteration == len(turns)
        if ":claude_search:" in stream:  # the server tools ran in the paused part, once
            assert [c.iteration for c in events if isinstance(c, SearchCalled)] == [1]
            assert answer.citations
