"""Claude and Gemini agents through `searchtrace proxy` (docs/how-to/claude-gemini.md): the official `anthropic` client
(plain, streamed, tool use; by path and by one base URL with ANTHROPIC_CUSTOM_HEADERS) and the `google-genai` client
(plain and streamed) record every turn, tool call, search and fetch with the model and the API; beside an OpenAI
arm on the same questions they are judged and reported `--by model`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest

from searchtrace.store import AnswerFinal, FetchCalled, ModelResponded, SearchCalled, TrajectoryFinished
from tests.proxy.support import cli, proxy, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

SEARCH = {"name": "search", "description": "Web search.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
READ = {"name": "read_page", "description": "Read a page.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}
SYSTEM = "Search, then answer with a line `FINAL ANSWER: <answer>`."


def tool(base: str, name: str, args: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    """One tool call through the proxy's tavily and jina routes below `base` (a trajectory's prefix, or the root
    with the trajectory header)."""
    if name == "search":
        return httpx.post(f"{base}/tavily/search", json={"query": args["query"]}, headers=headers, timeout=HANG_S).text
    return httpx.get(f"{base}/jina/{args['url']}", headers={**(headers or {}), "Accept": "text/plain"}, timeout=HANG_S).text


def openai_arm(root: str, qid: str, question: str) -> int:
    """The OpenAI chat client's loop; returns how many model calls it made."""
    import openai
    base = f"{root}/t/tavily/{qid}"
    with openai.OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key", max_retries=0) as client:
        messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        tools: Any = [{"type": "function", "function": t} for t in (SEARCH, READ)]
        for n in range(1, 9):
            reply = client.chat.completions.create(model="sandbox-agent-gpt", messages=messages, tools=tools)
            msg = reply.choices[0].message
            if not msg.tool_calls:
                return n
            messages.append(msg.model_dump(exclude_none=True))
            for c in msg.tool_calls:
                messages.append({"role": "tool", "tool_call_id": c.id,
                                 "content": tool(base, c.function.name, json.loads(c.function.arguments))})  # type: ignore[union-attr]
        raise AssertionError("no answer in 8 turns")


def claude_arm(root: str, qid: str, question: str, *, header: bool) -> int:
    """The official anthropic client's loop, first turn plain, then streamed; by the path prefix, or by one base URL
    and the trajectory header read from ANTHROPIC_CUSTOM_HEADERS (set by the caller)."""
    from anthropic import Anthropic
    base = root if header else f"{root}/t/tavily/{qid}"
    hdrs = {"X-Searchtrace-Trajectory": f"tavily/{qid}"} if header else None
    with mock.patch.dict(os.environ, {"ANTHROPIC_CUSTOM_HEADERS": f"X-Searchtrace-Trajectory: tavily/{qid}"} if header else {}):
        client = Anthropic(base_url=f"{base}/anthropic", api_key="not-a-key", max_retries=0)  # reads the variable
    with client:
        tools: Any = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in (SEARCH, READ)]
        messages: list[Any] = [{"role": "user", "content": question}]
        for n in range(1, 9):
            if n == 1:
                reply = client.messages.create(model="sandbox-agent-claude", max_tokens=1024, system=SYSTEM, tools=tools,
                                               messages=messages)
            else:
                with client.messages.stream(model="sandbox-agent-claude", max_tokens=1024, system=SYSTEM, tools=tools,
                                            messages=messages) as s:
                    reply = s.get_final_message()
            uses = [b for b in reply.content if b.type == "tool_use"]
            if reply.stop_reason != "tool_use":
                return n
            messages.append({"role": "assistant", "content": reply.content})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": tool(base, b.name, dict(b.input), hdrs)}  # type: ignore[union-attr,arg-type]
                for b in uses]})
        raise AssertionError("no answer in 8 turns")


