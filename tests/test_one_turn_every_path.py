"""One model turn recorded through every path gives the same four usage numbers and the same final answer
(docs/how-to/claude-gemini.md): the engine's agent and the proxy over each model API, `import` of a run.jsonl,
`import --from inspect` and `import --from otel`. The turn: 1,418 prompt tokens of which 832 cached, 120 output
tokens of which 64 reasoning, and the reply `FINAL ANSWER: 1937`; each provider reports it in its own convention."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import searchtrace.adapters._anthropic_messages as am
import searchtrace.adapters._gemini as gm
from searchtrace.adapters import Endpoint, build_chat
from searchtrace.adapters.sandbox import free_port, running, wait_listening
from searchtrace.engine import Agent, Recorder, Stats, Trajectory, get_prompt
from searchtrace.store import AnswerFinal, EventLog, ModelResponded, Payload
from tests.builders import model, run_cli, search, traj, trajectories, write_jsonl
from tests.engine.fakes import FakeFetch, FakeSearch
from tests.otel.test_otel_hostile import request, span

SLOW = 120.0  # seconds a proxied call may take on a loaded machine (a hang guard, not a tolerance)

TEXT = "FINAL ANSWER: 1937"
WANT = (1418, 832, 120, 64, "1937")  # input (all prompt tokens), cached, output (reasoning included), reasoning, answer

CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1418, "completion_tokens": 120, "total_tokens": 1538,
                  "prompt_tokens_details": {"cached_tokens": 832}, "completion_tokens_details": {"reasoning_tokens": 64}}}
RESPONSES = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-x",
             "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": TEXT, "annotations": []}]}],
             "usage": {"input_tokens": 1418, "input_tokens_details": {"cached_tokens": 832}, "output_tokens": 120,
                       "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 1538}}
CLAUDE = am.message(id_="msg_1", model="claude-x", text=TEXT, calls=[], stop_reason="end_turn",
                    usage={"input_tokens": 586, "cache_read_input_tokens": 832, "cache_creation_input_tokens": 0,
                           "output_tokens": 120, "output_tokens_details": {"thinking_tokens": 64}})
GEMINI = gm.reply(response_id="r1", model="gemini-x", text=TEXT, calls=[],
                  usage={"promptTokenCount": 1418, "cachedContentTokenCount": 832, "candidatesTokenCount": 56,
                         "thoughtsTokenCount": 64, "totalTokenCount": 1538})


async def _events(chunks: list[bytes]) -> Any:
    for c in chunks:
        yield c


async def scripted(request: Request) -> Response:
    """Each API's reply to any request: the one turn, streamed when the request asks for it."""
    path = request.url.path
    body = json.loads(await request.body() or b"{}")
    if path.endswith("/chat/completions"):
        return Response(json.dumps(CHAT), media_type="application/json")
    if path.endswith("/responses"):
        return Response(json.dumps(RESPONSES), media_type="application/json")
    if path.endswith("/v1/messages"):
        if body.get("stream"):
            return StreamingResponse(_events([am.sse_bytes(e, d) for e, d in am.stream_events(CLAUDE)]),
                                     media_type="text/event-stream")
        return Response(json.dumps(CLAUDE), media_type="application/json")
    if ":streamGenerateContent" in path:
        return StreamingResponse(_events([gm.sse_bytes(c) for c in gm.stream_chunks(GEMINI)]),
                                 media_type="text/event-stream")
    return Response(json.dumps(GEMINI), media_type="application/json")


APP = Starlette(routes=[Route("/{path:path}", scripted, methods=["POST"])])
BASES = {"chat": "openai/v1", "responses": "openai/v1", "anthropic": "anthropic", "gemini": "gemini"}
TRAJ = Trajectory(run_id="r", provider="tavily", qid="q1", question="When was Elmwyn Athletic founded?",
                  gold_answer="1937")


def first_turn_and_answer(payloads: list[Payload]) -> tuple[int, int, int, int, str]:
    turn = next(p for p in payloads if isinstance(p, ModelResponded))
    answer = next(p for p in payloads if isinstance(p, AnswerFinal))
    u = turn.usage
    return u.input_tokens, u.cached_tokens, u.output_tokens, u.reasoning_tokens, answer.text


def stored(db: Path) -> list[Payload]:
    with EventLog(db, read_only=True) as log:
        got = trajectories(log)
    assert len(got) == 1, sorted(got)
    return next(iter(got.values()))


def agent(api: str, tmp: Path) -> list[Payload]:
    async def go() -> list[Payload]:
        endpoint = Endpoint(base_url=f"http://scripted/{BASES[api]}", rps=0.0)
        async with build_chat("m", endpoint, transport=httpx.ASGITransport(app=APP), key_fallback="k", api=api) as chat:
            rec = Recorder(TRAJ)
            await Agent(chat=chat, search=FakeSearch(), fetch=FakeFetch(), prompt=get_prompt(),
                        stats=Stats()).run(TRAJ, rec)
        return list(rec.payloads)

    return anyio.run(go)


