"""Routing without a custom solver (docs/how-to/claude-gemini.md): a plain Inspect eval of many samples, its model
at one proxy base URL and its tools at the proxy's root, records each sample to its own trajectory: the model
call by its question's exact text (the provider named once through OPENAI_CUSTOM_HEADERS), each search and fetch
by the query or URL its trajectory's last turn asked for. A call that names nothing matchable is one clear 404."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from searchtrace.store import AnswerFinal, FetchCalled, ModelResponded, SearchCalled, TrajectoryFinished
from tests.proxy.support import proxy, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

TASK = '''
import json, os
import httpx
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool

ROOT = os.environ["PROXY_ROOT"]
ROWS = json.loads(os.environ["ROWS"])


@tool
def web_search():
    async def execute(query: str) -> str:
        """Search the web.

        Args:
            query: What to search for.
        """
        async with httpx.AsyncClient() as c:
            return (await c.post(f"{ROOT}/tavily/search", json={"query": query, "max_results": 5})).text

    return execute


@tool
def read_page():
    async def execute(url: str) -> str:
        """Read a web page.

        Args:
            url: The page's URL.
        """
        async with httpx.AsyncClient() as c:
            return (await c.get(f"{ROOT}/jina/{url}", headers={"Accept": "text/plain"})).text

    return execute


@task
def by_text() -> Task:
    return Task(dataset=[Sample(id=r["qid"], input=r["question"], target=r["answer"]) for r in ROWS],
                solver=[system_message("Answer with the tools; end with `FINAL ANSWER: <answer>`."),
                        use_tools(web_search(), read_page()), generate()],
                scorer=includes())
'''


def test_an_inspect_eval_of_many_samples_records_each_to_its_own_trajectory(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 5)
    (tmp_path / "by_text.py").write_text(TASK)
    db = tmp_path / "t.duckdb"
    with proxy(db, qfile, "bytext", extra=("--final", "last-reply")) as p:
        unnamed = httpx.post(f"{p.url}/openai/v1/chat/completions",
                             json={"model": "sandbox-agent", "messages": [{"role": "user", "content": "Hello?"}]}, timeout=HANG_S)
        assert unnamed.status_code == 404 and "word for word" in unnamed.json()["error"]["message"]
        env = {**os.environ, "PROXY_ROOT": p.url, "ROWS": json.dumps(rows), "OPENAI_API_KEY": "not-a-key",
               "OPENAI_BASE_URL": f"{p.url}/openai/v1", "OPENAI_CUSTOM_HEADERS": "X-Searchtrace-Trajectory: tavily"}
        ev = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "by_text.py", "--model", "openai/sandbox-agent",
                             "--log-dir", str(tmp_path / "logs"), "--display", "none", "--max-samples", "5"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert ev.returncode == 0, ev.stderr
        assert p.stop() == 0
    recorded = streams(db)
    assert sorted(recorded) == sorted(f"traj:bytext:tavily:{r['qid']}" for r in rows)
    assert sum(isinstance(e, FetchCalled) for evs in recorded.values() for _, _, e in evs) >= 4
    for r in rows:
        events = [e for _, _, e in recorded[f"traj:bytext:tavily:{r['qid']}"]]
        turns = [e for e in events if isinstance(e, ModelResponded)]
        assert len(turns) >= 2 and all(t.api in ("chat", "responses") and t.model == "sandbox-agent" for t in turns)
        asked = {a for t in turns for c in t.tool_calls for a in json.loads(c.arguments).values()}
        searches = [e for e in events if isinstance(e, SearchCalled)]
        assert searches and all(s.query in asked for s in searches)  # each search is one its own model asked for
        calls = sum(len(t.tool_calls) for t in turns)  # every tool call it made reached its own trajectory
        assert calls == sum(isinstance(e, SearchCalled | FetchCalled) for e in events)
        answer = next(e for e in events if isinstance(e, AnswerFinal))
        assert answer.text == r["answer"]
        assert isinstance(events[-1], TrajectoryFinished) and events[-1].reason == "answered"
