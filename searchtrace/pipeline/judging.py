"""Judge every recorded item (SPEC §4) with a chat model: the real endpoint or the sandbox judge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from searchtrace.adapters.protocols import ClosableChat
from searchtrace.adapters.registry import SANDBOX_KEY, build_chat, default_endpoint, sandbox_endpoint
from searchtrace.adapters.sandbox import in_process
from searchtrace.pipeline.live import serving_reads
from searchtrace.replay.judge import JudgeStats, run_judge
from searchtrace.replay.judge_prompt import JudgePrompt
from searchtrace.store.log import EventLog

SANDBOX_JUDGE = "sandbox-judge"


def judge_chat(
    *, model: str, base_url: str | None = None, key_env: str | None = None, rps: float, concurrency: int,
    timeout_s: float, max_retries: int, sandbox: bool = False, sandbox_url: str | None = None,
) -> ClosableChat:
    """The judge's chat adapter: the production OpenAI-compatible one, in-process for `sandbox`, or at `sandbox_url`."""
    limits: dict[str, Any] = {"rps": rps, "concurrency": concurrency, "timeout_s": timeout_s, "max_retries": max_retries}
    if sandbox or sandbox_url:
        box = in_process() if sandbox else None
        root = box.root if box is not None else str(sandbox_url)
        return build_chat(model, sandbox_endpoint("openai", root, **limits),
                          transport=box.transport if box is not None else None, key_fallback=SANDBOX_KEY)
    return build_chat(model, default_endpoint("openai", base_url=base_url, key_env=key_env, **limits))


async def judge(
    db: Path, chat: ClosableChat, *, model: str, judge_run_id: str | None = None, prompt_version: str | None = None,
    prompt: JudgePrompt | None = None, concurrency: int = 8, params: dict[str, Any] | None = None,
    progress: Callable[[JudgeStats], None] | None = None,
) -> JudgeStats:
    """Opens the store, judges what this judge run has no verdict for yet, then closes the chat and the store."""
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        with serving_reads(log):
            return await run_judge(log, model=model, chat=chat, judge_run_id=judge_run_id,
                                   prompt_version=prompt_version, prompt=prompt, concurrency=concurrency,
                                   params=params, progress=progress)
    finally:
        await chat.aclose()
        await anyio.to_thread.run_sync(log.close)
