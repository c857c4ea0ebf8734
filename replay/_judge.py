"""A judge run: one call per judge item, rate-limited fan-out, verdicts appended as they come, resumable."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import msgspec

from searchtrace.adapters import ChatError, ChatModel, ChatResponse
from searchtrace.analytics import JudgeItem, judge_items
from searchtrace.engine import bad_input_alone, document_block, prompt_file, worker_pool
from searchtrace.replay._judge_prompt import (
    DEFAULT_VERSION,
    JudgePrompt,
    from_prompt_file,
    get_judge_prompt,
    versions,
)
from searchtrace.replay._verdicts import SCHEMA_VERSION, parse_verdict
from searchtrace.store import (
    BadInput,
    CallFailed,
    CallRetried,
    EventLog,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    NewEvent,
    Usage,
    Verdict,
    Writer,
    digest,
    judge_stream,
    one_line,
    open_writer,
    stable_event_id,
)

JSON_MODE = {"type": "json_object"}
# How long the writer waits for more verdicts before a commit when calls are paced: verdicts then arrive one by
# one and a DuckDB commit costs ~3 ms of CPU, so batching a few per commit cuts CPU per call (3.2 -> 1.9 ms at
# 200/s). A worker waits this long for its ack; unpaced runs keep the writer's 2 ms (they batch under load anyway).
COMMIT_DELAY_S = 0.02
# A judge call refused for good (content filter, bad request): recorded as an invalid verdict, not retried on resume.
_REFUSED = frozenset({400, 404, 413, 422})
# This many judge calls failing in a row (after their retries) means the endpoint is down: stop instead of grinding
# through every item; what was judged is kept and the same command resumes.
MAX_CONSECUTIVE_FAILURES = 20


class BatchCounts(msgspec.Struct, kw_only=True):
    """What the batches of one invocation did (docs/how-to/batch.md)."""

    resumed: int = 0  # batches of an earlier invocation still alive, polled again (never resubmitted)
    batches: int = 0  # batches submitted now
    submitted: int = 0  # items submitted now
    resubmitted: int = 0  # of them, items sent a second time (their first batch did not answer them)
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0
    online: int = 0  # items judged online after two batches did not answer them (--batch-fallback online)
    left: int = 0  # items two batches did not answer, left without a verdict for a later run


class JudgeStats(msgspec.Struct, kw_only=True):
    """Live counters of a judge run (what the progress display shows)."""

    judge_run_id: str
    items: int = 0
    already: int = 0  # verdicts this judge run had before this invocation
    pending: int = 0
    done: int = 0
    valid: int = 0
    invalid: int = 0
    failed: int = 0  # calls that finally failed on a transient error: no verdict, the next resume retries them
    retried: int = 0
    usage: Usage = msgspec.field(default_factory=Usage)
    elapsed_s: float = 0.0
    errors: list[str] = []
    stopped: str | None = None  # why the run stopped early (a run of consecutive failures), else None
    batch: BatchCounts | msgspec.UnsetType = msgspec.UNSET  # `judge --batch` only (never encoded otherwise)
    backfill: BackfillCounts | msgspec.UnsetType = msgspec.UNSET  # `judge --backfill-pages` only


class BackfillCounts(msgspec.Struct, kw_only=True):
    """What `judge --backfill-pages` did (docs/how-to/hosted.md): items whose text the caller never received."""

    items: int = 0  # such items in the store
    already: int = 0  # of them, backfilled by this judge run before
    fetched: int = 0  # pages fetched now
    valid: int = 0  # valid backfill verdicts now
    invalid: int = 0  # invalid verdicts, and pages that cannot be fetched (a 4xx, too large, unusable), recorded
    failed: int = 0  # fetches or judge calls that failed on a transient error: not recorded, the next run retries
    errors: list[str] = []


class JudgeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What opens a judge run, online or in model batches: the judge model, the run's id (None: model@prompt
    version), its prompt (a prompt file's; None: by version, or a resumed run's own), the workers, and what its
    judge.started records beside them."""

    model: str
    judge_run_id: str | None = None
    prompt_version: str | None = None
    prompt: JudgePrompt | None = None
    concurrency: int = 8
    params: dict[str, Any] | None = None


