"""`doctor`: everything a run needs, checked with one cheap call per endpoint before any paid work."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial

import anyio
import httpx
import msgspec

from searchtrace.adapters import AdapterError, FetchResponse, SearchProvider
from searchtrace.engine import RunConfig, endpoint_factory, preflight
from searchtrace.pipeline._recording import questions_of
from searchtrace.store import BadInput, one_line

PING_QUERY = "searchtrace doctor"
PING_URL = "https://example.com/"
BUDGET_S = 25.0  # the endpoint calls; reading the dataset and starting up fit in the rest of the 30 s


class Check(msgspec.Struct, kw_only=True):
    """One line of the doctor's report: what was checked, whether it holds, and what to do when it does not."""

    what: str
    ok: bool
    detail: str


async def doctor(cfg: RunConfig, transport: httpx.AsyncBaseTransport | None = None, *,
                 budget_s: float = BUDGET_S) -> list[Check]:
    """Dataset readable, keys present, each endpoint reachable and accepting its key; nothing is recorded; the
    endpoint calls run together and end within `budget_s` (docs/concepts/security.md: doctor within 30 s overall)."""
    checks: list[Check] = []
    try:
        questions = await anyio.to_thread.run_sync(questions_of, cfg)
        checks.append(Check(what="dataset", ok=True, detail=f"{len(questions)} questions"))
    except BadInput as exc:
        checks.append(Check(what="dataset", ok=False, detail=one_line(str(exc))))
    try:
        preflight(cfg)
        checks.append(Check(what="keys", ok=True, detail="every key variable is set"))
    except BadInput as exc:
        checks.append(Check(what="keys", ok=False, detail=one_line(str(exc))))
        return checks  # without keys every call below would only repeat this
    deadline = anyio.current_time() + budget_s
    # the fetch backend itself is asked, never the fetch cache (a page cached earlier says nothing of it now)
    uncached = msgspec.structs.replace(cfg, fetch=msgspec.structs.replace(cfg.fetch, cache_dir=""))
    async with AsyncExitStack() as stack:
        ends = await endpoint_factory(transport)(uncached, stack)
        names = [f"search {name}" for name in ends.search] + ["fetch", f"agent model {cfg.agent.model}"]
        found: dict[str, Check] = {}

        async def search_check(name: str, search: SearchProvider) -> Check:
            resp = await search.search(PING_QUERY, trace_id="doctor")
            ok = resp.status == "ok"
            detail = f"{len(resp.hits)} results" if ok else f"{resp.status}: {one_line(resp.error or '')}"
            return Check(what=f"search {name}", ok=ok, detail=detail)

        async def fetch_check() -> Check:
            page = await ends.fetch.fetch(PING_URL, trace_id="doctor")
            return Check(what="fetch", ok=fetch_healthy(page), detail=_fetch_detail(page))

        async def chat_check() -> Check:
            what = f"agent model {cfg.agent.model}"
            try:
                reply = await ends.chat.complete([{"role": "user", "content": "Reply with OK."}], trace_id="doctor")
            except AdapterError as exc:
                return Check(what=what, ok=False, detail=one_line(str(exc)))
            return Check(what=what, ok=True, detail=f"answered ({reply.usage.input_tokens} input tokens)")

        async def bounded(what: str, check: Callable[[], Awaitable[Check]]) -> None:
            """One endpoint's check, given up at the shared deadline (a `Retry-After: 100000` included)."""
            with anyio.move_on_at(deadline):
                found[what] = await check()

        # every endpoint at once, so the whole doctor takes as long as its slowest endpoint, never beyond budget_s
        async with anyio.create_task_group() as tg:
            for name, search in ends.search.items():
                tg.start_soon(bounded, f"search {name}", partial(search_check, name, search))
            tg.start_soon(bounded, "fetch", fetch_check)
            tg.start_soon(bounded, names[-1], chat_check)
        for what in names:
            checks.append(found.get(what) or Check(what=what, ok=False,
                                                   detail=f"no answer within {budget_s:g} s (slow, or asks to retry later)"))
    return checks


def fetch_healthy(page: FetchResponse) -> bool:
    """The fetch backend answered as a Reader does: a page of text for the ping URL, or a 4xx about that page
    (not a key, balance or rate refusal). A 5xx, or an HTML page (a portal, a wrong base URL), is not healthy."""
    if page.status == "ok":
        return not _is_html(page.content or "")
    return page.http_status is not None and 400 <= page.http_status < 500 and page.http_status not in (401, 402, 403,
                                                                                                       407, 429)


def _is_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body"))


def _fetch_detail(page: FetchResponse) -> str:
    if fetch_healthy(page):
        return "reachable"
    if page.status == "ok":
        return "answered with an HTML page, not a Reader's text: check fetch.base_url"
    return f"{page.status}{f' (HTTP {page.http_status})' if page.http_status else ''}: {one_line(page.error or '')}"
