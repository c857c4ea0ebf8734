"""The recording proxy (SPEC §15) as an application: engine.proxy serving, with reads served to other processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchtrace.adapters.sandbox import in_process
from searchtrace.engine.proxy import MAX_BODY, Limits, Upstream, serve
from searchtrace.pipeline._live import serving_reads
from searchtrace.pipeline._recording import sandbox_rows


async def proxy(db: Path, questions: str, run_id: str, *, port: int, upstream: str, durable: bool = False,
                ready: Callable[[str, int], None] | None = None, max_body: int = MAX_BODY,
                limits: Limits | None = None, final: str = "call") -> tuple[int, int]:
    """Serve until SIGINT/SIGTERM; `sql`, `report`, `view` read the file meanwhile. (abandoned, events appended)."""
    sandbox = None
    if upstream == "sandbox":  # the in-process sandbox world, started because the command asks for it
        box = in_process()
        sandbox = Upstream(box.root, box.transport)
    return await serve(db, questions, run_id, port=port, upstream=upstream, durable=durable, ready=ready,
                       reads=serving_reads, sandbox=sandbox, rows=sandbox_rows(questions),
                       max_body=max_body, limits=limits, final="last-reply" if final == "last-reply" else "call")
