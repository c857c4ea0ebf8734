"""The proxy's recording core: per-trajectory state, §3 events for each proxied call, one ordered append queue.

A call's events are built synchronously as soon as its reply is whole (so doc_ids and call ids follow the order in
which replies arrive) and queued; one task drains the queue into the store's group-commit writer. The client gets
its reply without waiting for the commit: a SIGKILL loses at most those calls (in flight), never a committed one,
and a restart continues every open trajectory from what the store holds.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from searchtrace.adapters import (
    SearchHit,
    Secret,
    configured_secrets,
    normalize_url,
    scrub_parsed,
    scrub_text,
)
from searchtrace.engine._agent import trajectory_id
from searchtrace.engine._record import Question, code_version, run_stream
from searchtrace.engine._tools import search_result
from searchtrace.store import (
    AnswerFinal,
    BadInput,
    CallFailed,
    DatasetQuestion,
    EventLog,
    FetchCalled,
    FetchCompleted,
    FetchStatus,
    ModelResponded,
    NewEvent,
    Payload,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    SearchStatus,
    ToolCall,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
    Writer,
    decode_payload,
    digest,
    stable_event_id,
    trajectory_stream,
)

_Item = tuple[list[NewEvent], list[bytes], anyio.Event | None]


@dataclass
class Traj:
    """What the proxy knows of one open trajectory (rebuilt from the store on restart)."""

    trajectory_id: str
    provider: str
    qid: str
    seq: int = 0  # events queued so far: the next event's index (its id is derived from it)
    turns: int = 0  # model.responded so far
    searches: int = 0
    fetches: int = 0
    docs: dict[str, str] = field(default_factory=dict)  # url_normalized -> doc_id of its first appearance
    n_docs: int = 0
    usage: Usage = field(default_factory=Usage)
    finished: bool = False

    @property
    def iteration(self) -> int:
        """The model turn a tool call belongs to (1 before any proxied chat call)."""
        return max(self.turns, 1)


class ProxyRecorder:
    """Trajectories of one proxied run: builds their events and appends them, in order, through the writer."""

    def __init__(self, run_id: str, questions: Sequence[Question], providers: Sequence[str], config: dict[str, Any]) -> None:
        self.run_id = run_id
        self.questions = {q.qid: q for q in questions}
        self.providers = frozenset(providers)
        self.config = config
        self.trajs: dict[str, Traj] = {}
        send, recv = anyio.create_memory_object_stream[_Item](math.inf)
        self._send: MemoryObjectSendStream[_Item] = send
        self._recv: MemoryObjectReceiveStream[_Item] = recv
        self.appended = 0

    # -- start, restart, stop ---------------------------------------------------------------------------------------

    def head(self, log: EventLog) -> list[NewEvent]:
        """run.started and the questions, when this run is new; a run recorded by `record` is refused."""
        for ev in log.read(stream_id=run_stream(self.run_id), types=["run.started"]):
            assert isinstance(ev.payload, RunStarted)
            if "proxy" not in ev.payload.config:
                raise BadInput(f"run {self.run_id!r} is in {log.path} recorded by `record`; choose another --run-id")
            return []
        stream = run_stream(self.run_id)
        out = [NewEvent(stream_id=stream, run_id=self.run_id, event_id=stable_event_id("run.started", self.run_id),
                        payload=RunStarted(run_id=self.run_id, config=self.config, code_version=code_version()))]
        for q in self.questions.values():
            out.append(NewEvent(stream_id=stream, run_id=self.run_id,
                                event_id=stable_event_id("dataset.question", self.run_id, q.qid),
                                payload=DatasetQuestion(qid=q.qid, question=q.question, gold_answer=q.answer,
                                                        strata=dict(q.strata))))
        return out

    def restore(self, log: EventLog) -> None:
        """Every trajectory of this run already in the store, so a restarted proxy continues them without duplicates."""
        cur = log.cursor()
        try:
            rows = cur.execute(
                "SELECT stream_id, payload FROM events WHERE run_id = ? AND stream_id LIKE 'traj:%' ORDER BY position",
                [self.run_id],
            ).fetchall()
        finally:
            cur.close()
        by_stream: dict[str, Traj] = {}
        for stream_id, payload in rows:
            p = decode_payload(payload)
            if isinstance(p, TrajectoryStarted):
                t = Traj(trajectory_id=p.trajectory_id, provider=p.provider, qid=p.qid)
                self.trajs[p.trajectory_id] = by_stream[stream_id] = t
            if stream_id in by_stream:
                _replay(by_stream[stream_id], p)

    def open_trajectories(self) -> list[Traj]:
        return [t for t in self.trajs.values() if not t.finished]

    def abandon_open(self) -> int:
        """Finish every trajectory still open with reason `abandoned` (the proxy is stopping)."""
        open_ = self.open_trajectories()
        for t in open_:
            t.finished = True
            self._emit(t, [TrajectoryFinished(reason="abandoned", iterations=t.turns, usage=t.usage)])
        return len(open_)

    async def run(self, writer: Writer) -> None:
        """Drain the queue into the writer, in order, many calls per append; returns when the queue is closed."""
        async with self._recv:
            async for first in self._recv:
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
            self.trajs[tid] = t = Traj(trajectory_id=tid, provider=provider, qid=qid)
            self._emit(t, [TrajectoryStarted(trajectory_id=tid, qid=qid, provider=provider, question=q.question,
                                             gold_answer=q.answer, epoch=epoch if epoch > 1 else msgspec.UNSET)])
        return t, None

    def search(
        self, t: Traj, *, query: str, params: dict[str, Any], status: SearchStatus, hits: list[SearchHit],
        latency_ms: float, raw: bytes | None, http_status: int | None, error: str | None,
        secrets: Sequence[Secret] = (),
    ) -> anyio.Event:
        """search.called, one search.result per hit (doc_ids in order of appearance), search.completed."""
        hits = scrub_parsed(hits, configured_secrets(*secrets))  # before the doc ids and normalised URLs are taken
        t.searches += 1
        call_id = f"s{t.searches}"
        out: list[Payload] = [SearchCalled(call_id=call_id, iteration=t.iteration, query=query, provider=t.provider,
                                           params=params)]
        for hit in hits:
            t.n_docs += 1
            r = search_result(call_id, f"d{t.n_docs}", hit)
            t.docs.setdefault(r.url_normalized, r.doc_id)
            out.append(r)
        # the proxy makes one attempt and has no limits of its own: provider time is the whole call, no queueing
        out.append(SearchCompleted(call_id=call_id, status=status, n_results=len(hits), latency_ms=latency_ms,
                                   raw_digest=digest(raw) if raw else None, http_status=http_status, error=error,
                                   provider_ms=latency_ms, queue_ms=0.0))
        return self._emit(t, out, [raw] if raw else [], secrets)

    def fetch(
        self, t: Traj, *, url: str, status: FetchStatus, content: str | None, n_bytes: int, n_tokens: int,
        latency_ms: float, http_status: int | None, error: str | None, secrets: Sequence[Secret] = (),
    ) -> anyio.Event:
        """fetch.called / fetch.completed against the doc_id of the result with the same normalised URL."""
        t.fetches += 1
        call_id = f"f{t.fetches}"
        doc_id = t.docs.get(normalize_url(url))
        if content is not None:  # the page is a blob named by its digest: scrubbed before the digest is taken
            content = scrub_text(content, *configured_secrets(*secrets))
        page = content.encode() if content is not None else None
        return self._emit(t, [
            FetchCalled(call_id=call_id, iteration=t.iteration, doc_id=doc_id, url=url),
            FetchCompleted(call_id=call_id, doc_id=doc_id, status=status, content_digest=digest(page) if page is not None else None,
                           n_bytes=n_bytes, n_tokens=n_tokens, cache_hit=False, latency_ms=latency_ms,
                           http_status=http_status, error=error, provider_ms=latency_ms, queue_ms=0.0),
        ], [page] if page is not None else [], secrets)

    def chat(
        self, t: Traj, *, text: str | None, tool_calls: list[ToolCall], usage: Usage, latency_ms: float,
        finish_reason: str | None, raw: bytes | None, request_sha256: str | None, secrets: Sequence[Secret] = (),
    ) -> anyio.Event:
        t.turns += 1
        t.usage = t.usage + usage
        return self._emit(t, [ModelResponded(iteration=t.turns, text=text, tool_calls=tool_calls, usage=usage,
                                      latency_ms=latency_ms, provider_ms=latency_ms, queue_ms=0.0,
                                      finish_reason=finish_reason,
                                      raw_digest=digest(raw) if raw else None, request_sha256=request_sha256)],
                   [raw] if raw else [], secrets)

    def chat_failed(self, t: Traj, *, model: str, status: str, http_status: int | None, error: str,
                    secrets: Sequence[Secret] = ()) -> anyio.Event:
        return self._emit(t, [CallFailed(what=f"chat:{model}", call_id=None, status=status, http_status=http_status,
                                         error=error)], secrets=secrets)

    def final(self, t: Traj, answer: str, secrets: Sequence[Secret] = ()) -> anyio.Event:
        """answer.final and trajectory.finished (answered); the returned event is set once both are committed."""
        t.finished = True
        return self._emit(t, [AnswerFinal(iteration=t.turns, text=answer),
                              TrajectoryFinished(reason="answered", iterations=t.turns, usage=t.usage)], secrets=secrets)

    def _emit(self, t: Traj, payloads: list[Payload], blobs: list[bytes] | None = None,
              secrets: Sequence[Secret] = ()) -> anyio.Event:
        """Queue a call's events; the returned event is set once they are committed (a reply waits for it).

        The one place every proxied event passes: each string in it (text, tool calls, titles, snippets, params,
        error lines) has every key of the call and every configured key replaced by `***` (SPEC §20). Blobs are
        named by their digests, so they arrive scrubbed (the reply's bytes as they entered, the page above)."""
        payloads = scrub_parsed(payloads, configured_secrets(*secrets))
        stream = trajectory_stream(t.trajectory_id)
        events = []
        for p in payloads:
            events.append(NewEvent(stream_id=stream, run_id=self.run_id, payload=p,
                                   event_id=_event_id(t.trajectory_id, t.seq)))
            t.seq += 1
        done = anyio.Event()
        self._send.send_nowait((events, list(blobs or []), done))
        return done


def _event_id(trajectory_id: str, index: int) -> uuid.UUID:
    """Content-derived from the trajectory and the event's index in it, so a re-sent append is a no-op."""
    return stable_event_id("proxy", trajectory_id, str(index))


def _replay(t: Traj, p: Payload) -> None:
    """Advance a restored trajectory's counters by one recorded event."""
    t.seq += 1
    if isinstance(p, ModelResponded):
        t.turns = max(t.turns, p.iteration)
        t.usage = t.usage + p.usage
    elif isinstance(p, SearchCalled):
        t.searches += 1
    elif isinstance(p, SearchResult):
        t.n_docs += 1
        t.docs.setdefault(p.url_normalized, p.doc_id)
    elif isinstance(p, FetchCalled):
        t.fetches += 1
    elif isinstance(p, TrajectoryFinished):
        t.finished = True


def config_of(*, upstream: str, questions: str, dataset_id: str, providers: Sequence[str]) -> dict[str, Any]:
    """The run.started config of a proxied run (the `proxy` key tells replay there is no agent loop of ours)."""
    return {
        "proxy": {"upstream": upstream},
        "dataset": {"path": questions, "id": dataset_id},
        "providers": {p: {"kind": p, "params": {}} for p in sorted(providers)},
    }
