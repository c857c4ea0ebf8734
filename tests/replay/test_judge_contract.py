"""The judge sees the same document text the answer model saw (docs/concepts/protocol.md), on a real recorded sandbox run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from searchtrace.adapters import ChatResponse
from searchtrace.replay import JudgeOptions, run_judge
from searchtrace.store import EventLog, JudgeVerdict, RunStarted, TrajectoryStarted

CONFIG = """
[agent]
model = "sandbox-agent"
[providers.brave]
[providers.tavily]
[providers.firecrawl]
[dataset]
path = "sandbox"
[sample]
n = 2
"""
_DOC = re.compile(r"<document .*?</document>", re.S)
_PAGE = re.compile(r"\n<page>.*</page>", re.S)


class Capturing:
    """Delegates to the sandbox judge and keeps each call's user message by trace id."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: dict[str, str] = {}

    async def complete(self, messages: list[dict[str, Any]], **kw: Any) -> ChatResponse:
        self.seen[kw["trace_id"]] = messages[-1]["content"]
        return await self.inner.complete(messages, **kw)


@pytest.mark.anyio
async def test_judge_document_is_what_the_agent_saw(tmp_path: Path) -> None:
    from searchtrace import pipeline
    from searchtrace.adapters import SANDBOX_KEY, build_chat, sandbox_endpoint
    from searchtrace.adapters.sandbox import in_process
    from searchtrace.engine import get_prompt, load_config, point_at_sandbox, rebuild_messages

    (tmp_path / "run.toml").write_text(CONFIG)
    cfg = load_config(tmp_path / "run.toml")
    cfg.fetch.cache_dir = ""
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "rec.duckdb"
    await pipeline.record(cfg, db, box.transport, progress=False)
    chat = Capturing(build_chat("sandbox-judge", sandbox_endpoint("openai", box.root),
                                transport=box.transport, key_fallback=SANDBOX_KEY))
    with EventLog(db) as log:
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j"), chat=chat)
        await chat.inner.aclose()
        started = next(iter(log.read(types=["run.started"]))).payload
        assert isinstance(started, RunStarted)
        prompt = get_prompt(started.config["prompt"]["version"]).text
        seen_by_agent: dict[str, str] = {}
        for ev in log.read(types=["trajectory.started"]):
            assert isinstance(ev.payload, TrajectoryStarted)
            payloads = [e.payload for e in log.read(stream_id=ev.stream_id)]
            sent = rebuild_messages(payloads, prompt, log.get_blob)
            seen_by_agent[ev.payload.trajectory_id] = "\n".join(str(m["content"]) for m in sent[-1] if m["role"] == "tool")
        verdicts = {f"j|{e.payload.item.trajectory_id}|{e.payload.item.url_normalized}": e.payload
                    for e in log.read(types=["judge.verdict"]) if isinstance(e.payload, JudgeVerdict)}
    assert stats.done == stats.items == len(chat.seen) == len(verdicts) > 20
    pages = 0
    for trace, user in chat.seen.items():
        tid = trace.split("|")[1]
        blocks = _DOC.findall(user)
        assert len(blocks) == 1  # one document per call
        block = blocks[0]
        page = _PAGE.search(block)
        v = verdicts[trace]
        assert (page is not None) == (v.surface == "page") == (v.labels is not None and v.labels.page is not None)
        if page is None:
            assert block in seen_by_agent[tid]  # verbatim the block of its first appearance
        else:
            pages += 1
            assert _PAGE.sub("", block) in seen_by_agent[tid]
            assert page.group(0).strip() in seen_by_agent[tid]  # the page text the agent was shown
    assert pages > 0
