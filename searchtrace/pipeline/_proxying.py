"""The recording proxy (docs/how-to/own-agent.md) as an application: engine.proxy serving, with reads served to other processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchtrace.adapters.sandbox import in_process
from searchtrace.engine.proxy import MAX_BODY, Limits, Upstream, serve
from searchtrace.pipeline._live import live
from searchtrace.pipeline._recording import sandbox_rows
from searchtrace.store import Shipped, check_url


async def proxy(db: Path, questions: str, run_id: str, *, port: int, upstream: str, durable: bool = False,
                ready: Callable[[str, int], None] | None = None, max_body: int = MAX_BODY,
                limits: Limits | None = None, final: str = "call", ship_to: str | None = None,
                on_shipped: Callable[[Shipped], None] | None = None) -> tuple[int, int]:
    """Serve until SIGINT/SIGTERM; `sql`, `report`, `view` read the file meanwhile, and with `ship_to` the committed
    events go to that PostgreSQL log every second (docs/how-to/scale.md). (abandoned, events appended)."""
    if ship_to is not None:
        check_url(ship_to)
    sandbox = None
    if upstream == "sandbox":  # the in-process sandbox world, started because the command asks for it
        box = in_process()
        sandbox = Upstream(box.root, box.transport)
    return await serve(db, questions, run_id, port=port, upstream=upstream, durable=durable, ready=ready,
                       reads=lambda log: live(log, ship_to, on_shipped), sandbox=sandbox, rows=sandbox_rows(questions),
                       max_body=max_body, limits=limits, final="last-reply" if final == "last-reply" else "call")