def stream_of(judge_run_id: str) -> str:
    return judge_stream(judge_run_id)


def trace_id_of(judge_run_id: str, item: JudgeItem) -> str:
    """The trace header value the sandbox counts requests by."""
    return f"{judge_run_id}|{item.trajectory_id}|{item.url_normalized}"


def verdict_event_id(judge_run_id: str, trajectory_id: str, url_normalized: str) -> uuid.UUID:
    """Content-derived: a second verdict for the same item in the same judge run is a no-op append."""
    return stable_event_id("judge.verdict", judge_run_id, trajectory_id, url_normalized)


def default_judge_run_id(model: str, prompt_version: str) -> str:
    """Same model and prompt version -> same judge run, so re-running the command resumes it."""
    return f"{model}@{prompt_version}"


def _started(log: EventLog, judge_run_id: str) -> JudgeStarted | None:
    for ev in log.read(types=["judge.started"], stream_id=stream_of(judge_run_id)):
        assert isinstance(ev.payload, JudgeStarted)
        return ev.payload
    return None


def verdict_keys(log: EventLog, judge_run_id: str) -> set[tuple[str, str]]:
    """(trajectory_id, url_normalized) of every item the judge run has a verdict for."""
    cur = log.cursor()
    try:
        rows = cur.execute(
            "SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized' FROM events "
            "WHERE stream_id = ? AND type = 'judge.verdict'",
            [stream_of(judge_run_id)],
        ).fetchall()
    finally:
        cur.close()
    return {(str(t), str(u)) for t, u in rows}


def load_items(log: EventLog) -> list[JudgeItem]:
    """Every judge item of the store (analytics.judge_items on a cursor of its own)."""
    cur = log.cursor()
    try:
        return judge_items(cur)
    finally:
        cur.close()


def _check_same_run(prev: JudgeStarted, model: str, prompt: JudgePrompt) -> None:
    if (prev.model, prev.prompt_version, prev.prompt_sha256) != (model, prompt.version, prompt.sha256):
        raise BadInput(
            f"judge run {prev.judge_run_id!r} was started with model {prev.model!r} and prompt {prev.prompt_version!r}; "
            "resume it with the same ones or choose another --judge-run-id"
        )


