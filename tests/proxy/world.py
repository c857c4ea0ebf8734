"""A scripted upstream for the proxy's live mode: gzip and deflate bodies whatever the client asks, a slow search,
a slow stream, and chat replies whose usage and tool calls the request's last message chooses."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import zlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.proxy.support import write_questions

STREAM_WORDS = 20  # chunks of a streamed reply, STREAM_GAP_S apart
STREAM_GAP_S = 0.03
SLOW_S = 0.6  # a search whose query holds SLOW takes this long


class World:
    """The upstream app and what it saw (the Accept-Encoding of each request, chat requests, streams read out)."""

    def __init__(self) -> None:
        self.accept: list[str] = []
        self.chats = 0
        self.streams_done = 0
        self.slow_started = 0  # slow searches that reached the upstream (a test waits for them, never sleeps)
        self.slow_finished = 0  # ... and that the upstream has answered
        self.app = Starlette(routes=[
            Route("/tavily/search", self.search, methods=["POST"]),
            Route("/jina/{url:path}", self.fetch),
            Route("/openai/v1/chat/completions", self.chat, methods=["POST"]),
        ])

    def env(self, root: str) -> dict[str, str]:
        return {"TAVILY_API_KEY": "tvly-world-key-000", "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily",
                "JINA_API_KEY": "jina-world-key-000", "SEARCHTRACE_JINA_BASE_URL": f"{root}/jina",
                "OPENAI_API_KEY": "sk-world-key-000", "OPENAI_BASE_URL": f"{root}/openai/v1"}

    async def search(self, request: Request) -> Response:
        self.accept.append(request.headers.get("accept-encoding", ""))
        query = str((await request.json())["query"])
        if "SLOW" in query:
            self.slow_started += 1
            await asyncio.sleep(SLOW_S)
            self.slow_finished += 1
        if "BROTLI" in query:  # an encoding the proxy did not ask for and cannot decode
            return Response(b"\x8b\x00\x80not-really-brotli", headers={"content-encoding": "br",
                                                                        "content-type": "application/json"})
        body = json.dumps({"query": query, "results": [
            {"title": f"Result {i} for {query}", "url": f"https://world.example/{i}", "content": f"snippet {i}",
             "score": 1 - i / 10} for i in range(1, 4)]}).encode()
        return Response(gzip.compress(body), headers={"content-encoding": "gzip", "content-type": "application/json"})

    async def fetch(self, request: Request) -> Response:
        self.accept.append(request.headers.get("accept-encoding", ""))
        page = b"Title: A page\n\nMarkdown Content:\n# A page\n\nThe founding year is 1911."
        return Response(zlib.compress(page), headers={"content-encoding": "deflate", "content-type": "text/plain"})

    async def chat(self, request: Request) -> Response:
        self.accept.append(request.headers.get("accept-encoding", ""))
        self.chats += 1
        body = await request.json()
        last = str(body["messages"][-1].get("content") or "")
        if body.get("stream"):
            return StreamingResponse(self._stream(gzipped="GZ" in last), media_type="text/event-stream",
                                     headers={"content-encoding": "gzip"} if "GZ" in last else None)
        message: dict[str, Any] = {"role": "assistant", "content": f"reply to {last}"}
        if "TOOL" in last:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{self.chats}", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}
        usage = {"prompt_tokens": 150 if "BIG" in last else 10, "completion_tokens": 5}
        return Response(json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                    "usage": usage}), media_type="application/json")

    async def _stream(self, *, gzipped: bool) -> AsyncIterator[bytes]:
        squeeze = zlib.compressobj(wbits=31) if gzipped else None
        for i in range(STREAM_WORDS + 1):
            if i < STREAM_WORDS:
                chunk = {"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}
            else:
                chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": STREAM_WORDS}}
            data = f"data: {json.dumps(chunk)}\n\n".encode() + (b"data: [DONE]\n\n" if i == STREAM_WORDS else b"")
            yield squeeze.compress(data) + squeeze.flush(zlib.Z_SYNC_FLUSH) if squeeze else data
            await asyncio.sleep(STREAM_GAP_S)
        if squeeze:
            yield squeeze.flush()
        self.streams_done += 1


def wait_until(done: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    """Poll until `done()` (a loaded machine delays the other side; a fixed sleep would race it)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def streamed_text() -> str:
    return "".join(f"w{i} " for i in range(STREAM_WORDS))


def questions_with(path: Path, qids: list[str]) -> list[str]:
    """A question file of two sandbox questions plus one per extra qid; every qid in file order."""
    rows = write_questions(path, 2)
    extra = [{"qid": q, "question": f"question {i}", "answer": "1911"} for i, q in enumerate(qids)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows + extra))
    return [r["qid"] for r in rows] + qids
