"""`proxy` relays an upstream reply longer than it records as it arrives: the agent gets every byte, the proxy's
memory stays bounded (it never holds the reply whole), and the call is recorded by its size, without its body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters.sandbox import running
from searchtrace.engine.proxy._app import MAX_RECORD
from searchtrace.store import CallFailed, FetchCompleted, SearchCompleted
from tests.proxy.support import proxy, streams, write_questions

BIG = 96 << 20  # six times what the proxy records
CHUNK = b"x" * (1 << 16)


class Huge:
    """An upstream whose every reply is BIG bytes, produced chunk by chunk (it holds none of it)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        kind = b"text/event-stream" if scope["path"].endswith("/chat/completions") else b"text/plain"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
        for _ in range(BIG // len(CHUNK)):
            await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def pull(url: str, method: str = "GET", **kw: Any) -> int:
    """Bytes of one streamed reply (read and dropped as they come)."""
    n = 0
    with httpx.stream(method, url, timeout=120, **kw) as r:
        assert r.status_code == 200, r.read()
        for chunk in r.iter_raw():
            n += len(chunk)
    return n


def test_a_reply_over_the_record_cap_is_streamed_and_recorded_by_size(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "big.duckdb"
    with running(Huge()) as root:
        env = {"JINA_API_KEY": "k", "SEARCHTRACE_JINA_BASE_URL": f"{root}/jina", "TAVILY_API_KEY": "k",
               "SEARCHTRACE_TAVILY_BASE_URL": f"{root}/tavily", "OPENAI_API_KEY": "k",
               "OPENAI_BASE_URL": f"{root}/openai/v1"}
        with proxy(db, qfile, "big", upstream="live", env=env) as p:
            base = f"{p.url}/t/tavily/{qid}"
            assert httpx.get(f"{p.url}/", timeout=120).status_code == 200
            start = peak_rss_kib(p.proc.pid)
            assert pull(f"{base}/jina/https://example.org/huge") == BIG
            assert pull(f"{base}/tavily/search", "POST", json={"query": "huge"}) == BIG
            assert pull(f"{base}/openai/v1/chat/completions", "POST",
                        json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}) == BIG
            grown_mib = (peak_rss_kib(p.proc.pid) - start) / 1024
            assert p.stop() == 0
    # bounded by the part recorded (16 MiB, ~66 MiB peak here), not by the reply (buffered whole: ~400 MiB)
    assert grown_mib < BIG >> 20, grown_mib
    (events,) = streams(db).values()
    payloads = [e[2] for e in events]
    fetched = next(x for x in payloads if isinstance(x, FetchCompleted))
    assert fetched.status == "too_large" and fetched.n_bytes == BIG and fetched.content_digest is None
    assert str(MAX_RECORD) in (fetched.error or "")
    searched = next(x for x in payloads if isinstance(x, SearchCompleted))
    assert searched.status == "bad_response" and searched.n_results == 0 and searched.raw_digest is None
    chat = next(x for x in payloads if isinstance(x, CallFailed))
    assert chat.status == "bad_response" and str(BIG) in (chat.error or "")