class _Run:
    """State shared by the workers of one invocation."""

    def __init__(
        self,
        log: EventLog,
        writer: Writer,
        chat: ChatModel,
        prompt: JudgePrompt,
        stats: JudgeStats,
        progress: Callable[[JudgeStats], None] | None,
    ) -> None:
        self.log, self.writer, self.chat, self.prompt = log, writer, chat, prompt
        self.stats, self.progress = stats, progress
        self.jrid = stats.judge_run_id
        self.in_a_row = 0  # consecutive calls that failed after their retries
        self.scope = anyio.CancelScope()
        self.max_in_a_row = MAX_CONSECUTIVE_FAILURES

    async def judge_one(self, item: JudgeItem) -> None:
        messages = await item_messages(self.log, self.prompt, item)
        trace = trace_id_of(self.jrid, item)
        started = time.perf_counter()
        try:
            reply = await self.chat.complete(messages, response_format=JSON_MODE, trace_id=trace)
        except ChatError as exc:
            http_status = exc.http_status
            if exc.key_refused:
                raise BadInput(f"judge endpoint refused the request: {one_line(exc.message)}") from None
            if http_status in _REFUSED:
                latency = (time.perf_counter() - started) * 1000
                reason = f"judge call refused: HTTP {http_status}: {one_line(exc.message)}"
                await self._record(item, trace, None, reason, None, Usage(), latency, exc.retries,
                                   provider_ms=exc.provider_ms, queue_ms=exc.queue_ms)
                return
            self.stats.failed += 1
            self.stats.retried += len(exc.retries)
            failed = CallFailed(what=f"chat:{getattr(self.chat, 'model', 'judge')}", call_id=trace, status=exc.status, http_status=http_status,
                                error=one_line(exc.message), attempts=len(exc.retries) + 1)
            await self.writer.append([*(self._retry_event(trace, r) for r in exc.retries),
                                      NewEvent(stream_id=stream_of(self.jrid), run_id=self.jrid, payload=failed)])
            if len(self.stats.errors) < 5:
                self.stats.errors.append(f"{trace}: {exc.status}: {one_line(exc.message)}")
            self.in_a_row += 1
            if self.in_a_row >= self.max_in_a_row and self.stats.stopped is None:
                self.stats.stopped = (f"stopped after {self.in_a_row} judge calls in a row failed "
                                      f"(last: {exc.status}: {one_line(exc.message, 120)})")
                self.scope.cancel()
            self._tick()
            return
        self.in_a_row = 0
        labels, why, raw = read_reply(item, reply)
        await self._record(item, trace, labels, why, raw, reply.usage, reply.latency_ms, reply.retries,
                           provider_ms=reply.provider_ms, queue_ms=reply.queue_ms, answered=reply)

    def _retry_event(self, trace: str, r: Any) -> NewEvent:
        body = CallRetried(what=r.what, call_id=trace, attempt=r.attempt, reason=r.reason, wait_s=r.wait_s)
        return NewEvent(stream_id=stream_of(self.jrid), run_id=self.jrid, payload=body)

    async def _record(
        self,
        item: JudgeItem,
        trace: str,
        labels: Any,
        reason: str | None,
        raw: bytes | None,
        usage: Usage,
        latency_ms: float,
        retries: Sequence[Any],
        *,
        provider_ms: float | msgspec.UnsetType = msgspec.UNSET,
        queue_ms: float | msgspec.UnsetType = msgspec.UNSET,
        answered: ChatResponse | None = None,
    ) -> None:
        event = verdict_event(self.jrid, item, labels, reason, raw, usage, latency_ms, provider_ms=provider_ms,
                              queue_ms=queue_ms, answered=answered)
        events = [self._retry_event(trace, r) for r in retries]
        events.append(event)
        await self.writer.append(events, blobs=[raw] if raw is not None else [])
        self.stats.retried += len(retries)
        count_verdict(self.stats, event)
        self._tick()

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress(self.stats)


async def item_messages(log: EventLog, prompt: JudgePrompt, item: JudgeItem) -> list[dict[str, str]]:
    """The judge's messages for one item (its page read from the store when the agent saw it): the one request every
    judge call makes, online or in a model batch."""
    page = None
    if item.page_visible and item.page_digest:  # DuckDB reads go through a worker thread
        page = await anyio.to_thread.run_sync(lambda: log.get_blob(item.page_digest or "").decode("utf-8", "replace"))
    return messages_with_page(prompt, item, page if item.page_visible else None)


def messages_with_page(prompt: JudgePrompt, item: JudgeItem, page: str | None) -> list[dict[str, str]]:
    """The judge's messages for one item shown with `page` (None: no page): its own, or a backfilled one."""
    block = document_block(
        doc_id=item.doc_id,
        rank=item.rank,
        domain=item.domain,
        title=item.title,
        url=item.url,
        snippet=item.snippet,
        metadata=item.metadata,
        page=page,
        surface=item.surface,
    )
    return prompt.messages(
        question=item.question, gold_answer=item.gold_answer, final_answer=item.final_answer, document=block,
        gold_aliases=item.gold_aliases,
    )


def read_reply(item: JudgeItem, reply: ChatResponse) -> tuple[Verdict | None, str | None, bytes]:
    """The one reading of a judge reply, online or a batch item's: labels (None: invalid), why invalid, raw bytes."""
    parsed = parse_verdict(reply.text, page_visible=item.page_visible, finish_reason=reply.finish_reason)
    raw = reply.raw if reply.raw is not None else (reply.text or "").encode()
    return parsed.labels, parsed.reason, raw


