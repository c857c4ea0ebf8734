"""The whole pipeline on the embedded sandbox world: record personas (three, or all eleven), judge, grade, report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from searchtrace.adapters import (
    HOSTED_API,
    HOSTED_ENDPOINT,
    HOSTED_LAYERS,
    SANDBOX_KEY,
    agent_reply,
    build_chat,
    hosted_request,
    read_hosted,
    resolved,
    sandbox_endpoint,
)
from searchtrace.adapters.sandbox import InProcess, in_process
from searchtrace.analytics import Report
from searchtrace.engine import (
    PAPER_KINDS,
    PROVIDER_KINDS,
    SANDBOX_AGENT,
    Builder,
    RunSummary,
    final_answer,
    point_at_sandbox,
    sandbox_config,
    trajectory_id,
)
from searchtrace.pipeline._judging import SANDBOX_JUDGE
from searchtrace.pipeline._live import serving_reads
from searchtrace.pipeline._recording import record_into
from searchtrace.pipeline._reporting import grade_and_report
from searchtrace.replay import run_judge
from searchtrace.store import BadInput, DatasetQuestion, EventLog, NewEvent, trajectory_stream


class DemoResult(msgspec.Struct, kw_only=True):
    record: RunSummary
    judge: dict[str, Any]
    db: str
    html: str
    report: Report
    elapsed_s: float


async def _judge(log: EventLog, box: InProcess) -> dict[str, Any]:
    """Judges every recorded item with the sandbox's deterministic judge model."""
    chat = build_chat(SANDBOX_JUDGE, sandbox_endpoint("openai", box.root, concurrency=32), transport=box.transport,
                      key_fallback=SANDBOX_KEY)
    try:
        stats = await run_judge(log, model=SANDBOX_JUDGE, chat=chat, concurrency=32)
    finally:
        await chat.aclose()
    out: dict[str, Any] = msgspec.to_builtins(stats)
    return out


async def record_hosted(log: EventLog, box: InProcess, run_id: str, layers: Sequence[str]) -> int:
    """Each question of run `run_id` asked once of each hosted layer (docs/how-to/hosted.md) by the sandbox model over
    its API: the reply's searches, page reads and citations recorded as the layer's trajectory in the same run.
    Returns how many trajectories it recorded."""
    questions = [e.payload for e in log.read(types=["dataset.question"]) if e.run_id == run_id]
    n = 0
    async with httpx.AsyncClient(transport=box.transport, timeout=30.0) as client:
        for layer in layers:
            api = HOSTED_API[layer]
            base = sandbox_endpoint(HOSTED_ENDPOINT[api], box.root).base_url
            for q in questions:
                assert isinstance(q, DatasetQuestion)
                path, body = hosted_request(layer, SANDBOX_AGENT, q.question)
                t0 = time.perf_counter()
                resp = await client.post(base + path, json=body, headers={"Authorization": f"Bearer {SANDBOX_KEY}",
                                                                          "x-api-key": SANDBOX_KEY})
                latency = (time.perf_counter() - t0) * 1000
                b = Builder(trajectory_id(run_id, layer, q.qid))
                b.start(qid=q.qid, provider=layer, question=q.question, gold_answer=q.gold_answer)
                if resp.status_code != 200:
                    b.failed(what=f"chat:{SANDBOX_AGENT}", status="http_error", http_status=resp.status_code,
                             error=resp.text[:200])
                    b.finish("error", error=f"HTTP {resp.status_code}")
                else:
                    text, usage, finish = agent_reply(api, resp.content)
                    b.model(text=text, usage=usage, latency_ms=latency, finish_reason=finish, raw=resp.content,
                            messages=[{"role": "user", "content": q.question}], tools=body.get("tools"),
                            model=SANDBOX_AGENT, api=api)
                    turn = read_hosted(api, resp.content)
                    if turn is not None:
                        turn = await resolved(turn, client)
                        b.hosted(turn)
                    b.final(final_answer(text) or text or "", citations=turn.citations if turn else ())
                    b.finish("answered")
                payloads, blobs = b.take()
                stream = trajectory_stream(b.trajectory_id)
                events = [NewEvent(stream_id=stream, run_id=run_id, payload=p) for p in payloads]
                await anyio.to_thread.run_sync(partial(log.append, events, blobs=blobs))
                n += 1
    return n


def demo_providers(spec: str) -> tuple[str, ...]:
    """`--providers`: "paper" (the paper's three, as the registry marks them), "all" (every persona), "hosted" (the
    paper's three and the five hosted search layers, docs/how-to/hosted.md), or names separated by commas."""
    if spec == "paper":
        return PAPER_KINDS
    if spec == "hosted":
        return (*PAPER_KINDS, *HOSTED_LAYERS)
    if spec == "all":
        return (*PROVIDER_KINDS, *HOSTED_LAYERS)
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    unknown = [n for n in names if n not in PROVIDER_KINDS and n not in HOSTED_LAYERS]
    if unknown or not names:
        raise BadInput(f"--providers: unknown provider {', '.join(unknown) or '(none given)'} "
                       f"(known: paper, hosted, all, {', '.join((*PROVIDER_KINDS, *HOSTED_LAYERS))})")
    return names


async def demo(
    db: Path, out: Path, n: int | None, *, progress: bool | None = None, epochs: int = 1,
    providers: tuple[str, ...] = PAPER_KINDS, agent_api: str = "chat",
) -> DemoResult:
    """Records sandbox personas (the paper's three by default) on `n` questions, judges every item, grades and
    reports (report.html next to db)."""
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    box = in_process()
    layers = [p for p in providers if p in HOSTED_LAYERS]  # asked by record_hosted, after the search APIs' run
    apis = tuple(p for p in providers if p not in HOSTED_LAYERS) or PAPER_KINDS[:1]
    cfg = sandbox_config(n=n, cache_dir=str(out / "fetch-cache"), epochs=epochs, providers=apis, api=agent_api)
    point_at_sandbox(cfg, box.root)
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        with serving_reads(log):
            summary = await record_into(log, cfg, box.transport, progress=progress, label="demo")
            if layers:
                await record_hosted(log, box, summary.run_id, layers)
            judged = await _judge(log, box)
            rep = await anyio.to_thread.run_sync(grade_and_report, log, db.parent / "report.html",
                                                 judged.get("judge_run_id"))
    finally:
        await anyio.to_thread.run_sync(log.close)
    return DemoResult(record=summary, judge=judged, db=str(db), html=str(rep.html), report=rep.data,
                      elapsed_s=time.perf_counter() - t0)