def gemini_arm(root: str, qid: str, question: str) -> int:
    """The google-genai client's loop, plain and streamed turns alternating."""
    from google import genai
    from google.genai import types as gt
    base = f"{root}/t/tavily/{qid}"
    with genai.Client(api_key="not-a-key", http_options=gt.HttpOptions(base_url=f"{base}/gemini")) as client:
        decls = [gt.FunctionDeclaration(name=t["name"], description=t["description"], parameters_json_schema=t["parameters"])
                 for t in (SEARCH, READ)]
        config = gt.GenerateContentConfig(system_instruction=SYSTEM, tools=[gt.Tool(function_declarations=decls)],
                                          automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True))
        contents: list[Any] = [gt.Content(role="user", parts=[gt.Part(text=question)])]
        for n in range(1, 9):
            if n % 2:
                parts = list((client.models.generate_content(model="sandbox-agent-gemini", contents=contents,
                                                             config=config).candidates or [])[0].content.parts or [])  # type: ignore[union-attr]
            else:
                parts = [p for ch in client.models.generate_content_stream(model="sandbox-agent-gemini", contents=contents,
                                                                          config=config)
                         for p in (ch.candidates or [])[0].content.parts or []]  # type: ignore[union-attr]
            calls = [p.function_call for p in parts if p.function_call]
            if not calls:
                return n
            contents.append(gt.Content(role="model", parts=parts))
            contents.append(gt.Content(role="user", parts=[
                gt.Part(function_response=gt.FunctionResponse(id=c.id, name=c.name,
                                                              response={"result": tool(base, c.name or "", dict(c.args or {}))}))
                for c in calls]))
        raise AssertionError("no answer in 8 turns")


Arm = Callable[[str, str, str], int]


@pytest.mark.parametrize("final", ["last-reply"])
def test_claude_and_gemini_beside_openai_recorded_judged_and_reported_by_model(
        tmp_path: Path, final: str) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 2)
    db = tmp_path / "arms.duckdb"
    made: dict[str, dict[str, int]] = {}
    arms: dict[str, Arm] = {
        "openai": openai_arm,
        "claude": lambda root, qid, q: claude_arm(root, qid, q, header=qid == rows[1]["qid"]),
        "gemini": gemini_arm,
    }
    for arm, run in arms.items():
        with proxy(db, qfile, f"arm-{arm}", extra=("--final", final)) as p:
            made[arm] = {r["qid"]: run(p.url, r["qid"], r["question"]) for r in rows}
            assert p.stop() == 0, p.log.read_text()

    recorded = streams(db)
    apis = {"openai": "chat", "claude": "anthropic", "gemini": "gemini"}
    for arm, calls in made.items():
        for row in rows:
            events = [e for _, _, e in recorded[f"traj:arm-{arm}:tavily:{row['qid']}"]]
            turns = [e for e in events if isinstance(e, ModelResponded)]
            assert len(turns) == calls[row["qid"]] >= 2  # every turn, plain and streamed
            assert {(t.model, t.api) for t in turns} == {(f"sandbox-agent-{'gpt' if arm == 'openai' else arm}", apis[arm])}
            assert all(isinstance(t.request_messages, list) and t.usage.input_tokens > 0 for t in turns)
            assert sum(len(t.tool_calls) for t in turns) == sum(isinstance(e, SearchCalled | FetchCalled) for e in events)
            assert any(isinstance(e, SearchCalled) for e in events) and any(isinstance(e, FetchCalled) for e in events)
            answer = next(e for e in events if isinstance(e, AnswerFinal))
            assert answer.text == row["answer"]  # the FINAL ANSWER: prefix stripped by the one rule
            assert isinstance(events[-1], TrajectoryFinished) and events[-1].reason == "answered"
        assert any(t.usage.cached_tokens > 0 for _, _, t in recorded[f"traj:arm-{arm}:tavily:{rows[0]['qid']}"]
                   if isinstance(t, ModelResponded))

    judged = cli("judge", "--db", str(db), "--sandbox", "--no-progress")
    assert judged.returncode == 0, judged.stderr
    prices = tmp_path / "prices.toml"  # the agent's cost, priced by the model its turns name
    prices.write_text('as_of = "2026-12-01"\n[search]\ntavily = 8.0\n' + "".join(
        f'[models."sandbox-agent-{m}"]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n' for m in ("gpt", "claude", "gemini")))
    report = cli("report", "--db", str(db), "--by", "model", "--json", "--prices", str(prices))
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["by"] == "model"
    assert sorted(data["arms"]) == ["sandbox-agent-claude", "sandbox-agent-gemini", "sandbox-agent-gpt"]
    assert all(a["trajectories"] == 2 for a in data["arms"].values())
    text = json.dumps(data)
    assert "agent_model_usd" in text and '"agent_model_usd": null' not in text
