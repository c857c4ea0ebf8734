"""One trajectory of docs/concepts/protocol.md: the agent loop over search_web / fetch_page, buffered into one atomic append.

Crash safety (decided here): a trajectory's events are kept in memory while it runs and written in ONE
`append` (events and blobs in the same transaction, `expected={stream: -1}`) when it ends. A crash or Ctrl-C
therefore never leaves half a trajectory in the store: a stream either holds a whole trajectory ending in
`trajectory.finished`, or nothing. Resume is then "run every (question, provider) whose stream is empty";
the cost is redoing the calls of the trajectories that were in flight at the crash (at most
`max_concurrent` of them), and memory for the buffered events of running trajectories (a few hundred KB each).
Measured with the group-commit writer (1,000 trajectories x 26 events, 64 in flight, DuckDB file): one append
per trajectory costs 0.27 ms CPU per trajectory and 0.44 s wall in 16 commits; one append per turn (6 per
trajectory) costs 0.70 ms and 2.25 s in 96 commits. Atomic is both safer and cheaper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import anyio
import msgspec

from searchtrace.adapters import (
    PAUSE_TURN,
    ChatError,
    ChatModel,
    ChatResponse,
    Fetcher,
    FetchResponse,
    RetryInfo,
    SearchProvider,
    SearchResponse,
)
from searchtrace.engine._prompts import Prompt
from searchtrace.engine._tools import (
    TOOL_SCHEMAS,
    FetchPlan,
    Plan,
    Refusal,
    SearchPlan,
    fetch_content,
    plan,
    refusal_content,
    search_content,
)
from searchtrace.engine._trajectory import Builder, trajectory_id
from searchtrace.engine._transcript import opening_messages, turn_messages
from searchtrace.engine._transcript import (
    rebuild_messages as rebuild_messages,  # re-exported: replay imports it from here
)
from searchtrace.store import (
    FINAL_PREFIX,
    BadInput,
    NewEvent,
    SearchCompleted,
    ToolCall,
    TrajectoryFinished,
    stable_event_id,
    trajectory_stream,
)

_FINAL_RE = re.compile(r"^\s*" + re.escape(FINAL_PREFIX) + r"\s*(.*)\Z", re.DOTALL | re.MULTILINE)


FetchBackend = Fetcher


class Trajectory(msgspec.Struct, frozen=True, kw_only=True):
    """One (question, provider) cell of a run."""

    run_id: str
    provider: str
    qid: str
    question: str
    gold_answer: str = ""
    attempt: int = 1  # > 1: the cell's earlier attempt ended with reason `error` and is recorded again
    supersedes: str | None = None  # trajectory_id of the errored attempt this one replaces
    epoch: int = 1  # docs/concepts/statistics.md: the cell is (provider, qid, epoch)

    @property
    def trajectory_id(self) -> str:
        return trajectory_id(self.run_id, self.provider, self.qid, self.attempt, self.epoch)

    @property
    def stream_id(self) -> str:
        return trajectory_stream(self.trajectory_id)


@dataclass
class Stats:
    """Live counters for the progress display (one per run, shared by every trajectory task)."""

    total: int = 0
    skipped: int = 0
    done: int = 0
    running: int = 0
    failed: int = 0
    model_calls: int = 0
    search_calls: int = 0
    fetch_calls: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    error_kinds: dict[str, int] = field(default_factory=dict)  # why trajectories ended in `error`, by error_kind


_DNS = ("name or service not known", "nodename nor servname", "temporary failure in name resolution",
        "getaddrinfo", "name resolution", "no address associated", "dns")


def error_kind(error: str | None) -> str:
    """The kind of a trajectory's error for the run summary: dns, refused, timeout, http_error, bad_response, ..."""
    text = (error or "").lower()
    if any(s in text for s in _DNS):
        return "dns"
    if "connection refused" in text or "connecterror" in text or "cannot connect" in text:
        return "connection"
    for kind in ("timeout", "http_error", "bad_response", "too_large"):
        if f"({kind})" in text or text.startswith(kind):
            return kind
    return text.split(":", 1)[0].strip()[:40] or "unknown"