def proxied(api: str, tmp: Path) -> list[Payload]:
    """A live proxy in front of the scripted APIs; the agent's reply taken as its answer (--final last-reply)."""
    questions = write_jsonl(tmp / "q.jsonl", [{"qid": "q1", "question": TRAJ.question, "answer": "1937"}])
    db, port = tmp / "p.duckdb", free_port()
    with running(APP) as root:
        env = {**os.environ, "OPENAI_BASE_URL": f"{root}/openai/v1", "ANTHROPIC_BASE_URL": f"{root}/anthropic",
               "GOOGLE_GEMINI_BASE_URL": f"{root}/gemini", "OPENAI_API_KEY": "scripted-key-1",
               "ANTHROPIC_API_KEY": "scripted-key-2", "GEMINI_API_KEY": "scripted-key-3"}
        cmd = [sys.executable, "-c", "from searchtrace.cli import main; main()", "proxy", "--db", str(db), "--questions",
               str(questions), "--run-id", "p", "--port", str(port), "--upstream", "live", "--final", "last-reply"]
        with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            wait_listening(port, proc, 30, "proxy")
            base = f"http://127.0.0.1:{port}/t/tavily/q1/{BASES[api]}"
            user = [{"role": "user", "content": TRAJ.question}]
            if api == "chat":
                r = httpx.post(f"{base}/chat/completions", json={"model": "gpt-x", "messages": user}, timeout=SLOW)
            elif api == "responses":
                r = httpx.post(f"{base}/responses", json={"model": "gpt-x", "input": TRAJ.question}, timeout=SLOW)
            elif api == "anthropic":  # streamed: recorded whole
                r = httpx.post(f"{base}/v1/messages", json={"model": "claude-x", "max_tokens": 64, "messages": user,
                                                            "stream": True}, timeout=SLOW)
            else:
                r = httpx.post(f"{base}/v1beta/models/gemini-x:streamGenerateContent", params={"alt": "sse"},
                               json={"contents": [{"role": "user", "parts": [{"text": TRAJ.question}]}]}, timeout=SLOW)
            assert r.status_code == 200, r.text
            proc.terminate()
            assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    return stored(db)


def run_jsonl(tmp: Path) -> list[Payload]:
    line = traj("t1", "tavily", "q1", "1937", TEXT, [model(1, 1418, 120, reasoning=64),
                                                     search(1, "c1", [])])
    line["turns"] = [{"iteration": 1, "text": TEXT, "usage": {"input_tokens": 1418, "output_tokens": 120,
                                                               "reasoning_tokens": 64, "cached_tokens": 832}}]
    f = write_jsonl(tmp / "traces.jsonl", [line])
    db = tmp / "j.duckdb"
    r = run_cli("import", "--db", str(db), str(f))
    assert r.code == 0, r.err
    return stored(db)


def inspect_import(tmp: Path) -> list[Payload]:
    """The first sample of a real Inspect log, its first model turn as Inspect reports usage (cache apart)."""
    log_mod = pytest.importorskip("inspect_ai.log")
    logs = Path(__file__).resolve().parent / "data" / "inspect" / "logs"
    log = log_mod.read_eval_log(str(sorted(logs.glob("*.eval"))[0]))
    sample = (log.samples or [])[0]
    log.samples = [sample]
    first = next(e for e in sample.events if e.event == "model")
    first.output.usage = pytest.importorskip("inspect_ai.model").ModelUsage(
        input_tokens=586, output_tokens=120, total_tokens=1538, input_tokens_cache_read=832, reasoning_tokens=64)
    sample.output.completion = TEXT
    sample.output.choices[0].message.content = TEXT
    out = tmp / "one.json"
    log_mod.write_eval_log(log, str(out))
    db = tmp / "i.duckdb"
    r = run_cli("import", "--db", str(db), "--from", "inspect", str(out))
    assert r.code == 0, r.err
    return stored(db)


def otel_import(tmp: Path) -> list[Payload]:
    trace = "3" * 32
    spans = request(
        span(trace, 1, None, 1, **{"gen_ai.operation.name": "invoke_agent", "searchtrace.qid": "q1",
                                   "searchtrace.provider": "tavily", "searchtrace.gold_answer": "1937",
                                   "searchtrace.question": TRAJ.question, "output.value": TEXT}),
        span(trace, 2, 1, 2, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x",
                                "gen_ai.usage.input_tokens": 1418, "gen_ai.usage.cache_read.input_tokens": 832,
                                "gen_ai.usage.output_tokens": 120, "gen_ai.usage.reasoning_tokens": 64,
                                "gen_ai.output.messages": [{"role": "assistant",
                                                            "parts": [{"type": "text", "content": TEXT}]}]}))
    f = write_jsonl(tmp / "spans.jsonl", [spans])
    db = tmp / "o.duckdb"
    r = run_cli("import", "--db", str(db), "--from", "otel", str(f))
    assert r.code == 0, r.err
    return stored(db)


PATHS = {
    **{f"agent-{api}": functools.partial(agent, api) for api in BASES},
    **{f"proxy-{api}": functools.partial(proxied, api) for api in BASES},
    "import-run.jsonl": run_jsonl,
    "import-inspect": inspect_import,
    "import-otel": otel_import,
}


@pytest.mark.parametrize("path", list(PATHS))
def test_the_same_turn_through_every_path(path: str, tmp_path: Path) -> None:
    payloads = PATHS[path](tmp_path)
    assert first_turn_and_answer(payloads) == WANT
    turn = next(p for p in payloads if isinstance(p, ModelResponded))
    if path.startswith(("agent-", "proxy-")):  # the model that answered, from the reply, and the API
        assert (turn.model, turn.api) == ({"chat": "gpt-x", "responses": "gpt-x", "anthropic": "claude-x",
                                           "gemini": "gemini-x"}[path.split("-", 1)[1]], path.split("-", 1)[1])
