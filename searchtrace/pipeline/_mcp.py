"""`searchtrace mcp` as an application: provider P's adapter and the fetch backend (live or the in-process sandbox's)
behind the recording MCP server, with reads served to other processes meanwhile (docs/how-to/mcp.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from searchtrace.adapters import (
    SANDBOX_KEY,
    SEARCH_PROVIDERS,
    build_fetcher,
    build_search,
    default_cache_dir,
    default_endpoint,
    default_key_env,
    read_key,
    sandbox_endpoint,
)
from searchtrace.adapters.sandbox import in_process
from searchtrace.pipeline._live import live
from searchtrace.pipeline._recording import sandbox_rows
from searchtrace.store import BadInput

if TYPE_CHECKING:  # the `mcp` extra's modules load only when a command runs
    from searchtrace.engine.mcp import Outcome


async def mcp_serve(db: Path, questions: str, run_id: str, *, provider: str, sandbox: bool, qid: str | None = None,
                    http: bool = False, port: int = 0, ready: Callable[[str], None] | None = None,
                    max_body: int | None = None) -> tuple[int, int]:
    """Serve provider `provider` (the sandbox world's with `sandbox`) over MCP until the client leaves or a signal;
    (trajectories abandoned, events appended)."""
    from searchtrace.engine.mcp import serve  # the `mcp` SDK: loaded only for this command

    if provider not in SEARCH_PROVIDERS:
        raise BadInput(f"--provider: unknown search provider {provider!r} (known: {', '.join(sorted(SEARCH_PROVIDERS))})")
    if sandbox:  # the in-process sandbox world, started because the command asks for it
        box = in_process()
        transport, fallback = box.transport, SANDBOX_KEY
        search_at, fetch_at = sandbox_endpoint(provider, box.root), sandbox_endpoint("jina", box.root)
        cache = default_cache_dir() / "sandbox"
    else:
        read_key(f"provider {provider}", default_key_env(provider))  # a missing key: one line, before the store opens
        transport, fallback = None, None
        search_at, fetch_at = default_endpoint(provider), default_endpoint("jina")
        cache = default_cache_dir()
    search = build_search(provider, search_at, transport=transport, key_fallback=fallback)
    fetch = build_fetcher("jina", fetch_at, cache_dir=cache, transport=transport, key_fallback=fallback)
    async with search, fetch:
        return await serve(db, questions, run_id, provider=provider, search=search, fetch=fetch,
                           upstream="sandbox" if sandbox else "live", qid=qid, http=http, port=port,
                           rows=sandbox_rows(questions), reads=live, ready=ready,
                           **({"max_body": max_body} if max_body is not None else {}))


async def mcp_wrap(db: Path, questions: str, run_id: str, *, provider: str, cmd: list[str], qid: str | None = None,
                   max_frame: int | None = None) -> tuple[Outcome, int, int]:
    """Relay stdio to the MCP server `cmd`, recording its calls as trajectories of run `run_id`, until it exits;
    (how it ended, trajectories abandoned, events appended)."""
    from searchtrace.engine.mcp import wrap

    if not cmd:
        raise BadInput("mcp wrap: no server command; give it after `--`, e.g. `-- npx -y firecrawl-mcp`")
    return await wrap(db, questions, run_id, provider=provider, cmd=cmd, qid=qid, rows=sandbox_rows(questions),
                      reads=live, **({"max_frame": max_frame} if max_frame is not None else {}))
