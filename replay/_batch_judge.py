"""`judge --batch` (docs/how-to/batch.md): a judge run's items through the model API's batch endpoint, resumable.

The items' requests and the reading of their replies are the online judge's (`item_messages`, the adapter's
`request` / `response`, `read_reply`, `verdict_event`); only the transport differs. Every step is an event of the
judge run's stream, so any later invocation knows where the run stands: `judge.batch.submitted` (batch id, items,
request digest), `judge.batch.polled` when a batch's status changes, the verdicts of an ended batch with its
`judge.batch.finished` in one append. An item is sent at most twice in batches: a batch that has not finished is
polled again (never resubmitted); an item a finished batch did not answer (errored, expired, canceled) is
resubmitted once; after that it is judged online with `fallback="online"`, else left (counted) for a later run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import anyio
import msgspec

from searchtrace.adapters import ChatError, ModelBatches, OpenAIChat
from searchtrace.analytics import JudgeItem
from searchtrace.engine import bad_input_alone
from searchtrace.replay._judge import (
    JSON_MODE,
    BatchCounts,
    JudgeOptions,
    JudgeStats,
    commit_delay,
    count_verdict,
    item_messages,
    judge_pending,
    load_items,
    opening,
    read_reply,
    started_event,
    stream_of,
    verdict_event,
    verdict_keys,
)
from searchtrace.replay._judge_prompt import JudgePrompt
from searchtrace.store import (
    BadInput,
    CallFailed,
    EventLog,
    JudgeBatchFinished,
    JudgeBatchPolled,
    JudgeBatchSubmitted,
    JudgeItemRef,
    NewEvent,
    item_id,
    one_line,
)

Fallback = Literal["online"] | None
MAX_SUBMISSIONS = 2  # an item's first batch, and one resubmission
DEFAULT_BATCH_SIZE = 1000
DEFAULT_POLL_S = 30.0


class _Book:
    """The run's batches as its events tell: each batch's items and submission, which ended, last status seen."""

    def __init__(self, log: EventLog, jrid: str) -> None:
        self.items: dict[str, list[JudgeItemRef]] = {}
        self.sent: dict[tuple[str, str], int] = {}  # item -> batches it was in
        self.ended: set[str] = set()
        self.status: dict[str, str] = {}
        types = ["judge.batch.submitted", "judge.batch.polled", "judge.batch.finished"]
        for ev in log.read(types=types, stream_id=stream_of(jrid)):
            p = ev.payload
            if isinstance(p, JudgeBatchSubmitted):
                self.items[p.batch_id] = p.items
                for ref in p.items:
                    key = (ref.trajectory_id, ref.url_normalized)
                    self.sent[key] = self.sent.get(key, 0) + 1
            elif isinstance(p, JudgeBatchPolled):
                self.status[p.batch_id] = p.status
            elif isinstance(p, JudgeBatchFinished):
                self.ended.add(p.batch_id)

    def live(self) -> list[str]:
        return [b for b in self.items if b not in self.ended]


def _key(it: JudgeItem | JudgeItemRef) -> tuple[str, str]:
    return (it.trajectory_id, it.url_normalized)


def _event(jrid: str, payload: Any) -> NewEvent:
    return NewEvent(stream_id=stream_of(jrid), run_id=jrid, payload=payload)


class _BatchRun:
    def __init__(self, log: EventLog, chat: OpenAIChat, prompt: JudgePrompt, stats: JudgeStats,
                 counts: BatchCounts, progress: Callable[[JudgeStats], None] | None, size: int) -> None:
        self.log, self.chat, self.prompt, self.stats, self.counts = log, chat, prompt, stats, counts
        self.progress, self.size = progress, size
        self.jrid = stats.judge_run_id
        self.api = ModelBatches(chat)

    async def _append(self, events: list[NewEvent], blobs: Sequence[bytes] = ()) -> None:
        await anyio.to_thread.run_sync(lambda: self.log.append(events, blobs=list(blobs)))

    async def submit(self, items: Sequence[JudgeItem], book: _Book) -> None:
        """`items` in batches of at most `size`, each recorded as it is created."""
        for start in range(0, len(items), self.size):
            chunk = items[start:start + self.size]
            bodies = [(item_id(*_key(it)), self.chat.request(await item_messages(self.log, self.prompt, it),
                                                              response_format=JSON_MODE)) for it in chunk]
            made = await self.api.submit(bodies)
            again = max(book.sent.get(_key(it), 0) for it in chunk) + 1
            refs = [JudgeItemRef(trajectory_id=it.trajectory_id, url_normalized=it.url_normalized) for it in chunk]
            await self._append([_event(self.jrid, JudgeBatchSubmitted(
                judge_run_id=self.jrid, batch_id=made.batch_id, api=self.chat.api, items=refs,
                request_sha256=made.request_sha256, submission=again))])
            book.items[made.batch_id] = refs
            for it in chunk:
                book.sent[_key(it)] = book.sent.get(_key(it), 0) + 1
            self.counts.batches += 1
            self.counts.submitted += len(chunk)
            self.counts.resubmitted += sum(book.sent[_key(it)] > 1 for it in chunk)
            self._tick()

    async def poll(self, batch_id: str, book: _Book, by_key: dict[tuple[str, str], JudgeItem],
                   judged: set[tuple[str, str]]) -> bool:
        """One look at a live batch: its status recorded when it changed; when it ended, its verdicts and its
        `judge.batch.finished` in one append. True when it has ended."""
        polled = await self.api.poll(batch_id)
        if book.status.get(batch_id) != polled.status:
            await self._append([_event(self.jrid, JudgeBatchPolled(judge_run_id=self.jrid, batch_id=batch_id,
                                                                   status=polled.status))])
            book.status[batch_id] = polled.status
        if not polled.ended:
            return False
        refs = book.items[batch_id]
        ids = {item_id(*_key(r)): r for r in refs}
        results = await self.api.results(batch_id, list(ids))
        events: list[NewEvent] = []
        blobs: list[bytes] = []
        tally = {"succeeded": 0, "errored": 0, "expired": 0, "canceled": 0}
        for r in results:
            tally[r.outcome] += 1
            item = by_key.get(_key(ids[r.custom_id]))
            if r.response is None or item is None or _key(item) in judged:
                continue
            labels, why, raw = read_reply(item, r.response)
            events.append(verdict_event(self.jrid, item, labels, why, raw, r.response.usage, 0.0, batch_id=batch_id,
                                        answered=r.response))
            blobs.append(raw)
        events.append(_event(self.jrid, JudgeBatchFinished(judge_run_id=self.jrid, batch_id=batch_id,
                                                           status=polled.status, **tally)))
        await self._append(events, blobs)
        for ev in events[:-1]:
            count_verdict(self.stats, ev)
            judged.add(_key(ev.payload.item))  # type: ignore[union-attr]
        book.ended.add(batch_id)
        for k, n in tally.items():
            setattr(self.counts, k, getattr(self.counts, k) + n)
        self._tick()
        return True

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress(self.stats)


async def _drive(run: _BatchRun, book: _Book, all_items: Sequence[JudgeItem],
                 by_key: dict[tuple[str, str], JudgeItem], judged: set[tuple[str, str]], poll_s: float) -> None:
    """Submit what no live batch holds (at most twice an item), poll the live batches, until none is live."""
    while True:
        live = set(book.live())
        waiting = {_key(r) for b in live for r in book.items[b]}
        todo = [it for it in all_items if _key(it) not in judged and _key(it) not in waiting
                and book.sent.get(_key(it), 0) < MAX_SUBMISSIONS]
        if todo:
            await run.submit(todo, book)
            continue
        if not live:
            return
        for batch_id in sorted(live):
            await run.poll(batch_id, book, by_key, judged)
        if book.live():
            await anyio.sleep(poll_s)


async def run_batch_judge(
    log: EventLog,
    options: JudgeOptions,
    *,
    chat: OpenAIChat,
    progress: Callable[[JudgeStats], None] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    poll_s: float = DEFAULT_POLL_S,
    fallback: Fallback = None,
) -> JudgeStats:
    """Judge every item this judge run has no verdict for through model batches; returns the counters."""
    t0 = time.perf_counter()
    if batch_size < 1 or poll_s < 0:
        raise BadInput(f"--batch-size must be at least 1 and --poll-s at least 0 (got {batch_size}, {poll_s:g})")
    try:
        ModelBatches(chat)
    except ValueError as exc:
        raise BadInput(f"--batch: {exc}") from None

    def load() -> tuple[str, JudgePrompt, Any, set[tuple[str, str]], Sequence[JudgeItem]]:
        jrid, chosen, prev = opening(log, options)
        return jrid, chosen, prev, verdict_keys(log, jrid), load_items(log)

    jrid, chosen, prev, judged, all_items = await anyio.to_thread.run_sync(load)
    stats = JudgeStats(judge_run_id=jrid, items=len(all_items), already=len(judged),
                       pending=sum(_key(it) not in judged for it in all_items))
    counts = stats.batch = BatchCounts()
    if prev is None:
        batched = msgspec.structs.replace(options, params={**(options.params or {}), "batch": True})
        started = started_event(jrid, batched, chosen)
        log.append([started], blobs=[chosen.blob] if chosen.blob is not None else [])
    run = _BatchRun(log, chat, chosen, stats, counts, progress, batch_size)
    by_key = {_key(it): it for it in all_items}
    with bad_input_alone():
        book = await anyio.to_thread.run_sync(lambda: _Book(log, jrid))
        counts.resumed = len(book.live())
        try:
            await _drive(run, book, all_items, by_key, judged, poll_s)
        except ChatError as exc:  # the batch endpoint failed after its retries: recorded, the same command resumes
            if exc.auth:
                raise BadInput(f"judge endpoint refused the batch request: {one_line(exc.message)}") from None
            failed = CallFailed(what=f"batch:{chat.model}", call_id=None, status=exc.status,
                                http_status=exc.http_status, error=one_line(exc.message), attempts=len(exc.retries) + 1)
            await run._append([_event(jrid, failed)])
            stats.failed += 1
            stats.errors.append(f"batch: {exc.status}: {one_line(exc.message)}")
            stats.stopped = f"stopped: the batch endpoint failed ({exc.status}: {one_line(exc.message, 120)})"
            stats.elapsed_s = time.perf_counter() - t0
            counts.left = sum(_key(it) not in judged for it in all_items)
            return stats
        rest = [it for it in all_items if _key(it) not in judged]
        if rest and fallback == "online":
            counts.online = len(rest)
            delay = commit_delay(getattr(getattr(chat, "endpoint", None), "rps", 0.0), options.concurrency)
            await judge_pending(log, chat, chosen, stats, progress, rest, options.concurrency, delay, None)
            rest = [it for it in rest if _key(it) not in verdict_keys(log, jrid)]
            counts.online -= len(rest)
        counts.left = len(rest)
    stats.elapsed_s = time.perf_counter() - t0
    return stats


__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_POLL_S", "Fallback", "run_batch_judge"]
