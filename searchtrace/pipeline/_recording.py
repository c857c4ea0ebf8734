"""Record a run: aim its config at a sandbox (or the real endpoints), open the store, fan out, close."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from searchtrace.adapters.sandbox import default_world, in_process, question_rows
from searchtrace.engine import (
    SANDBOX_DATASET,
    AdapterFactory,
    Question,
    RunConfig,
    RunSummary,
    Stats,
    endpoint_factory,
    load_questions,
    point_at_sandbox,
    preflight,
    progress_display,
    record_run,
)
from searchtrace.pipeline._live import live
from searchtrace.store import BadInput, EventLog, Shipped, check_url


def sandbox_rows(path: str) -> list[dict[str, Any]] | None:
    """The sandbox world's question rows when `path` is the dataset `sandbox`; None for a question file."""
    return list(question_rows(default_world().questions)) if path == SANDBOX_DATASET else None


def questions_of(cfg: RunConfig) -> list[Question]:
    """The run's questions (engine.load_questions), the dataset `sandbox` read from the sandbox world."""
    return load_questions(cfg, sandbox_rows(cfg.dataset.path))


def check_sandbox_url(sandbox_url: str | None) -> None:
    """A served sandbox is reached by an http(s) URL; anything else is bad input."""
    if sandbox_url and not sandbox_url.startswith(("http://", "https://")):
        raise BadInput(f"--sandbox-url: {sandbox_url!r} is not an http(s) URL")


def aim(cfg: RunConfig, *, sandbox: bool = False, sandbox_url: str | None = None) -> httpx.AsyncBaseTransport | None:
    """Points `cfg` at the in-process sandbox or a served one; returns the transport to record through (None: real HTTP)."""
    if sandbox:
        box = in_process()
        point_at_sandbox(cfg, box.root)
        return box.transport
    if sandbox_url:
        check_sandbox_url(sandbox_url)
        point_at_sandbox(cfg, sandbox_url)
    return None


async def record(
    cfg: RunConfig, db: Path, transport: httpx.AsyncBaseTransport | None = None, *, progress: bool | None = None,
    ship_to: str | None = None, on_shipped: Callable[[Shipped], None] | None = None,
    shard: tuple[int, int] | None = None, questions: list[Question] | None = None,
    endpoints: AdapterFactory | None = None, stats: Stats | None = None,
) -> RunSummary:
    """Opens the store, records every cell not final yet, closes; BadInput from inside the fan-out comes out as itself.

    `ship_to`: a PostgreSQL log the store's committed events are shipped to every second and at the end (docs/how-to/scale.md);
    `on_shipped` is told what the whole run shipped. `questions`: the run's questions as a coordinator read them
    (else read here); `endpoints`: builds the adapters (else `endpoint_factory(transport)`); `stats`: the counters
    to keep (read by a caller while the run goes)."""
    if ship_to is not None:
        check_url(ship_to)
    if questions is None:  # bad input stops us before the store exists
        questions = await anyio.to_thread.run_sync(questions_of, cfg)
    preflight(cfg)
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        with live(log, ship_to, on_shipped):
            return await record_into(log, cfg, transport, progress=progress, questions=questions, shard=shard,
                                     endpoints=endpoints, stats=stats)
    finally:
        await anyio.to_thread.run_sync(log.close)


async def record_into(
    log: EventLog, cfg: RunConfig, transport: httpx.AsyncBaseTransport | None = None, *, progress: bool | None = None,
    label: str = "record", questions: list[Question] | None = None, shard: tuple[int, int] | None = None,
    endpoints: AdapterFactory | None = None, stats: Stats | None = None,
) -> RunSummary:
    """Records into an open store, with a progress bar on an interactive stderr (`progress` forces it on or off)."""
    if questions is None:
        questions = await anyio.to_thread.run_sync(questions_of, cfg)
    stats = stats or Stats()
    with progress_display(stats, label=label, enabled=progress) as tick:
        return await record_run(cfg, log, endpoints or endpoint_factory(transport), stats=stats, on_progress=tick,
                                questions=questions, shard=shard)
