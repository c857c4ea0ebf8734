"""Helpers for engine tests against the sandbox: a capturing ASGI wrapper, configs, reading trajectories back."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.adapters.types import TRACE_HEADER_RAW
from searchtrace.engine.config import RunConfig, parse_config
from searchtrace.store.events import Payload
from searchtrace.store.log import EventLog

KINDS = ("brave", "tavily", "firecrawl")


class Capture:
    """Wraps the sandbox app; keeps the messages of every chat request per trace id, in arrival order."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state
        self.chats: dict[str, list[list[dict[str, Any]]]] = defaultdict(list)
        self.arrivals: list[tuple[str, str, float]] = []  # (trace id, path, perf_counter) of every request

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            trace_id = dict(scope["headers"]).get(TRACE_HEADER_RAW, b"").decode()
            self.arrivals.append((trace_id, scope["path"], time.perf_counter()))
        if scope.get("type") != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        trace = dict(scope["headers"]).get(TRACE_HEADER_RAW, b"").decode()
        self.chats[trace].append(msgspec.json.decode(body)["messages"])
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def config(tmp: Path, *, n: int | None = 6, dataset: str = "sandbox", **over: Any) -> RunConfig:
    """A run config for the sandbox personas with fast, test-friendly limits; `over` merges per top-level key."""
    ep = {"rps": 10_000.0, "concurrency": 16, "timeout_s": 5.0, "max_retries": 2, "max_wait_s": 0.05}
    data: dict[str, Any] = {
        "run_id": "t",
        "agent": {"model": "sandbox-agent", **ep},
        "providers": {k: dict(ep) for k in KINDS},
        "fetch": {**ep, "cache_dir": ""},
        "limits": {"max_trajectories": 8},
        "dataset": {"path": dataset},
        "sample": {"n": n, "seed": "t"},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            for k, v in value.items():
                if isinstance(v, dict) and isinstance(data[key].get(k), dict):
                    data[key][k] = {**data[key][k], **v}
                else:
                    data[key][k] = v
        else:
            data[key] = value
    return parse_config(data, "<test>")


def trajectories(log: EventLog) -> dict[str, list[Payload]]:
    """trajectory_id -> payloads in stream order."""
    out: dict[str, list[Payload]] = defaultdict(list)
    for ev in log.read():
        if ev.stream_id.startswith("traj:"):
            out[ev.stream_id[len("traj:") :]].append(ev.payload)
    return dict(out)


def check_chain(db: Path) -> None:
    """`searchtrace verify` (positions gap-free, stream sequences 0.., hash chain) on the store."""
    import duckdb

    from searchtrace.store.verify import verify

    con = duckdb.connect(str(db), read_only=True)
    try:
        report = verify(con)
    finally:
        con.close()
    assert report.ok, report.line()
