"""The recording proxy (SPEC §15) as an application: engine.proxy serving, with reads served to other processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from searchtrace.engine.proxy.serve import serve
from searchtrace.pipeline.live import serving_reads


async def proxy(db: Path, questions: str, run_id: str, *, port: int, upstream: str, durable: bool = False,
                ready: Callable[[str, int], None] | None = None) -> tuple[int, int]:
    """Serve until SIGINT/SIGTERM; `sql`, `report`, `view` read the file meanwhile. (abandoned, events appended)."""
    return await serve(db, questions, run_id, port=port, upstream=upstream, durable=durable, ready=ready,
                       reads=serving_reads)
