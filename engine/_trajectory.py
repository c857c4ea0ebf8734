"""A trajectory's one home (docs/concepts/shown.md): its identity, doc_id numbering, every payload and blob it records, and the
one fold every reader uses.

The agent loop, the proxy and both importers write a trajectory through a `Builder`, so the same interaction gives
the same payload bytes whichever path recorded it; transcript, replay, export, explorer and proxy restore read a
trajectory back through `fold`. It is also the one place keys an agent put in tool arguments or URLs are scrubbed
(`scrub_named`: every payload, blob and request fingerprint; a URL before it is normalised, so its identity is the
scrubbed URL's on every path).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from searchtrace.adapters import HOSTED_OPAQUE as OPAQUE
from searchtrace.adapters import (
    PAUSE_TURN,
    HostedTurn,
    RetryInfo,
    SearchHit,
    norm_url,
    scrub_named,
    scrub_named_bytes,
    scrub_named_text,
    url_domain,
)
from searchtrace.engine._documents import OPAQUE_KEY
from searchtrace.store import (
    AnswerFinal,
    CallFailed,
    CallRetried,
    Citation,
    FetchCalled,
    FetchCompleted,
    FetchStatus,
    ModelResponded,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    SearchStatus,
    ToolCall,
    ToolCalled,
    ToolRefused,
    TrajectoryFinished,
    TrajectoryReason,
    TrajectoryStarted,
    Usage,
    cited_doc_ids,
    digest,
    final_text,
    surface_chars,
)

Message = dict[str, Any]
Ms = float | msgspec.UnsetType  # docs/reference/prices.md clean latency: UNSET where not measured
_UNSET: Any = msgspec.UNSET


_ID_ESCAPES = str.maketrans({"%": "%25", "~": "%7E", "#": "%23"})


def _id_qid(qid: str) -> str:
    """The qid as a trajectory id holds it: unchanged unless it holds `~`, `#` or `%`, which are then written %7E,
    %23 and %25, so no qid ends like another's epoch or attempt suffix (an escaped qid always holds a `%`, an
    unchanged one never a `~` or `#`: two qids never share an id)."""
    return qid.translate(_ID_ESCAPES) if any(c in qid for c in "%~#") else qid


def trajectory_id(run_id: str, provider: str, qid: str, attempt: int = 1, epoch: int = 1) -> str:
    """Deterministic, so a resumed run finds the trajectories it already holds; epoch e > 1 adds `~e`, then
    attempt n > 1 adds `#n` (docs/concepts/statistics.md); a qid holding those signs is escaped (`_id_qid`)."""
    base = f"{run_id}:{provider}:{_id_qid(qid)}" + ("" if epoch == 1 else f"~{epoch}")
    return base if attempt == 1 else f"{base}#{attempt}"


class Attempts:
    """The latest attempt of a cell, defined once (docs/concepts/statistics.md): a trajectory is the latest attempt of its cell unless
    a later `trajectory.started` names it in `supersedes` (a cell that ended in `error` is recorded again as attempt
    n+1, which supersedes attempt n; events are never updated or deleted).

    Fed every start in position order; record (resume), grade, export and analytics' Python readers ask it, and
    analytics' SQL (`not_superseded`) is its twin on the `trajectories` relation. Holds what it was fed, hence a
    class."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.superseded: set[str] = set()  # trajectory ids a later start supersedes

    def add(self, trajectory_id: str, supersedes: str | None) -> None:
        if supersedes is not None and supersedes in self.seen:
            self.superseded.add(supersedes)
        self.seen.add(trajectory_id)

    def is_latest(self, trajectory_id: str) -> bool:
        return trajectory_id not in self.superseded


def canonical(value: Any) -> bytes:
    """The canonical JSON of a message or a tool list, keys scrubbed: the bytes its digest names (keys sorted)."""
    return scrub_named_bytes(msgspec.json.encode(value, order="sorted"))


