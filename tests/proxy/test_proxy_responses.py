"""The Responses API through `searchtrace proxy` (docs/concepts/shown.md): the official client (plain, streamed, with tools,
`previous_response_id`), the OpenAI Agents SDK's default model and Inspect's `openai/` provider, each recorded with
what the model was sent, then judged and reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from searchtrace.store import FetchCalled, ModelResponded, SearchCalled, TrajectoryFinished
from tests.proxy.support import cli, proxy, run_example, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

TASK = Path(__file__).resolve().parents[1] / "data" / "inspect" / "search_task.py"
TOOLS = [{"type": "function", "name": "search", "description": "Web search.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
         {"type": "function", "name": "read_page", "description": "Read a page.",
          "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}]


def tool(root: str, qid: str, name: str, arguments: str) -> str:
    """Run one of TOOLS through the proxy's tavily and jina routes (epoch 2)."""
    args = json.loads(arguments)
    base, epoch = f"{root}/t/tavily/{qid}", {"X-Searchtrace-Epoch": "2"}
    if name == "search":
        return httpx.post(f"{base}/tavily/search", json={"query": args["query"]}, headers=epoch, timeout=HANG_S).text
    return httpx.get(f"{base}/jina/{args['url']}", headers={**epoch, "Accept": "text/plain"}, timeout=HANG_S).text


def blob(db: Path, digest: str) -> Any:
    """One stored blob (a request message or tool list) as JSON, read with DuckDB directly."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT bytes FROM blobs WHERE sha256 = ?", [digest]).fetchone()
    finally:
        con.close()
    assert row is not None, digest
    data = bytes(row[0])
    try:
        data = zlib.decompress(data)
    except zlib.error:
        pass
    return json.loads(data)


def turns(events: list[tuple[int, str, object]]) -> list[ModelResponded]:
    return [p for _, _, p in events if isinstance(p, ModelResponded)]


def test_responses_api_recorded_through_the_proxy(tmp_path: Path) -> None:
    import openai
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 2)
    q0 = rows[0]["qid"]
    db = tmp_path / "r.duckdb"
    with proxy(db, qfile, "resp") as p:
        # the official client, epoch 2 of tavily/q0: a tool call, then the chained answer, streamed
        base = f"{p.url}/t/tavily/{q0}/openai/v1"
        with openai.OpenAI(base_url=base, api_key="not-a-key", default_headers={"X-Searchtrace-Epoch": "2"},
                               max_retries=0) as client:
            first = client.responses.create(model="sandbox-agent", instructions="Search, then answer.",
                                            input=rows[0]["question"], tools=TOOLS)  # type: ignore[arg-type]
            reply, sent = first, []
            for _ in range(6):  # chained by previous_response_id, streamed after the first turn
                calls = [o for o in reply.output if o.type == "function_call"]
                if not calls:
                    break
                outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": tool(p.url, q0, c.name, c.arguments)}
                           for c in calls]
                sent.append(outputs)
                with client.responses.stream(model="sandbox-agent", previous_response_id=reply.id, tools=TOOLS,  # type: ignore[arg-type]
                                             instructions="Search, then answer.", input=outputs) as s:  # type: ignore[arg-type]
                    reply = s.get_final_response()
            assert rows[0]["answer"] in reply.output_text
            # the OpenAI Agents SDK with its default model (Responses API), brave trajectories
            one = tmp_path / "q1.jsonl"  # one question is enough for the SDK (its turns are checked one by one below)
            one.write_text(json.dumps(rows[1]) + "\n")
            answers = run_example("openai_agents_agent.py", p.url, one, tmp_path / "seen.jsonl")
            # Inspect's openai/ provider on the Responses API, tavily/q0 epoch 1 (its CLI, as a user runs it)
            pytest.importorskip("inspect_ai")
            env = {**os.environ, "SEARCHTRACE_SANDBOX_URL": f"{p.url}/t/tavily/{q0}", "OPENAI_API_KEY": "not-a-key",
                   "OPENAI_BASE_URL": f"{p.url}/t/tavily/{q0}/openai/v1"}
            ev = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", TASK.name, "-T", "provider=tavily",
                                 "--model", "openai/sandbox-agent", "-M", "responses_api=true", "--sample-id", q0,
                                 "--log-dir", str(tmp_path / "logs"), "--display", "none"],
                                cwd=TASK.parent, env=env, capture_output=True, text=True, timeout=180)
            assert ev.returncode == 0, ev.stderr
            assert p.stop() == 0
    assert f"{rows[1]['qid']}: {rows[1]['answer']}" in answers
    recorded = streams(db)

    chained = turns(recorded[f"traj:resp:tavily:{q0}~2"])
    assert len(chained) == len(sent) + 1 >= 2 and chained[-1].text == reply.output_text
    assert all(t.tool_calls for t in chained[:-1]) and chained[-1].usage.cached_tokens > 0
    digests = [t.request_messages for t in chained]
    assert all(isinstance(d, list) for d in digests)
    assert blob(db, digests[0][0]) == {"role": "system", "content": "Search, then answer."}  # type: ignore[index]
    for k in range(1, len(chained)):  # previous_response_id resolved: each request holds the one before, its reply
        before, now = digests[k - 1], digests[k]  # and the tool outputs sent
        assert isinstance(before, list) and isinstance(now, list)
        # each request's own instructions first, never carried on (as OpenAI does): one system message, not k
        assert now[0] == before[0] and now[1: len(before)] == before[1:] and len(now) == len(before) + 1 + len(sent[k - 1])
        assert [c["id"] for c in blob(db, now[len(before)])["tool_calls"]] == [c.call_id for c in chained[k - 1].tool_calls]
        assert [blob(db, d) for d in now[len(before) + 1:]] == [
            {"role": "tool", "tool_call_id": o["call_id"], "content": o["output"]} for o in sent[k - 1]]
    assert [t["function"]["name"] for t in blob(db, chained[0].tools_digest)] == ["search", "read_page"]  # type: ignore[arg-type]

    for row in rows[1:]:  # the SDK's turns: tool calls, then the answer; searches recorded under brave
        events = recorded[f"traj:resp:brave:{row['qid']}"]
        got = turns(events)
        assert got[0].tool_calls and got[-1].text and got[-1].text.endswith(row["answer"])
        assert all(isinstance(t.request_messages, list) and t.usage.input_tokens > 0 for t in got)
        assert any(isinstance(p, SearchCalled) for _, _, p in events)
        last = events[-1][2]
        assert isinstance(last, TrajectoryFinished) and last.reason == "answered"

    inspected = recorded[f"traj:resp:tavily:{q0}"]
    got = turns(inspected)
    assert any(t.tool_calls for t in got) and got[-1].text and rows[0]["answer"] in got[-1].text
    assert any(isinstance(p, SearchCalled) for _, _, p in inspected) and any(isinstance(p, FetchCalled) for _, _, p in inspected)

    j = cli("judge", "--db", str(db), "--sandbox", "--json")
    assert j.returncode == 0, j.stderr
    rep = cli("report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    providers = json.loads(rep.stdout)["providers"]
    assert providers["brave"]["trajectories"] == 1 and providers["brave"]["exact_match"] == 1.0
    assert all(v["valid_items"] > 0 for v in providers.values())