def verdict_event(
    jrid: str, item: JudgeItem, labels: Verdict | None, reason: str | None, raw: bytes | None, usage: Usage,
    latency_ms: float, *, provider_ms: float | msgspec.UnsetType = msgspec.UNSET,
    queue_ms: float | msgspec.UnsetType = msgspec.UNSET, batch_id: str | msgspec.UnsetType = msgspec.UNSET,
    answered: ChatResponse | None = None,
) -> NewEvent:
    """One item's `judge.verdict` (content-derived id: a second one for the item is a no-op append); `answered`, the
    reply, names the model that answered and its API."""
    valid = labels is not None
    # docs/concepts/shown.md: no snippet verdict for a URL never shown; docs/how-to/hosted.md: nor where no snippet
    # reached the caller
    if labels is not None and not (item.snippet_shown and item.snippet_observed):
        labels = msgspec.structs.replace(labels, snippet=None)
    verdict = JudgeVerdict(
        judge_run_id=jrid,
        item=JudgeItemRef(trajectory_id=item.trajectory_id, url_normalized=item.url_normalized),
        surface="page" if item.page_visible else "snippet",
        valid=valid,
        labels=labels,
        invalid_reason=None if valid else reason,
        raw_digest=digest(raw) if raw is not None else None,
        usage=usage,
        latency_ms=latency_ms,
        provider_ms=provider_ms,
        queue_ms=queue_ms,
        batch_id=batch_id,
        model=answered.model if answered is not None and answered.model else msgspec.UNSET,
        api=answered.api if answered is not None and answered.api else msgspec.UNSET,
    )
    return NewEvent(stream_id=stream_of(jrid), run_id=jrid, payload=verdict,
                    event_id=verdict_event_id(jrid, item.trajectory_id, item.url_normalized))


def count_verdict(stats: JudgeStats, event: NewEvent) -> None:
    """A recorded verdict in the run's counters."""
    v = event.payload
    assert isinstance(v, JudgeVerdict)
    stats.done += 1
    stats.valid += v.valid
    stats.invalid += not v.valid
    stats.usage = stats.usage + v.usage


async def run_judge(
    log: EventLog,
    options: JudgeOptions,
    *,
    chat: ChatModel,
    progress: Callable[[JudgeStats], None] | None = None,
    inputs: Sequence[JudgeItem] | None = None,
) -> JudgeStats:
    """Judge every item of the store that this judge run has no verdict for yet; returns the counters.

    Calls are paced by the chat adapter's endpoint limiter (adapters._http), as every other call of the project.
    """
    t0 = time.perf_counter()

    def load() -> tuple[str, JudgePrompt, JudgeStarted | None, set[tuple[str, str]], Sequence[JudgeItem]]:
        jrid, chosen, prev = opening(log, options)
        return jrid, chosen, prev, verdict_keys(log, jrid), inputs if inputs is not None else load_items(log)

    jrid, chosen, prev, done, all_items = await anyio.to_thread.run_sync(load)
    pending = [it for it in all_items if (it.trajectory_id, it.url_normalized) not in done]
    stats = JudgeStats(judge_run_id=jrid, items=len(all_items), already=len(done), pending=len(pending))
    delay = commit_delay(getattr(getattr(chat, "endpoint", None), "rps", 0.0), options.concurrency)
    with bad_input_alone():
        await judge_pending(log, chat, chosen, stats, progress, pending, options.concurrency, delay,
                            None if prev is not None else started_event(jrid, options, chosen))
    stats.elapsed_s = time.perf_counter() - t0
    return stats


def open_judge_run(log: EventLog, options: JudgeOptions) -> tuple[str, JudgePrompt]:
    """A judge run started where it is not judged (docs/how-to/scale.md `judge --ray`): its `judge.started` appended once, as
    `run_judge` would append it, and a resumed run checked; its id and prompt, for the shards that judge it."""
    jrid, prompt, prev = opening(log, options)
    if prev is None:
        log.append([started_event(jrid, options, prompt)], blobs=[prompt.blob] if prompt.blob is not None else [])
    return jrid, prompt


