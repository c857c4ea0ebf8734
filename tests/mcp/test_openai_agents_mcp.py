"""openai-agents' MCP client (`MCPServerStdio`) with `searchtrace mcp --sandbox` as its agent's only tools, the model
at the sandbox's OpenAI-compatible route (the Responses API, the SDK's default): every search and fetch the agent
makes is recorded, and its final answer through the server's final_answer tool (docs/how-to/mcp.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI

from tests.mcp.support import CLI, rows, sandbox_served
from tests.proxy.support import write_questions

INSTRUCTIONS = "Use search_web and fetch_page, then reply `FINAL ANSWER: <answer>`."


async def _answer(openai_base: str, db: Path, qfile: Path, qid: str, question: str) -> str:
    params = {"command": sys.executable,
              "args": ["-c", CLI, "mcp", "--db", str(db), "--questions", str(qfile), "--run-id", "agents",
                       "--provider", "tavily", "--sandbox", "--qid", qid],
              "env": {**os.environ, "SEARCHTRACE_CACHE_DIR": str(db.parent / "cache")}}
    async with AsyncOpenAI(base_url=openai_base, api_key="sandbox-key") as client, \
            MCPServerStdio(params=params, cache_tools_list=True, client_session_timeout_seconds=60) as server:
        model = OpenAIResponsesModel(model="sandbox-agent", openai_client=client)
        agent = Agent(name="searcher", instructions=INSTRUCTIONS, mcp_servers=[server], model=model)
        result = await Runner.run(agent, question, max_turns=10, run_config=RunConfig(tracing_disabled=True))
        text = str(result.final_output)
        await server.call_tool("final_answer", {"answer": text})
    return text


def test_an_agents_sdk_agent_searches_through_searchtrace_mcp(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    q = write_questions(qfile, 1)[0]
    db = tmp_path / "a.duckdb"
    with sandbox_served() as exports:
        text = anyio.run(_answer, exports["OPENAI_BASE_URL"], db, qfile, q["qid"], q["question"])
    assert text.startswith("FINAL ANSWER:")
    events = [(t, json.loads(p)) for t, p in rows(db, "SELECT type, payload FROM events WHERE run_id = 'agents' "
                                                      "AND stream_id LIKE 'traj:%' ORDER BY position")]
    types = [t for t, _ in events]
    assert types[0] == "trajectory.started" and types[-2:] == ["answer.final", "trajectory.finished"]
    searches = [p for t, p in events if t == "search.called"]
    assert searches and searches[0]["query"] == q["question"] and searches[0]["provider"] == "tavily"
    assert types.count("search.result") >= 3
    final = events[-2][1]
    assert final["text"] == text.removeprefix("FINAL ANSWER:").strip() and final["text"] == q["answer"]
    assert events[-1][1]["reason"] == "answered"
