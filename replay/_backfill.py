"""`judge --backfill-pages` (docs/how-to/hosted.md): the pages behind the items whose text the caller never received.

A hosted layer may give its caller only URLs and titles (OpenAI's sources, Claude's and Gemini's results): such an
item has no snippet and no page the caller read, so its judge verdict can say nothing about evidence. Backfill
fetches each such page through the fetch backend and asks the same judge run's model and prompt about it, shown with
the fields the caller received plus the page. The verdict is recorded as its own `judge.backfill` event (the page a
blob): the evidence behind the URL, which the model may or may not have read, so it is reported apart and never
counted where the report counts what the caller saw. A page that cannot be fetched for good (a 4xx, too large,
unusable) is recorded invalid; a timeout or 5xx is not recorded and the next run retries it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import msgspec

from searchtrace.adapters import ChatError, ChatModel, Fetcher, FetchResponse
from searchtrace.analytics import JudgeItem, judge_items
from searchtrace.engine import worker_pool
from searchtrace.replay._judge import (
    JSON_MODE,
    BackfillCounts,
    JudgeStats,
    messages_with_page,
    stream_of,
)
from searchtrace.replay._judge_prompt import JudgePrompt
from searchtrace.replay._verdicts import parse_verdict
from searchtrace.store import (
    BadInput,
    EventLog,
    JudgeBackfill,
    JudgeItemRef,
    NewEvent,
    Usage,
    Verdict,
    Writer,
    digest,
    one_line,
    open_writer,
    stable_event_id,
)


def needs_backfill(item: JudgeItem) -> bool:
    """An item whose text the caller never received: no snippet reached it and no page it read."""
    return not item.snippet_observed and not item.page_visible


def _transient(r: FetchResponse) -> bool:
    return r.status == "timeout" or (r.http_status is not None and (r.http_status >= 500 or r.http_status == 429))


async def run_backfill(log: EventLog, *, judge_run_id: str, prompt: JudgePrompt, chat: ChatModel, fetcher: Fetcher,
                       concurrency: int = 8, progress: Callable[[JudgeStats], None] | None = None,
                       stats: JudgeStats) -> BackfillCounts:
    """Backfill every item that needs it and this judge run has not backfilled; the counts also go in `stats`."""

    def load() -> tuple[list[JudgeItem], set[tuple[str, str]]]:
        cur = log.cursor()
        try:
            items = [it for it in judge_items(cur) if needs_backfill(it)]
            rows = cur.execute("SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized' FROM events "
                               "WHERE stream_id = ? AND type = 'judge.backfill'", [stream_of(judge_run_id)]).fetchall()
        finally:
            cur.close()
        return items, {(str(t), str(u)) for t, u in rows}

    items, done = await anyio.to_thread.run_sync(load)
    counts = BackfillCounts(items=len(items), already=sum((it.trajectory_id, it.url_normalized) in done for it in items))
    stats.backfill = counts
    pending = [it for it in items if (it.trajectory_id, it.url_normalized) not in done]

    async with open_writer(log) as writer:

        async def one(item: JudgeItem) -> None:
            trace = f"{judge_run_id}|backfill|{item.trajectory_id}|{item.url_normalized}"
            got = await fetcher.fetch(item.url, trace_id=trace)
            if got.status != "ok" or got.content is None:
                if _transient(got):
                    _failed(counts, f"{item.url}: fetch {got.status}" + (f" {got.http_status}" if got.http_status else ""))
                    return
                await _record(writer, judge_run_id, item, got, None, f"fetch {got.status}: {one_line(got.error or '')}",
                              None, Usage(), 0.0, counts)
                return
            counts.fetched += 1
            messages = messages_with_page(prompt, item, got.content)
            started = time.perf_counter()
            try:
                reply = await chat.complete(messages, response_format=JSON_MODE, trace_id=trace)
            except ChatError as exc:
                if exc.key_refused:
                    raise BadInput(f"judge endpoint refused the request: {one_line(exc.message)}") from None
                if exc.http_status is not None and 400 <= exc.http_status < 500 and exc.http_status != 429:
                    await _record(writer, judge_run_id, item, got, None,
                                  f"judge call refused: HTTP {exc.http_status}: {one_line(exc.message)}", None, Usage(),
                                  (time.perf_counter() - started) * 1000, counts)
                    return
                _failed(counts, f"{item.url}: judge {exc.status}: {one_line(exc.message)}")
                return
            parsed = parse_verdict(reply.text, page_visible=True, finish_reason=reply.finish_reason)
            labels = msgspec.structs.replace(parsed.labels, snippet=None) if parsed.labels is not None else None
            raw = reply.raw if reply.raw is not None else (reply.text or "").encode()
            await _record(writer, judge_run_id, item, got, labels, parsed.reason, raw, reply.usage, reply.latency_ms,
                          counts)
            if progress is not None:
                progress(stats)

        await worker_pool(pending, one, min(concurrency, max(len(pending), 1)))
    return counts


def _failed(counts: BackfillCounts, error: str) -> None:
    counts.failed += 1
    if len(counts.errors) < 5:
        counts.errors.append(error)


async def _record(writer: Writer, judge_run_id: str, item: JudgeItem, got: FetchResponse, labels: Verdict | None,
                  reason: str | None, raw: bytes | None, usage: Usage, latency_ms: float,
                  counts: BackfillCounts) -> None:
    page = got.content.encode() if got.status == "ok" and got.content is not None else None
    event = JudgeBackfill(
        judge_run_id=judge_run_id, item=JudgeItemRef(trajectory_id=item.trajectory_id, url_normalized=item.url_normalized),
        url=item.url, fetch_status=got.status, valid=labels is not None, labels=labels,
        invalid_reason=None if labels is not None else reason, http_status=got.http_status,
        page_digest=digest(page) if page is not None else None, n_tokens=got.n_tokens, fetch_ms=got.latency_ms,
        raw_digest=digest(raw) if raw is not None else None, usage=usage, latency_ms=latency_ms)
    eid = stable_event_id("judge.backfill", judge_run_id, item.trajectory_id, item.url_normalized)
    await writer.append([NewEvent(stream_id=stream_of(judge_run_id), run_id=judge_run_id, payload=event,
                                  event_id=eid)], blobs=[b for b in (page, raw) if b is not None])
    counts.valid += labels is not None
    counts.invalid += labels is None