def opening(log: EventLog, options: JudgeOptions) -> tuple[str, JudgePrompt, JudgeStarted | None]:
    """How a judge run opens, wherever it is judged: its concurrency checked, its prompt and id chosen, and, when it
    was started before, that start (checked against this model and prompt)."""
    if options.concurrency < 1:
        raise BadInput(f"--concurrency must be at least 1, got {options.concurrency}")
    prompt = options.prompt
    if prompt is None:
        prompt = resolve_prompt(log, options.prompt_version, options.judge_run_id)
    jrid = options.judge_run_id or default_judge_run_id(options.model, prompt.version)
    if (prev := _started(log, jrid)) is not None:
        _check_same_run(prev, options.model, prompt)
    return jrid, prompt, prev


def resolve_prompt(log: EventLog, version: str | None, judge_run_id: str | None) -> JudgePrompt:
    """The judge prompt of a version: built in, loaded earlier, or a prompt file's words recorded in this store.

    Without a version, an existing `judge_run_id` resumes with the prompt it was started with.
    """
    if version is None and judge_run_id is not None and (prev := _started(log, judge_run_id)) is not None:
        version = prev.prompt_version
    version = version or DEFAULT_VERSION
    if prompt_file.is_file_version(version) and version not in versions():
        for ev in log.read(types=["judge.started"]):
            assert isinstance(ev.payload, JudgeStarted)
            if ev.payload.prompt_version == version:
                return recorded_prompt(log, ev.payload)
    return get_judge_prompt(version)


def recorded_prompt(log: EventLog, started: JudgeStarted) -> JudgePrompt:
    """The exact prompt a judge run used, from the blob its `judge.started` names (prompt files only)."""
    if not prompt_file.is_file_version(started.prompt_version):
        return get_judge_prompt(started.prompt_version)
    try:
        data = log.get_blob(started.prompt_sha256)
    except KeyError:
        raise BadInput(f"judge run {started.judge_run_id!r}: its prompt blob {started.prompt_sha256[:12]} is missing") from None
    return from_prompt_file(prompt_file.from_blob(data, f"judge run {started.judge_run_id!r}"))


def commit_delay(pace_rps: float, concurrency: int) -> float:
    """Group-commit wait: up to COMMIT_DELAY_S when paced, short enough that `concurrency` workers keep the pace."""
    if not pace_rps or pace_rps <= 0:
        return 0.002
    return min(COMMIT_DELAY_S, 0.5 * concurrency / pace_rps)


def started_event(jrid: str, options: JudgeOptions, prompt: JudgePrompt) -> NewEvent:
    """The judge run's `judge.started` (one per run: a content-derived id)."""
    started = JudgeStarted(
        judge_run_id=jrid,
        model=options.model,
        prompt_version=prompt.version,
        prompt_sha256=prompt.sha256,
        schema_version=SCHEMA_VERSION,
        # "rps": None as before the in-process limiter went (the adapter paces); the CLI's `params` give its rate
        params={"rps": None, "concurrency": options.concurrency, "response_format": JSON_MODE, **(options.params or {})},
    )
    return NewEvent(stream_id=stream_of(jrid), run_id=jrid, payload=started, event_id=stable_event_id("judge.started", jrid))


async def judge_pending(
    log: EventLog,
    chat: ChatModel,
    prompt: JudgePrompt,
    stats: JudgeStats,
    progress: Callable[[JudgeStats], None] | None,
    pending: Sequence[JudgeItem],
    concurrency: int,
    commit_delay_s: float,
    started: NewEvent | None,
) -> None:
    """The fan-out: `concurrency` workers over one shared iterator, every verdict through one group-commit writer."""
    async with open_writer(log, max_delay=commit_delay_s) as writer:
        if started is not None:  # a prompt file's words go in with it, as the blob its prompt_sha256 names
            await writer.append([started], blobs=[prompt.blob] if prompt.blob is not None else [])
        run = _Run(log, writer, chat, prompt, stats, progress)
        run._tick()
        with run.scope:
            await worker_pool(pending, run.judge_one, min(concurrency, max(len(pending), 1)))


__all__ = ["JSON_MODE", "BatchCounts", "MAX_CONSECUTIVE_FAILURES", "ChatModel", "JudgeOptions", "JudgeStats", "default_judge_run_id", "open_judge_run", "run_judge", "stream_of", "trace_id_of"]
