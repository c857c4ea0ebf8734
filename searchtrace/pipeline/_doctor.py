"""`doctor`: everything a run needs, checked with one cheap call per endpoint before any paid work."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import httpx
import msgspec

from searchtrace.adapters import AdapterError
from searchtrace.engine import RunConfig, endpoint_factory, preflight
from searchtrace.pipeline._recording import questions_of
from searchtrace.store import BadInput

PING_QUERY = "searchtrace doctor"
PING_URL = "https://example.com/"


class Check(msgspec.Struct, kw_only=True):
    """One line of the doctor's report: what was checked, whether it holds, and what to do when it does not."""

    what: str
    ok: bool
    detail: str


def _line(text: str, limit: int = 200) -> str:
    return " ".join(str(text).split())[:limit]


async def doctor(cfg: RunConfig, transport: httpx.AsyncBaseTransport | None = None) -> list[Check]:
    """Dataset readable, keys present, each endpoint reachable and accepting its key; nothing is recorded."""
    checks: list[Check] = []
    try:
        questions = await anyio.to_thread.run_sync(questions_of, cfg)
        checks.append(Check(what="dataset", ok=True, detail=f"{len(questions)} questions"))
    except BadInput as exc:
        checks.append(Check(what="dataset", ok=False, detail=_line(str(exc))))
    try:
        preflight(cfg)
        checks.append(Check(what="keys", ok=True, detail="every key variable is set"))
    except BadInput as exc:
        checks.append(Check(what="keys", ok=False, detail=_line(str(exc))))
        return checks  # without keys every call below would only repeat this
    async with AsyncExitStack() as stack:
        ends = await endpoint_factory(transport)(cfg, stack)
        for name, search in ends.search.items():
            resp = await search.search(PING_QUERY, trace_id="doctor")
            ok = resp.status == "ok"
            detail = f"{len(resp.hits)} results" if ok else f"{resp.status}: {_line(resp.error or '')}"
            checks.append(Check(what=f"search {name}", ok=ok, detail=detail))
        page = await ends.fetch.fetch(PING_URL, trace_id="doctor")
        # any answer but a key or balance refusal shows the backend reachable (a page it cannot find included)
        fetch_ok = page.status == "ok" or (page.http_status is not None and page.http_status not in (401, 402, 403))
        checks.append(Check(what="fetch", ok=fetch_ok,
                            detail="reachable" if fetch_ok else f"{page.status}: {_line(page.error or '')}"))
        try:
            reply = await ends.chat.complete([{"role": "user", "content": "Reply with OK."}], trace_id="doctor")
            checks.append(Check(what=f"agent model {cfg.agent.model}", ok=True,
                                detail=f"answered ({reply.usage.input_tokens} input tokens)"))
        except AdapterError as exc:
            checks.append(Check(what=f"agent model {cfg.agent.model}", ok=False, detail=_line(str(exc))))
    return checks
