"""The proxy's recording core: per-trajectory state, events (docs/reference/events.md) for each proxied call, one ordered append queue.

A call's events are built synchronously as soon as its reply is whole (so doc_ids and call ids follow the order in
which replies arrive) and queued; one task drains the queue into the store's group-commit writer. The client gets
its reply without waiting for the commit: a SIGKILL loses at most those calls (in flight), never a committed one,
and a restart continues every open trajectory from what the store holds.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, TypeVar

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from searchtrace.adapters import (
    HostedTurn,
    SearchHit,
    Secret,
    configured_secrets,
    scrub_parsed,
    scrub_text,
)
from searchtrace.engine._record import Question, open_run
from searchtrace.engine._trajectory import Builder, Message, trajectory_id
from searchtrace.engine._transcript import assistant_message
from searchtrace.store import (
    Citation,
    EventLog,
    FetchStatus,
    NewEvent,
    Payload,
    SearchStatus,
    ToolCall,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
    Writer,
    decode_payload,
    open_writer,
    stable_event_id,
    trajectory_stream,
)

_Item = tuple[list[NewEvent], list[bytes], anyio.Event | None]
MAX_KEPT_REPLIES = 64  # per trajectory: a Responses conversation chains the latest reply, rarely an older one
FinalMode = Literal["call", "last-reply"]


@dataclass
class Traj:
    """What the proxy knows of one open trajectory (rebuilt from the store on restart)."""

    provider: str
    qid: str
    b: Builder  # its payloads, doc_ids and counters
    closing: bool = False  # a `final` (or a limit) is finishing it: a new call gets 409
    inflight: int = 0  # calls forwarded and not recorded yet: `final` waits for them
    chats: int = 0  # the chat calls among them (turns in flight, for --max-turns)
    spent: Fraction = Fraction(0)  # USD recorded so far (with --max-usd)
    limited: str | None = None  # the limit it finished at (its `error`): a later call gets that 400 again
    idle: anyio.Event | None = None  # what `settle` waits on, set when inflight falls to 0
    # Responses API: each reply's whole conversation (request + the reply), so a request naming it as
    # `previous_response_id` is recorded with everything the model was sent; the latest MAX_KEPT_REPLIES
    replies: dict[str, list[Message]] = field(default_factory=dict)
    # the string arguments of its last turn's tool calls: a search or fetch naming no trajectory is this one's when
    # its query or URL is among them (routing by question text, docs/how-to/claude-gemini.md)
    asked: frozenset[str] = frozenset()
    # docs/how-to/hosted.md: the citations of its latest reply that cited (a hosted layer's), given to its answer.final
    citations: list[Citation] = field(default_factory=list)

    @property
    def trajectory_id(self) -> str:
        return self.b.trajectory_id

    @property
    def finished(self) -> bool:
        return self.b.finished

    @property
    def open(self) -> bool:
        """Whether a new call may join it (not finished, not being finished)."""
        return not (self.closing or self.b.finished)


class ProxyRecorder:
    """Trajectories of one proxied run: builds their events and appends them, in order, through the writer."""

    def __init__(self, run_id: str, questions: Sequence[Question], providers: Sequence[str], config: dict[str, Any],
                 *, final: FinalMode = "call", by: str = "proxy") -> None:
        """`final`: "call", a trajectory is answered only by `…/final {"answer": …}`; "last-reply", its last model
        reply without tool calls is the answer when it closes without one (docs/concepts/shown.md); `by`: the command
        recording (engine.CLIENT_LOOPS), whose runs it may continue."""
        self.run_id = run_id
        self.by = by
        self.final_mode = final
        self.questions = {q.qid: q for q in questions}
        self.providers = frozenset(providers)
        self.config = config
        self.trajs: dict[str, Traj] = {}
        send, recv = anyio.create_memory_object_stream[_Item](math.inf)
        self._send: MemoryObjectSendStream[_Item] = send
        self._recv: MemoryObjectReceiveStream[_Item] = recv
        self.appended = 0
        self._by_text: dict[str, str] | None = None  # question text -> qid, built on first use

    # -- start, restart, stop ---------------------------------------------------------------------------------------

    def head(self, log: EventLog) -> list[NewEvent]:
        """run.started and the questions, when this run is new; a run recorded by another command is refused."""
        return open_run(log, self.run_id, self.config, self.questions.values(), by=self.by)

    def restore(self, log: EventLog, spent: Callable[[str, list[Payload]], Fraction] | None = None) -> None:
        """Every trajectory of this run already in the store, so a restarted proxy continues them without duplicates;
        `spent(provider, payloads)`: the USD an open one spent (for `--max-usd`)."""
        cur = log.cursor()
        try:
            rows = cur.execute(
                "SELECT stream_id, payload FROM events WHERE run_id = ? AND stream_id LIKE 'traj:%' ORDER BY position",
                [self.run_id],
            ).fetchall()
        finally:
            cur.close()
        by_stream: dict[str, list[Payload]] = {}
        for stream_id, payload in rows:
            by_stream.setdefault(stream_id, []).append(decode_payload(payload))
        for payloads in by_stream.values():
            first = payloads[0]
            if isinstance(first, TrajectoryStarted):
                last = payloads[-1]
                limited = last.error if isinstance(last, TrajectoryFinished) and last.reason == "limit" else None
                t = self.trajs[first.trajectory_id] = Traj(provider=first.provider, qid=first.qid,
                                                           b=Builder.resume(payloads), limited=limited)
                if spent is not None and not t.finished:
                    t.spent = spent(t.provider, payloads)

    def open_trajectories(self) -> list[Traj]:
        return [t for t in self.trajs.values() if not t.finished]

    def abandon_open(self) -> int:
        """Finish every trajectory still open (the proxy is stopping): with `--final last-reply` and a reply to take,
        answered by it; else with reason `abandoned`. Returns how many were abandoned."""
        abandoned = 0
        for t in self.open_trajectories():
            if self.final_mode == "last-reply" and t.b.last_reply is not None:
                iteration, text = t.b.last_reply
                t.b.final(text, iteration=iteration, citations=t.citations)
                t.b.finish("answered")
            else:
                t.b.finish("abandoned")
                abandoned += 1
            self._emit(t)
        return abandoned

    # -- calls in flight --------------------------------------------------------------------------------------------

    def begin(self, t: Traj, *, chat: bool) -> None:
        """A call of `t` is being forwarded (it is recorded, or given up, by `end`)."""
        t.inflight += 1
        t.chats += chat

    def end(self, t: Traj, *, chat: bool) -> None:
        t.inflight -= 1
        t.chats -= chat
        if t.inflight == 0 and t.idle is not None:
            t.idle.set()
            t.idle = None

    async def settle(self, t: Traj) -> None:
        """Wait until every call of `t` in flight is recorded (their events queue before what follows)."""
        while t.inflight:
            if t.idle is None:
                t.idle = anyio.Event()
            await t.idle.wait()

    async def settle_all(self) -> None:
        for t in list(self.trajs.values()):
            await self.settle(t)

    async def run(self, writer: Writer, gather_s: float = 0.0) -> None:
        """Drain the queue into the writer, in order, many calls per append; returns when the queue is closed.

        `gather_s`: after the first queued call, wait this long for others to share its commit (a commit is most
        of the proxy's CPU per call); only where no reply waits for its commit."""
        async with self._recv:
            async for first in self._recv:
                if gather_s > 0:
                    await anyio.sleep(gather_s)
                batch = [first]
                while True:
                    try:
                        batch.append(self._recv.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                events = [e for evs, _, _ in batch for e in evs]
                blobs = [b for _, bs, _ in batch for b in bs]
                await writer.append(events, blobs=blobs)
                self.appended += len(events)
                for _, _, done in batch:
                    if done is not None:
                        done.set()

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        done = anyio.Event()
        self._send.send_nowait(([], [], done))
        await done.wait()

    def close(self) -> None:
        self._send.close()

    # -- calls ------------------------------------------------------------------------------------------------------

    def qid_of_text(self, text: str) -> str | None:
        """The qid whose question is exactly `text` (blank space around it aside), as `collect` matches them."""
        if self._by_text is None:
            self._by_text = {}
            for q in self.questions.values():
                self._by_text.setdefault(q.question.strip(), q.qid)
        return self._by_text.get(text.strip())

    def asking(self, provider: str | None, value: str) -> list[Traj]:
        """The open trajectories (of `provider`, when given) whose last turn's tool calls name `value`."""
        v = value.strip()
        return [t for t in self.open_trajectories() if (provider is None or t.provider == provider) and v in t.asked]

    def lookup(self, provider: str, qid: str, epoch: int) -> tuple[Traj | None, str | None]:
        """The trajectory a request belongs to, started now when new; or an error line (unknown qid/provider)."""
        if provider not in self.providers:
            return None, f"unknown provider {provider!r} (known: {', '.join(sorted(self.providers))})"
        q = self.questions.get(qid)
        if q is None:
            return None, f"unknown qid {qid!r}: not in the question file of run {self.run_id!r}"
        tid = trajectory_id(self.run_id, provider, qid, epoch=epoch)  # `<R>:<provider>:<qid>`, epoch e >= 2 `~e`
        t = self.trajs.get(tid)
        if t is None:
            self.trajs[tid] = t = Traj(provider=provider, qid=qid, b=Builder(tid))
            t.b.start(qid=qid, provider=provider, question=q.question, gold_answer=q.answer, epoch=epoch)
            self._emit(t)
        return t, None

    def search(
        self, t: Traj, *, query: str, params: dict[str, Any], status: SearchStatus, hits: list[SearchHit],
        latency_ms: float, raw: bytes | None, http_status: int | None, error: str | None,
        secrets: Sequence[Secret] = (), client_disconnected: bool = False,
    ) -> anyio.Event:
        """search.called, one search.result per hit (doc_ids in order of appearance), search.completed."""
        if t.finished:
            return _after_finish()
        hits = scrub_parsed(hits, configured_secrets(*secrets))  # before the doc ids and normalised URLs are taken
        # the proxy makes one attempt and has no limits of its own: provider time is the whole call, no queueing
        t.b.search(query=query, provider=t.provider, params=params, status=status, hits=hits, latency_ms=latency_ms,
                   raw=raw or None, http_status=http_status, error=error, provider_ms=latency_ms, queue_ms=0.0,
                   client_disconnected=client_disconnected)
        return self._emit(t, secrets)

    def fetch(
        self, t: Traj, *, url: str, status: FetchStatus, content: str | None, n_bytes: int, n_tokens: int,
        latency_ms: float, http_status: int | None, error: str | None, secrets: Sequence[Secret] = (),
        client_disconnected: bool = False,
    ) -> anyio.Event:
        """fetch.called / fetch.completed against the doc_id of the result with the same normalised URL."""
        if t.finished:
            return _after_finish()
        if content is not None:  # the page is a blob named by its digest: scrubbed before the digest is taken
            content = scrub_text(content, *configured_secrets(*secrets))
        t.b.fetch(url=url, status=status, content=content, n_bytes=n_bytes, n_tokens=n_tokens, latency_ms=latency_ms,
                  http_status=http_status, error=error, provider_ms=latency_ms, queue_ms=0.0,
                  client_disconnected=client_disconnected)
        return self._emit(t, secrets)

    def chat(
        self, t: Traj, *, text: str | None, tool_calls: list[ToolCall], usage: Usage, latency_ms: float,
        finish_reason: str | None, raw: bytes | None, messages: list[Message] | None,
        tools: list[dict[str, Any]] | None, secrets: Sequence[Secret] = (), client_disconnected: bool = False,
        reply_id: str | None = None, previous_id: str | None = None, head: Sequence[Message] = (),
        model: str | None = None, api: str | None = None, hosted: HostedTurn | None = None,
    ) -> anyio.Event:
        """model.responded with the request as the proxy forwarded it (keys dropped, scrubbed before its digests);
        a Responses request continuing `previous_id` is recorded with that reply's conversation before it (after its
        own instructions, `head`: an earlier request's instructions are not carried on)."""
        if t.finished:
            return _after_finish()
        if previous_id is not None and messages is not None:
            messages = [*t.replies.get(previous_id, []), *messages]
        if reply_id is not None and messages is not None:
            t.replies[reply_id] = [*messages, assistant_message(text, tool_calls)]
            while len(t.replies) > MAX_KEPT_REPLIES:
                t.replies.pop(next(iter(t.replies)))
        if head and messages is not None:  # this request's instructions: sent first, never carried on
            messages = [*head, *messages]
        if messages is not None:
            messages = scrub_parsed(messages, configured_secrets(*secrets))
            tools = scrub_parsed(tools, configured_secrets(*secrets)) if tools is not None else None
        t.asked = frozenset(v.strip() for c in tool_calls for v in _strings(c.arguments) if v.strip())
        t.b.model(text=text, tool_calls=tool_calls, usage=usage, latency_ms=latency_ms, provider_ms=latency_ms,
                  queue_ms=0.0, finish_reason=finish_reason, raw=raw or None, messages=messages, tools=tools,
                  client_disconnected=client_disconnected, model=model, api=api)
        if hosted is not None:  # docs/how-to/hosted.md: the hosted tool's items become search and fetch events
            t.b.hosted(hosted)
            t.citations = list(hosted.citations) or t.citations
        return self._emit(t, secrets)

    def chat_failed(self, t: Traj, *, model: str, status: str, http_status: int | None, error: str,
                    secrets: Sequence[Secret] = (), client_disconnected: bool = False) -> anyio.Event:
        if t.finished:
            return _after_finish()
        t.b.failed(what=f"chat:{model}", status=status, http_status=http_status, error=error,
                   client_disconnected=client_disconnected)
        return self._emit(t, secrets)

    def final(self, t: Traj, answer: str, secrets: Sequence[Secret] = (), iteration: int | None = None) -> anyio.Event:
        """answer.final and trajectory.finished (answered); the returned event is set once both are committed."""
        if t.finished:  # the proxy's stop finished it while this `final` waited for its calls
            return _after_finish()
        t.b.final(answer, iteration=iteration, citations=t.citations)
        t.b.finish("answered")
        return self._emit(t, secrets)

    def limit(self, t: Traj, why: str) -> anyio.Event:
        """trajectory.finished with reason `limit` and the limit in `error` (a guardrail stopped it)."""
        if t.finished:
            return _after_finish()
        t.limited = why
        t.b.finish("limit", error=why)
        return self._emit(t)

    def emit(self, t: Traj, secrets: Sequence[Secret] = ()) -> anyio.Event:
        """Queue what `t`'s builder built since the last call (a caller that builds through `t.b` itself)."""
        return self._emit(t, secrets)

    def _emit(self, t: Traj, secrets: Sequence[Secret] = ()) -> anyio.Event:
        """Queue what the trajectory's builder built for one call; the returned event is set once it is committed
        (a reply waits for it).

        The one place every proxied event passes: each string in it (text, tool calls, titles, snippets, params,
        error lines) has every key of the call and every configured key replaced by `***` (docs/concepts/security.md). Blobs are
        named by their digests, so they arrive scrubbed (the reply's bytes as they entered, the page and the request
        messages above)."""
        built, blobs = t.b.take()
        payloads = scrub_parsed(built, configured_secrets(*secrets))
        stream = trajectory_stream(t.trajectory_id)
        first = t.b.built - len(payloads)
        events = [NewEvent(stream_id=stream, run_id=self.run_id, payload=p, event_id=_event_id(t.trajectory_id, first + k))
                  for k, p in enumerate(payloads)]
        done = anyio.Event()
        self._send.send_nowait((events, blobs, done))
        return done


def _after_finish() -> anyio.Event:
    """What a call that ends after its trajectory finished records: nothing (no event follows trajectory.finished;
    `final` and the limits wait for the calls in flight, so only a call cut off by the proxy's stop gets here)."""
    done = anyio.Event()
    done.set()
    return done


def _event_id(trajectory_id: str, index: int) -> uuid.UUID:
    """Content-derived from the trajectory and the event's index in it, so a re-sent append is a no-op."""
    return stable_event_id("proxy", trajectory_id, str(index))


def config_of(*, upstream: str, questions: str, dataset_id: str, providers: Sequence[str],
              limits: dict[str, Any] | None = None, final: FinalMode = "call") -> dict[str, Any]:
    """The run.started config of a proxied run (the `proxy` key tells replay there is no agent loop of ours); the
    guardrails and `--final last-reply` only when given, so a run without them keeps its config bytes."""
    proxy: dict[str, Any] = {"upstream": upstream}
    if limits:
        proxy["limits"] = limits
    if final != "call":
        proxy["final"] = final
    return {
        "proxy": proxy,
        "dataset": {"path": questions, "id": dataset_id},
        "providers": {p: {"kind": p, "params": {}} for p in sorted(providers)},
    }


def _strings(arguments: str) -> list[str]:
    """Every string value of a tool call's JSON arguments (none when they do not parse)."""
    try:
        value = msgspec.json.decode(arguments)
    except (msgspec.DecodeError, RecursionError):
        return []
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


_T = TypeVar("_T")


async def record_while(recorder: ProxyRecorder, log: EventLog, head: list[NewEvent], work: Callable[[], Awaitable[_T]],
                       *, settle_s: float | None = None, gather_s: float = 0.0) -> tuple[_T, int]:
    """Run `work` while the recorder writes to the store (its `head` first); then every trajectory still open is
    finished `abandoned` (after up to `settle_s` seconds for open calls to settle): work's value and how many.
    `gather_s`: as `ProxyRecorder.run`."""
    async with open_writer(log, max_delay=0.0) as writer:  # the recorder batches already
        if head:
            await writer.append(head)
        async with anyio.create_task_group() as recording:
            recording.start_soon(recorder.run, writer, gather_s)
            try:
                value = await work()
            finally:
                if settle_s is not None:
                    with anyio.move_on_after(settle_s, shield=True):
                        await recorder.settle_all()
                abandoned = recorder.abandon_open()
                recorder.close()  # the recorder drains what is queued, then its task ends
    return value, abandoned