def request_sha256(messages: list[Message], tools: list[dict[str, Any]] | None, *, scrub: bool = True) -> str:
    """Fingerprint of one model request (ModelResponded.request_sha256), for replay divergence checks; of the
    request as stored (keys scrubbed), so a replay built from what is stored compares equal. `scrub=False` when
    the caller knows no part of the request holds a key (the builder does: it scrubbed each message)."""
    data = msgspec.json.encode({"messages": messages, "tools": tools or []}, order="sorted")
    return hashlib.sha256(scrub_named_bytes(data) if scrub else data).hexdigest()


class DocConflict(ValueError):
    """One doc_id named two different URLs in one trajectory (an import must refuse it: it would move items)."""


class Builder:
    """One trajectory being written: its payloads in order, its blobs by digest, its doc_ids and counters.

    Holds state (numbering, the request messages already stored), hence a class. `take()` hands over what was built
    since the last take, so the proxy appends call by call and the agent once at the end."""

    def __init__(self, trajectory_id: str) -> None:
        self.trajectory_id = trajectory_id
        self.payloads: list[Payload] = []  # built and not yet taken
        self.blobs: dict[str, bytes] = {}  # likewise, by digest
        self.built = 0  # payloads built in all (taken or not): the next one's index in the stream
        self.docs: dict[str, SearchResult] = {}  # doc_id -> its result
        self.by_url: dict[str, str] = {}  # url_normalized -> doc_id of its first appearance
        self.usage = Usage()
        self.turns = 0  # model.responded so far (the iteration of the latest)
        self.searches = 0
        self.fetches = 0
        self.finished = False
        # the latest model reply without tool calls, as (iteration, text): the answer `proxy --final last-reply` takes
        # (a paused reply, Claude's `pause_turn`, is not one: its turn goes on)
        self.last_reply: tuple[int, str] | None = None
        self._seen: list[Message] = []  # the last request's messages, with their digests ...
        self._seen_digests: list[str] = []  # ... so a growing conversation hashes (and hands over) each message once
        self._seen_keys: list[bool] = []  # ... and whether each held a key (was changed by scrubbing)
        self._tools: tuple[list[dict[str, Any]], str, bool] | None = None  # the last tool list, its digest, likewise

    # -- plumbing ---------------------------------------------------------------------------------------------------

    def _add(self, payload: Payload) -> None:
        # the caller keeps what it built, the store gets it scrubbed (a result and a fetch were, from their hit and URL)
        self.payloads.append(payload if isinstance(payload, SearchResult | FetchCalled) else scrub_named(payload))
        self.built += 1

    def blob(self, data: bytes | None) -> str | None:
        """Keep `data` as a blob, keys scrubbed; its digest (None for no data)."""
        if data is None:
            return None
        data = scrub_named_bytes(data)
        d = digest(data)
        self.blobs.setdefault(d, data)
        return d

    def take(self) -> tuple[list[Payload], list[bytes]]:
        """What was built since the last take: payloads in order and their new blobs."""
        out, blobs = self.payloads, list(self.blobs.values())
        self.payloads, self.blobs = [], {}
        return out, blobs

    @property
    def iteration(self) -> int:
        """The model turn a tool call belongs to (1 before any model turn, as for a proxied search first)."""
        return max(self.turns, 1)

    # -- payloads ---------------------------------------------------------------------------------------------------

    def start(self, *, qid: str, provider: str, question: str = "", gold_answer: str = "", attempt: int = 1,
              supersedes: str | None = None, epoch: int = 1) -> TrajectoryStarted:
        p = TrajectoryStarted(trajectory_id=self.trajectory_id, qid=qid, provider=provider, question=question,
                              gold_answer=gold_answer, attempt=attempt, supersedes=supersedes,
                              epoch=_UNSET if epoch == 1 else epoch)
        self._add(p)
        return p

    def request(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> tuple[list[str], str]:
        """The digests of a request's messages and of its tools, each stored once as a blob (docs/concepts/shown.md)."""
        seen, digests = self._seen, self._seen_digests
        keep = 0
        # the same objects (the agent loop), or equal ones (the proxy decodes every request afresh)
        while keep < len(seen) and keep < len(messages) and (messages[keep] is seen[keep] or messages[keep] == seen[keep]):
            keep += 1
        out, keys = digests[:keep], self._seen_keys[:keep]
        for m in messages[keep:]:
            raw = msgspec.json.encode(m, order="sorted")
            data = scrub_named_bytes(raw)  # canonical(m)
            d = digest(data)
            self.blobs.setdefault(d, data)
            out.append(d)
            keys.append(data != raw)
        self._seen, self._seen_digests, self._seen_keys = list(messages), out, keys
        listed = tools or []
        if self._tools is None or not (self._tools[0] is listed or self._tools[0] == listed):
            raw = msgspec.json.encode(listed, order="sorted")
            data = scrub_named_bytes(raw)  # canonical(listed)
            tools_digest = digest(data)
            self.blobs.setdefault(tools_digest, data)
            self._tools = (listed, tools_digest, data != raw)
        return list(out), self._tools[1]

    def model(self, *, text: str | None, tool_calls: Sequence[ToolCall] = (), usage: Usage, latency_ms: float,
              finish_reason: str | None, raw: bytes | None, messages: list[Message] | None = None,
              tools: list[dict[str, Any]] | None = None, request_digest: str | None = None,
              provider_ms: Ms = _UNSET, queue_ms: Ms = _UNSET,
              iteration: int | None = None, client_disconnected: bool = False, model: str | None = None,
              api: str | None = None) -> ModelResponded:
        """One model turn. With `messages` the request is evidence: `request_messages`, `tools_digest` and
        `request_sha256` (unless `request_digest` gives it already); `model` and `api` say who answered, over what."""
        self.turns = iteration if iteration is not None else self.turns + 1
        self.usage = self.usage + usage
        request_messages: Any = _UNSET
        tools_digest: Any = _UNSET
        if messages is not None:
            request_messages, tools_digest = self.request(messages, tools)
            if request_digest is None:  # each message was scrubbed above: the whole needs it only if one held a key
                held = any(self._seen_keys) or (self._tools is not None and self._tools[2])
                request_digest = request_sha256(messages, tools, scrub=held)
        p = ModelResponded(iteration=self.turns, text=text, tool_calls=list(tool_calls), usage=usage,
                           latency_ms=latency_ms, finish_reason=finish_reason, raw_digest=self.blob(raw),
                           request_sha256=request_digest, request_messages=request_messages, tools_digest=tools_digest,
                           provider_ms=provider_ms,
                           queue_ms=queue_ms, client_disconnected=_flag(client_disconnected),
                           model=model or _UNSET, api=api or _UNSET)
        if not tool_calls and text and text.strip() and finish_reason != PAUSE_TURN:
            self.last_reply = (self.turns, text)
        self._add(p)
        return p

    def search(self, *, query: str, provider: str, status: SearchStatus, hits: Iterable[SearchHit],
               latency_ms: float, call_id: str | None = None, iteration: int | None = None,
               params: dict[str, Any] | None = None, doc_ids: Sequence[str] | None = None, raw: bytes | None = None,
               http_status: int | None = None, error: str | None = None, provider_ms: Ms = _UNSET,
               queue_ms: Ms = _UNSET, retries: Sequence[RetryInfo] = (),
               client_disconnected: bool = False) -> list[SearchResult]:
        """search.called, its retries, one search.result per hit (doc_ids d1, d2, … in order of appearance unless
        given), search.completed; returns the results."""
        self.searches += 1
        call_id = call_id or f"s{self.searches}"
        self._add(SearchCalled(call_id=call_id, iteration=self.iteration if iteration is None else iteration,
                               query=query, provider=provider, params=params or {}))
        self.retried(retries, call_id)
        found: list[SearchResult] = []
        for i, hit in enumerate(scrub_named(list(hits))):  # keys scrubbed before URLs are normalised (one scan)
            doc_id = doc_ids[i] if doc_ids is not None else f"d{len(self.docs) + 1}"
            r = search_result(call_id, doc_id, self._sealed(hit))
            known = self.docs.get(doc_id)
            if known is not None and known.url_normalized != r.url_normalized:
                raise DocConflict(f"doc_id {doc_id!r} names {known.url!r} and {r.url!r}")
            self.docs.setdefault(doc_id, r)
            self.by_url.setdefault(r.url_normalized, doc_id)
            self._add(r)
            found.append(r)
        self._add(SearchCompleted(call_id=call_id, status=status, n_results=len(found), latency_ms=latency_ms,
                                  raw_digest=self.blob(raw), http_status=http_status, error=error,
                                  provider_ms=provider_ms,
                                  queue_ms=queue_ms, client_disconnected=_flag(client_disconnected)))
        return found

    def hosted(self, turn: HostedTurn, *, iteration: int | None = None) -> None:
        """A hosted layer's searches and page reads (docs/how-to/hosted.md): per search, search.called, one
        search.result per source in the order received, search.completed; per page, fetch.called and fetch.completed
        (the page a blob when the caller received its text, else status hidden). Opaque fields become blobs."""
        for s in turn.searches:
            self.search(query=s.query, provider=turn.layer, status="ok", hits=s.hits, latency_ms=0.0,
                        iteration=iteration, params=s.params or None)
        for f in turn.fetches:
            self.fetch(url=f.url, status="hidden" if f.text is None else "ok", content=f.text,
                       n_tokens=0 if f.text is None else (len(f.text) + 3) // 4, latency_ms=0.0, iteration=iteration)

    def _sealed(self, hit: SearchHit) -> SearchHit:
        """A hosted hit's opaque field (docs/how-to/hosted.md) kept verbatim as a blob, read by replay, never shown
        to the judge: its metadata names the blob instead."""
        if OPAQUE not in hit.metadata:
            return hit
        meta = {k: v for k, v in hit.metadata.items() if k != OPAQUE}
        meta[OPAQUE_KEY] = self.blob(str(hit.metadata[OPAQUE]).encode())
        return msgspec.structs.replace(hit, metadata=meta)

    def doc_of(self, url: str) -> str | None:
        """The doc_id of the first result with this URL (keys scrubbed, then normalised), if any."""
        return self.by_url.get(norm_url(scrub_named_text(url)))

    def fetch(self, *, url: str, status: FetchStatus, content: str | None, n_tokens: int, latency_ms: float,
              doc_id: str | None | msgspec.UnsetType = _UNSET, call_id: str | None = None,
              iteration: int | None = None, n_bytes: int | None = None, cache_hit: bool = False,
              http_status: int | None = None, error: str | None = None, provider_ms: Ms = _UNSET,
              queue_ms: Ms = _UNSET, retries: Sequence[RetryInfo] = (),
              client_disconnected: bool = False) -> FetchCompleted:
        """fetch.called, its retries, fetch.completed; the page (when any) a blob. The doc_id is the result's with
        the same normalised URL unless given."""
        self.fetches += 1
        call_id = call_id or f"f{self.fetches}"
        url = scrub_named_text(url)
        doc = self.doc_of(url) if isinstance(doc_id, msgspec.UnsetType) else doc_id
        self._add(FetchCalled(call_id=call_id, iteration=self.iteration if iteration is None else iteration,
                              doc_id=doc, url=url))
        self.retried(retries, call_id)
        page = content.encode() if content is not None else None
        done = FetchCompleted(call_id=call_id, doc_id=doc, status=status, content_digest=self.blob(page),
                              n_bytes=len(page) if n_bytes is None and page is not None else (n_bytes or 0),
                              n_tokens=n_tokens, cache_hit=cache_hit, latency_ms=latency_ms, http_status=http_status,
                              error=error, provider_ms=provider_ms,
                              queue_ms=queue_ms, client_disconnected=_flag(client_disconnected))
        self._add(done)
        return done

    def refused(self, *, call_id: str, iteration: int, name: str, arguments: str, reason: str) -> ToolRefused:
        p = ToolRefused(call_id=call_id, iteration=iteration, name=name, arguments=arguments, reason=reason)
        self._add(p)
        return p

    def tool(self, *, call_id: str, name: str, arguments: str, status: str, result: bytes | None, latency_ms: float,
             iteration: int | None = None) -> ToolCalled:
        """A call of another tool (neither search nor fetch) with its raw result as a blob."""
        p = ToolCalled(call_id=call_id, iteration=self.iteration if iteration is None else iteration, name=name,
                       arguments=arguments, status=status, result_digest=self.blob(result), latency_ms=latency_ms)
        self._add(p)
        return p

    def retried(self, infos: Sequence[RetryInfo], call_id: str | None) -> None:
        for r in infos:
            self._add(CallRetried(what=r.what, call_id=call_id, attempt=r.attempt, reason=r.reason, wait_s=r.wait_s))

    def failed(self, *, what: str, status: str, call_id: str | None = None, http_status: int | None = None,
               error: str | None = None, attempts: int = 1, client_disconnected: bool = False) -> CallFailed:
        p = CallFailed(what=what, call_id=call_id, status=status, http_status=http_status, error=error,
                       attempts=attempts, client_disconnected=_flag(client_disconnected))
        self._add(p)
        return p

    def final(self, text: str, iteration: int | None = None, citations: Sequence[Citation] = ()) -> AnswerFinal:
        """answer.final; each citation linked to the item of its normalised URL (docs/how-to/hosted.md), if any.
        Without citations given, the doc_ids the answer cites in brackets (`[d3]`) are its citations, taken out of
        its text."""
        answer = final_text(text)
        if not citations:
            answer, ids = cited_doc_ids(answer, self.docs)
            citations = [Citation(url=self.docs[d].url, title=self.docs[d].title) for d in ids]
        linked = [msgspec.structs.replace(c, item=norm_url(c.url) if norm_url(c.url) in self.by_url else None)
                  for c in citations]
        p = AnswerFinal(iteration=self.turns if iteration is None else iteration, text=answer,
                        citations=linked or _UNSET)
        self._add(p)
        return p

    def finish(self, reason: TrajectoryReason, error: str | None = None,
               iterations: int | None = None) -> TrajectoryFinished:
        self.finished = True
        p = TrajectoryFinished(reason=reason, iterations=self.turns if iterations is None else iterations,
                               usage=self.usage, error=error)
        self._add(p)
        return p

    # -- restore ----------------------------------------------------------------------------------------------------

    @classmethod
    def resume(cls, payloads: Sequence[Payload]) -> Builder:
        """A builder that continues a recorded trajectory (a restarted proxy): counters and doc_ids from the fold."""
        f = fold(payloads)
        assert f.started is not None, "a trajectory's stream starts with trajectory.started"
        b = cls(f.started.trajectory_id)
        b.built = len(payloads)
        b.docs = dict(f.docs)
        b.by_url = dict(f.by_url)
        b.turns = f.turns[-1].iteration if f.turns else 0
        b.usage = f.usage
        b.searches = len(f.searches)
        b.fetches = len(f.fetches)
        b.finished = f.finished is not None
        b.last_reply = next(((m.iteration, m.text) for m in reversed(f.turns)
                             if not m.tool_calls and m.text and m.text.strip() and m.finish_reason != PAUSE_TURN),
                            None)
        return b


def _flag(value: bool) -> Any:
    """A flag recorded only when set (UNSET is never encoded, so events without it keep their bytes)."""
    return True if value else _UNSET


def search_result(call_id: str, doc_id: str, hit: SearchHit) -> SearchResult:
    """One normalised hit as its `search.result` event (docs/concepts/protocol.md); the hit comes scrubbed (the
    builder's `search`), so its normalised URL is the scrubbed URL's."""
    return SearchResult(
        call_id=call_id,
        doc_id=doc_id,
        rank=hit.rank,
        title=hit.title,
        url=hit.url,
        url_normalized=norm_url(hit.url),
        domain=hit.domain or url_domain(hit.url),
        snippet=hit.snippet,
        metadata=dict(hit.metadata),
        surface_chars=surface_chars(hit.snippet),
        surface=_UNSET if hit.surface is None else list(hit.surface),
        model_saw_more=_UNSET if hit.model_saw_more is None else hit.model_saw_more,
    )


# -- the fold ---------------------------------------------------------------------------------------------------------


class Search(msgspec.Struct, kw_only=True):
    """One search call as recorded: the call, its results in rank order, its completion (None: still open)."""

    called: SearchCalled
    results: list[SearchResult] = []
    completed: SearchCompleted | None = None
    retries: list[CallRetried] = []


class Fetch(msgspec.Struct, kw_only=True):
    called: FetchCalled
    completed: FetchCompleted | None = None
    retries: list[CallRetried] = []


Step = ModelResponded | Search | Fetch | ToolRefused | CallFailed


class Folded(msgspec.Struct, kw_only=True):
    """A trajectory read back: every event in its place, the one shape all readers share."""

    started: TrajectoryStarted | None = None
    events: list[Payload] = []  # every event in stream order but call.retried: what a replay reproduces one for one
    steps: list[Step] = []  # in recorded order: model turns, tool calls, refusals, failed calls
    turns: list[ModelResponded] = []
    searches: dict[str, Search] = {}  # by call_id, in order (a model may reuse a tool-call id: then the latest
    fetches: dict[str, Fetch] = {}  # call holds the id here, and `steps` holds every call)
    docs: dict[str, SearchResult] = {}  # doc_id -> result (its first appearance)
    by_url: dict[str, str] = {}  # url_normalized -> doc_id of its first appearance
    retries: list[CallRetried] = []  # every retry, those of model calls too
    # the retries of no search or fetch (a model call's), each with the number of steps recorded before it, so a
    # writer of the trajectory (export) puts them back in their place
    loose: list[tuple[int, CallRetried]] = []
    final: AnswerFinal | None = None
    finished: TrajectoryFinished | None = None
    usage: Usage = msgspec.field(default_factory=Usage)  # the sum over model turns
    late: list[Payload] = []  # events after trajectory.finished (a race the proxy now prevents; kept, not hidden)


def fold(payloads: Iterable[Payload]) -> Folded:
    """Fold one trajectory's payloads (in stream order) into a `Folded`."""
    f = Folded()
    for p in payloads:
        if f.finished is not None:
            f.late.append(p)
        if not isinstance(p, CallRetried):
            f.events.append(p)
        if isinstance(p, TrajectoryStarted):
            f.started = p
        elif isinstance(p, ModelResponded):
            f.turns.append(p)
            f.steps.append(p)
            f.usage = f.usage + p.usage
        elif isinstance(p, SearchCalled):
            s = f.searches[p.call_id] = Search(called=p)
            f.steps.append(s)
        elif isinstance(p, SearchResult):
            s_ = f.searches.get(p.call_id)
            if s_ is not None:
                s_.results.append(p)
            f.docs.setdefault(p.doc_id, p)
            f.by_url.setdefault(p.url_normalized, p.doc_id)
        elif isinstance(p, SearchCompleted):
            s_ = f.searches.get(p.call_id)
            if s_ is not None:
                s_.completed = p
        elif isinstance(p, FetchCalled):
            g = f.fetches[p.call_id] = Fetch(called=p)
            f.steps.append(g)
        elif isinstance(p, FetchCompleted):
            g_ = f.fetches.get(p.call_id)
            if g_ is not None:
                g_.completed = p
        elif isinstance(p, CallRetried):
            f.retries.append(p)
            if p.call_id is not None:
                target = f.searches.get(p.call_id) or f.fetches.get(p.call_id)
                if target is not None:
                    target.retries.append(p)
                    continue
            f.loose.append((len(f.steps), p))
        elif isinstance(p, ToolRefused | CallFailed):
            f.steps.append(p)
        elif isinstance(p, AnswerFinal):
            f.final = p
        elif isinstance(p, TrajectoryFinished):
            f.finished = p
    return f


__all__ = [
    "Attempts",
    "Builder",
    "DocConflict",
    "Fetch",
    "Folded",
    "Message",
    "Search",
    "Step",
    "canonical",
    "fold",
    "request_sha256",
    "search_result",
    "trajectory_id",
]
