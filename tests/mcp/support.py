"""The `mcp` SDK's client driving a real `searchtrace mcp` (stdio child process or HTTP server) through the sandbox's
scripted agent, and the stores' contents side by side."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from searchtrace.adapters.sandbox import free_port
from searchtrace.adapters.sandbox._agent import decide
from searchtrace.store import EventLog
from tests.builders import CLI, Served, served


def _env(db: Path) -> dict[str, str]:
    """This environment with the fetch cache beside the store (not the user's)."""
    return {**os.environ, "SEARCHTRACE_CACHE_DIR": str(db.parent / "cache")}


def stdio_server(db: Path, questions: Path, run_id: str, *extra: str, provider: str = "brave") -> StdioServerParameters:
    """`searchtrace mcp --sandbox` as a stdio child of the SDK's client (this interpreter, this checkout)."""
    return StdioServerParameters(command=sys.executable,
                                 args=["-c", CLI, "mcp", "--db", str(db), "--questions", str(questions),
                                       "--run-id", run_id, "--provider", provider, "--sandbox", *extra],
                                 env=_env(db))


Server = Served  # a running `searchtrace mcp --http`


@contextlib.contextmanager
def http_server(db: Path, questions: Path, run_id: str, *extra: str, provider: str = "brave") -> Iterator[Server]:
    port = free_port()
    with served(["mcp", "--db", str(db), "--questions", str(questions), "--run-id", run_id, "--provider", provider,
                 "--sandbox", "--http", "--port", str(port), *extra], port, db.with_suffix(f".{port}.log"), "mcp",
                env=_env(db), wait_s=60) as s:
        yield s


@contextlib.contextmanager
def sandbox_served() -> Iterator[dict[str, str]]:
    """`searchtrace sandbox serve --port 0` in a child process: the `export NAME=VALUE` lines it printed."""
    with subprocess.Popen([sys.executable, "-c", CLI, "sandbox", "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc:
        try:
            assert proc.stdout is not None
            exports: dict[str, str] = {}
            for line in proc.stdout:
                if line.startswith("export "):
                    name, _, value = line[len("export "):].strip().partition("=")
                    exports[name] = value
                if line.startswith("#   openai:"):  # the last example: everything is listening
                    break
            assert exports
            yield exports
        finally:
            proc.terminate()
            proc.wait(timeout=60)  # a hang guard: a loaded server may take seconds to stop


async def scripted_agent(client: Client, question: str, extra: dict[str, Any] | None = None,
                         max_turns: int = 10) -> str | None:
    """The sandbox's scripted agent (the `record --sandbox` model) with the MCP server's tools as its tools: each
    turn decided from the conversation so far, its tool calls made through `client` in order; a `FINAL ANSWER:`
    reply is given through `final_answer`. Returns the answer (None: no answer within `max_turns`)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for turn_no in range(max_turns):
        turn = decide(messages)
        if turn.text is not None:
            result = await client.call_tool("final_answer", {"answer": turn.text, **(extra or {})})
            assert not result.is_error, result.content
            return turn.text
        ids = [f"c{turn_no}-{k}" for k in range(len(turn.calls))]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in zip(ids, turn.calls, strict=True)]})
        for i, (name, args) in zip(ids, turn.calls, strict=True):
            result = await client.call_tool(name, {**args, **(extra or {})})
            text = result.content[0].text  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": i, "content": text})
    return None


def rows(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    log = EventLog(db, read_only=True)
    try:
        cur = log.cursor()
        try:
            return cur.execute(sql, params or []).fetchall()
        finally:
            cur.close()
    finally:
        log.close()


def tool_steps(db: Path, run_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """Per qid, the run's searches, results and fetches in order, as (type, call kind, query/doc_id/url, rank,
    snippet) — what two recordings of the same interaction must share."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for qid, typ, p in rows(db, """
        SELECT t.payload->>'qid', e.type, e.payload FROM events e
        JOIN events t ON t.stream_id = e.stream_id AND t.type = 'trajectory.started'
        WHERE e.run_id = ? AND e.type IN ('search.called', 'search.result', 'fetch.called', 'fetch.completed',
                                          'answer.final', 'trajectory.finished')
        ORDER BY e.position""", [run_id]):
        d = json.loads(p)
        fields = {"search.called": ("query", "provider", "params"),
                  "search.result": ("doc_id", "rank", "url_normalized", "title", "snippet", "surface_chars"),
                  "fetch.called": ("doc_id", "url"),
                  "fetch.completed": ("doc_id", "status", "content_digest", "n_bytes"),
                  "answer.final": ("text",), "trajectory.finished": ("reason",)}[typ]
        step = (typ, *(json.dumps(d[f], sort_keys=True) for f in fields))
        out.setdefault(qid, []).append(step)
    return out