class Recorder(Builder):
    """The in-memory buffer of one trajectory of a run: the builder's payloads in order, blobs by digest."""

    def __init__(self, traj: Trajectory) -> None:
        super().__init__(traj.trajectory_id)
        self.traj = traj

    def events(self) -> list[NewEvent]:
        tid, stream = self.traj.trajectory_id, self.traj.stream_id
        return [
            NewEvent(stream_id=stream, run_id=self.traj.run_id, payload=p, event_id=stable_event_id("traj", tid, str(i)))
            for i, p in enumerate(self.payloads)
        ]


def key_rejected(res: SearchResponse | FetchResponse) -> bool:
    """The endpoint refused the key (adapters word it with adapters._errors.key_rejected): every call would fail alike."""
    error = res.error or ""
    return res.status == "http_error" and (
        res.http_status in (401, 403) or " rejected the key in " in error or " rejected the request (no key was sent)" in error
    )


def final_answer(text: str | None) -> str | None:
    """Text after `FINAL ANSWER:` when a line of the reply starts with it (the first such line), else None."""
    if not text:
        return None
    m = _FINAL_RE.search(text)
    return m.group(1).strip() if m else None


class Agent:
    """Everything a trajectory needs besides its question; one per provider, shared by its trajectories."""

    def __init__(
        self,
        *,
        chat: ChatModel,
        search: SearchProvider,
        fetch: FetchBackend,
        prompt: Prompt,
        max_iterations: int = 10,
        stats: Stats | None = None,
    ) -> None:
        self.chat = chat
        self.search = search
        self.fetch = fetch
        self.prompt = prompt
        self.max_iterations = max_iterations
        self.stats = stats or Stats()

    async def run(self, traj: Trajectory, rec: Recorder) -> TrajectoryFinished:
        """Runs the loop, filling `rec`; a ChatError ends it with reason `error`, other exceptions propagate."""
        tid = traj.trajectory_id
        rec.start(qid=traj.qid, provider=traj.provider, question=traj.question, gold_answer=traj.gold_answer,
                  attempt=traj.attempt, supersedes=traj.supersedes, epoch=traj.epoch)
        messages = opening_messages(self.prompt.text, traj.question, self.prompt.user_template)
        for iteration in range(1, self.max_iterations + 1):
            try:
                reply = await self.chat.complete(messages, tools=TOOL_SCHEMAS, trace_id=tid)
            except ChatError as exc:
                if exc.auth:  # a rejected key fails every trajectory alike: stop the run, record nothing
                    raise BadInput(exc.message) from None
                self._retried(rec, list(getattr(exc, "retries", []) or []), None)
                status = getattr(exc, "status", None)
                return rec.finish("error", f"chat failed ({status}): {getattr(exc, 'message', str(exc))}")
            self._account(reply)
            self._retried(rec, reply.retries, None)
            rec.model(iteration=iteration, text=reply.text, tool_calls=reply.tool_calls, usage=reply.usage,
                      latency_ms=reply.latency_ms, provider_ms=reply.provider_ms, queue_ms=reply.queue_ms,
                      finish_reason=reply.finish_reason, raw=reply.raw, messages=messages, tools=TOOL_SCHEMAS,
                      model=reply.model, api=reply.api)
            answer = final_answer(reply.text) if reply.finish_reason != PAUSE_TURN else None  # paused: not done
            if answer is not None:
                rec.final(answer, iteration)
                return rec.finish("answered")
            if iteration == self.max_iterations:
                break  # tool calls of the last turn are recorded in model.responded but not executed
            results = await self._tools(traj, iteration, reply.tool_calls, rec) if reply.tool_calls else []
            messages = messages + turn_messages(reply.text, reply.tool_calls, results, reply.finish_reason)
        return rec.finish("max_iterations")

    def _retried(self, rec: Recorder, infos: list[RetryInfo], call_id: str | None) -> None:
        rec.retried(infos, call_id)
        self.stats.retries += len(infos)

    def _account(self, reply: ChatResponse) -> None:
        s = self.stats
        s.model_calls += 1
        s.input_tokens += reply.usage.input_tokens
        s.output_tokens += reply.usage.output_tokens

    async def _tools(
        self, traj: Trajectory, iteration: int, calls: list[ToolCall], rec: Recorder
    ) -> list[tuple[str, str]]:
        """Runs one turn's tool calls concurrently; records them in call order; returns (call_id, content) in order."""
        plans: list[Plan] = [plan(rec.docs, c.call_id, c.name, c.arguments) for c in calls]
        results: list[SearchResponse | FetchResponse | None] = [None] * len(plans)
        tid = traj.trajectory_id

        async def one(i: int, todo: Plan) -> None:
            if isinstance(todo, SearchPlan):
                self.stats.search_calls += 1
                results[i] = await self.search.search(todo.query, trace_id=tid)
            elif isinstance(todo, FetchPlan):
                self.stats.fetch_calls += 1
                results[i] = await self.fetch.fetch(todo.doc.url, trace_id=tid)

        async with anyio.create_task_group() as tg:
            for i, todo in enumerate(plans):
                if not isinstance(todo, Refusal):
                    tg.start_soon(one, i, todo)

        for res in results:
            if res is not None and key_rejected(res):
                raise BadInput(res.error or f"HTTP {res.http_status}: the endpoint rejected its API key")
        out: list[tuple[str, str]] = []
        for todo, res in zip(plans, results, strict=True):
            if isinstance(todo, Refusal):
                rec.refused(call_id=todo.call_id, iteration=iteration, name=todo.name, arguments=todo.arguments,
                            reason=todo.reason)
                out.append((todo.call_id, refusal_content(todo.reason)))
            elif isinstance(todo, SearchPlan):
                assert isinstance(res, SearchResponse)
                out.append((todo.call_id, self._record_search(todo, iteration, res, rec)))
            else:
                assert isinstance(res, FetchResponse)
                out.append((todo.call_id, self._record_fetch(todo, iteration, res, rec)))
        return out

    def _record_search(self, todo: SearchPlan, iteration: int, res: SearchResponse, rec: Recorder) -> str:
        self.stats.retries += len(res.retries)
        return record_search(rec, todo, iteration, res, self.search)

    def _record_fetch(self, todo: FetchPlan, iteration: int, res: FetchResponse, rec: Recorder) -> str:
        self.stats.retries += len(res.retries)
        return record_fetch(rec, todo, iteration, res)


