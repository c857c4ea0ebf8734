"""docs/concepts/shown.md: the same interaction recorded through our agent loop, through `searchtrace proxy` and by trace-file import gives
the same payload bytes, in the fields each path can know.

The interaction: the sandbox's scripted chat model (`sandbox-agent`, deterministic: the same request gets the same
reply bytes) answering two sandbox questions with Tavily and Jina Reader — one with a search, a fetch and an answer,
one with two searches in one turn. Our `Agent` records it first (production adapters over the in-process sandbox);
an official-openai-client agent then replays the same turns through a real `searchtrace proxy --upstream sandbox`
(the same messages and tools, the same search bodies and page URLs, in the recorded order); the same trajectory is
then written as a trace line and imported into a third store.

Agent and proxy differ in call ids alone (besides latencies): see `_call_ids_as_the_proxy_numbers_them`. They agree
here because of how this interaction is made, and would differ by nature otherwise: no fetch cache (a cache hit
makes no request the proxy could see), no retries (the agent records each `call.retried`; the proxy makes one
attempt), no refused tool call (a client's refusals never reach the proxy), and a search API with a JSON body (a
GET API's parameters reach the proxy as query-string text, while the agent records its typed config).
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from searchtrace.adapters.sandbox import ROOT, create_app, in_process
from searchtrace.engine import (
    Fetch,
    Folded,
    Recorder,
    Search,
    Trajectory,
    endpoint_factory,
    fold,
    get_prompt,
    make_agents,
    point_at_sandbox,
    question_file,
)
from searchtrace.pipeline import sandbox_rows
from searchtrace.store import ModelResponded, Payload, type_of
from tests.builders import run_cli, sandbox_config
from tests.proxy.support import proxy, streams

RUN = "same"
PROVIDER = "tavily"  # a JSON-body search API: its parameters reach the proxy with their JSON types
QIDS = ("sbx-a808a0ab03", "sbx-9b53a86f31")  # search, fetch, answer; two searches in one turn, answer

# Latencies differ by nature (two recordings of one interaction never take the same time): the only normalised
# fields. The proxy also records provider_ms = latency_ms and queue_ms = 0 (one attempt, no limits of its own).
LATENCY = frozenset({"latency_ms", "provider_ms", "queue_ms"})

# What a trace-file import cannot know, by field (it is not in a trace line), so it is left out of the agent-vs-import
# comparison only:
# - model.responded: the reply (text, tool_calls, finish_reason), its raw body (raw_digest) and the request
#   (request_sha256, request_messages, tools_digest): a trace-file model step carries its iteration and usage alone, and
#   its usage has no cached_tokens (so neither has the usage summed in trajectory.finished);
# - search.called params, search.completed raw_digest / http_status: a search step is its query and results;
# - fetch.completed n_bytes / http_status: a fetch step has the page text (import counts its UTF-8 bytes), not
#   the bytes of the Reader answer around it.
NOT_IN_A_TRACE_LINE = {
    "model.responded": {"text", "tool_calls", "finish_reason", "raw_digest", "request_sha256", "request_messages",
                        "tools_digest", "usage.cached_tokens"},
    "search.called": {"params"},
    "search.completed": {"raw_digest", "http_status"},
    "fetch.completed": {"n_bytes", "http_status"},
    "trajectory.finished": {"usage.cached_tokens"},
}


def shared(payloads: list[Payload], unknown: dict[str, set[str]] | None = None) -> list[bytes]:
    """Each payload's JSON without latencies (and without the fields named in `unknown` by event type, `a.b` for
    field b of field a)."""
    out = []
    for p in payloads:
        body = msgspec.to_builtins(p)
        for name in LATENCY | (unknown or {}).get(type_of(p), set()):
            outer, _, inner = name.partition(".")
            if inner:
                body[outer].pop(inner, None)
            else:
                body.pop(outer, None)
        out.append(msgspec.json.encode(body))
    return out


async def _agent_path(tmp: Path) -> dict[str, Recorder]:
    """Our agent loop over the production adapters, against the in-process sandbox."""
    cfg = sandbox_config(tmp, n=None)
    cfg.providers = {PROVIDER: cfg.providers[PROVIDER]}
    point_at_sandbox(cfg, ROOT)
    questions = {q.qid: q for q in question_file("sandbox", rows=sandbox_rows("sandbox"))}
    out: dict[str, Recorder] = {}
    async with AsyncExitStack() as stack:
        eps = await endpoint_factory(in_process(create_app()).transport)(cfg, stack)
        agent = make_agents(cfg, eps, get_prompt())[PROVIDER]
        for qid in QIDS:
            q = questions[qid]
            traj = Trajectory(run_id=RUN, provider=PROVIDER, qid=qid, question=q.question, gold_answer=q.answer)
            rec = out[traj.trajectory_id] = Recorder(traj)
            await agent.run(traj, rec)
    return out


def _replay_through_proxy(url: str, rec: Recorder, f: Folded) -> None:
    """The recorded turns again, as a client of the proxy: each model request through the official openai client
    (the messages and tools our agent sent, from the request blobs), each search and fetch as our adapters sent it."""
    from openai import OpenAI
    assert f.started is not None
    base = f"{url}/t/{PROVIDER}/{f.started.qid}"
    with OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key", max_retries=0) as chat:
        with httpx.Client(timeout=30) as http:
            for step in f.steps:
                if isinstance(step, ModelResponded):
                    assert not isinstance(step.request_messages, msgspec.UnsetType)
                    assert not isinstance(step.tools_digest, msgspec.UnsetType)
                    messages = [json.loads(rec.blobs[d]) for d in step.request_messages]
                    tools = json.loads(rec.blobs[step.tools_digest])
                    reply = chat.chat.completions.create(model="sandbox-agent", messages=messages, tools=tools)
                    assert reply.choices[0].message.content == step.text  # the scripted model answers alike
                elif isinstance(step, Search):
                    r = http.post(f"{base}/tavily/search", json={"query": step.called.query, **step.called.params})
                    assert r.status_code == 200, r.text
                elif isinstance(step, Fetch):
                    r = http.get(f"{base}/jina/{step.called.url}", headers={"Accept": "application/json"})
                    assert r.status_code == 200, r.text
                else:
                    raise AssertionError(f"a step the client cannot replay: {step!r}")
            assert f.final is not None
            assert http.post(f"{base}/final", json={"answer": f.final.text}).status_code == 200
        chat.close()


def _trace_line(f: Folded, rec: Recorder) -> dict[str, Any]:
    """The trajectory as a docs/reference/interchange.md trace line (what another harness would write of it)."""
    assert f.started is not None and f.finished is not None
    steps: list[dict[str, Any]] = []
    for step in f.steps:
        if isinstance(step, ModelResponded):
            u = step.usage
            steps.append({"kind": "model", "iteration": step.iteration, "latency_ms": step.latency_ms,
                          "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                    "reasoning_tokens": u.reasoning_tokens},
                          "model": step.model, "api": step.api})  # the model that answered, over which API
        elif isinstance(step, Search):
            assert step.completed is not None
            steps.append({"kind": "search", "iteration": step.called.iteration, "call_id": step.called.call_id,
                          "query": step.called.query, "latency_ms": step.completed.latency_ms,
                          "results": [{"doc_id": r.doc_id, "rank": r.rank, "url": r.url, "title": r.title,
                                       "domain": r.domain, "snippet": r.snippet, "metadata": r.metadata}
                                      for r in step.results]})
        elif isinstance(step, Fetch):
            done = step.completed
            assert done is not None and done.doc_id is not None and done.content_digest is not None
            steps.append({"kind": "fetch", "iteration": step.called.iteration, "call_id": step.called.call_id,
                          "doc_id": done.doc_id, "url": step.called.url, "status": done.status,
                          "content": rec.blobs[done.content_digest].decode(), "n_tokens": done.n_tokens,
                          "latency_ms": done.latency_ms})
    return {"trajectory_id": f.started.trajectory_id, "provider": f.started.provider, "qid": f.started.qid,
            "question": f.started.question, "gold_answer": f.started.gold_answer,
            "final_answer": f.final.text if f.final else None, "stop_reason": f.finished.reason, "steps": steps,
            "run_id": RUN}


def _call_ids_as_the_proxy_numbers_them(payloads: list[Payload]) -> list[Payload]:
    """The proxy sees HTTP requests, not which tool call of the model each answers: it numbers searches s1, s2, …
    and fetches f1, f2, … (Builder's own numbering). Our agent uses the model's tool-call ids. Renamed here, by
    order of appearance, so that everything else is compared byte for byte."""
    names: dict[str, str] = {}
    counts = {"search.called": 0, "fetch.called": 0}
    out = []
    for p in payloads:
        tag = type_of(p)
        if tag in counts:
            counts[tag] += 1
            names[p.call_id] = ("s" if tag == "search.called" else "f") + str(counts[tag])  # type: ignore[union-attr]
        call_id = getattr(p, "call_id", None)
        out.append(msgspec.structs.replace(p, call_id=names[call_id]) if call_id in names else p)  # type: ignore[arg-type]
    return out


def test_agent_proxy_and_import_record_the_same_payload_bytes(tmp_path: Path) -> None:
    recorded = anyio.run(_agent_path, tmp_path)
    folded = {tid: fold(rec.payloads) for tid, rec in recorded.items()}
    for f in folded.values():  # the interaction is worth comparing: searches with results, a fetch, an answer
        assert f.finished is not None and f.finished.reason == "answered" and f.final is not None
        assert all(s.results for s in f.searches.values())
    assert sum(len(f.fetches) for f in folded.values()) >= 1
    assert any(len([s for s in f.searches.values() if s.called.iteration == 1]) == 2 for f in folded.values())

    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"qid": f.started.qid, "question": f.started.question,
                                             "answer": f.started.gold_answer}) + "\n"
                                 for f in folded.values() if f.started is not None))
    proxied_db = tmp_path / "proxy.duckdb"
    with proxy(proxied_db, questions, RUN) as p:
        for tid, f in folded.items():
            _replay_through_proxy(p.url, recorded[tid], f)
    proxied = {stream.removeprefix("traj:"): [pl for _, _, pl in evs] for stream, evs in streams(proxied_db).items()}

    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(_trace_line(f, recorded[tid])) + "\n" for tid, f in folded.items()))
    imported_db = tmp_path / "import.duckdb"
    code, _, err = run_cli("import", "--db", str(imported_db), str(traces))
    assert code == 0, err
    imported = {stream.removeprefix("traj:"): [pl for _, _, pl in evs] for stream, evs in streams(imported_db).items()}

    assert set(proxied) == set(imported) == set(recorded)
    for tid, rec in recorded.items():
        agent = rec.payloads
        # agent and proxy: every field but latencies and the minted call ids, request messages and raw bodies too
        assert shared(_call_ids_as_the_proxy_numbers_them(agent)) == shared(proxied[tid]), tid
        # agent and import: every field a trace line carries (call ids included: a trace line keeps them)
        assert shared(agent, NOT_IN_A_TRACE_LINE) == shared(imported[tid], NOT_IN_A_TRACE_LINE), tid
