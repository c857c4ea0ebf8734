"""The whole pipeline on the embedded sandbox world: record personas (three, or all eleven), judge, grade, report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from searchtrace.adapters import (
    HOSTED_LAYERS,
    SANDBOX_KEY,
    build_chat,
    sandbox_endpoint,
)
from searchtrace.adapters.sandbox import InProcess, in_process
from searchtrace.analytics import Report
from searchtrace.engine import (
    PAPER_KINDS,
    PROVIDER_KINDS,
    RunSummary,
    point_at_sandbox,
    sandbox_config,
)
from searchtrace.pipeline._judging import SANDBOX_JUDGE
from searchtrace.pipeline._live import serving_reads
from searchtrace.pipeline._recording import record_into
from searchtrace.pipeline._reporting import grade_and_report
from searchtrace.replay import JudgeOptions, run_judge
from searchtrace.store import BadInput, EventLog


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
        stats = await run_judge(log, JudgeOptions(model=SANDBOX_JUDGE, concurrency=32), chat=chat)
    finally:
        await chat.aclose()
    out: dict[str, Any] = msgspec.to_builtins(stats)
    return out


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
    cfg = sandbox_config(n=n, cache_dir=str(out / "fetch-cache"), epochs=epochs, providers=providers, api=agent_api)
    point_at_sandbox(cfg, box.root)
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        with serving_reads(log):
            summary = await record_into(log, cfg, box.transport, progress=progress, label="demo")
            judged = await _judge(log, box)
            rep = await anyio.to_thread.run_sync(grade_and_report, log, db.parent / "report.html",
                                                 judged.get("judge_run_id"))
    finally:
        await anyio.to_thread.run_sync(log.close)
    return DemoResult(record=summary, judge=judged, db=str(db), html=str(rep.html), report=rep.data,
                      elapsed_s=time.perf_counter() - t0)