def record_search(b: Builder, todo: SearchPlan, iteration: int, res: SearchResponse, search: SearchProvider) -> str:
    """One performed search_web call into `b` (as every tool loop of ours records it); the text the model sees."""
    found = b.search(call_id=todo.call_id, iteration=iteration, query=todo.query, provider=search.name,
                     params=dict(search.params), status=res.status,
                     hits=res.hits if res.status == "ok" else [], latency_ms=res.latency_ms,
                     provider_ms=res.provider_ms, queue_ms=res.queue_ms, raw=res.raw,
                     http_status=res.http_status, error=res.error, retries=res.retries)
    done = b.payloads[-1]
    assert isinstance(done, SearchCompleted)
    return search_content(done, found)


def record_fetch(b: Builder, todo: FetchPlan, iteration: int, res: FetchResponse) -> str:
    """One performed fetch_page call into `b`; the text the model sees."""
    doc = todo.doc
    content = res.content if res.status == "ok" else None
    done = b.fetch(call_id=todo.call_id, iteration=iteration, doc_id=doc.doc_id, url=doc.url, status=res.status,
                   content=content, n_bytes=res.n_bytes, n_tokens=res.n_tokens, cache_hit=res.cache_hit,
                   latency_ms=res.latency_ms, provider_ms=res.provider_ms, queue_ms=res.queue_ms,
                   http_status=res.http_status, error=res.error, retries=res.retries)
    return fetch_content(done, doc, content)
