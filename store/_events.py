"""Event bodies of docs/reference/events.md: one tagged union, the tag is the `type` column."""

from __future__ import annotations

import hashlib
import re
import typing
import uuid
from collections.abc import Container
from datetime import datetime
from typing import Any, Literal

import msgspec


class _Body(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=False):
    """Base of every payload; the tag (`type`) is written into the JSON payload too."""


JSON = dict[str, Any]


class Usage(msgspec.Struct, kw_only=True):
    """A model call's tokens by one rule (docs/how-to/claude-gemini.md): `input_tokens` counts every prompt token,
    cached and cache-written ones included; `cached_tokens` / `cache_write_tokens` say how many of them were;
    `reasoning_tokens` are part of `output_tokens`. Build it from a provider's counts with `usage_rule`."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    # absent (UNSET, never encoded) when 0, so every event recorded without cache writes keeps its bytes
    cache_write_tokens: int | msgspec.UnsetType = msgspec.UNSET

    def __add__(self, other: Usage) -> Usage:
        """Totals per trajectory and per judge run are sums of the calls' usage."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=_written(cache_writes(self) + cache_writes(other)),
        )


def _written(n: int) -> int | msgspec.UnsetType:
    return n if n else msgspec.UNSET


def cache_writes(u: Usage) -> int:
    """The cache-write tokens of a usage (0 when the field is absent)."""
    return 0 if isinstance(u.cache_write_tokens, msgspec.UnsetType) else u.cache_write_tokens


def usage_rule(*, prompt: int = 0, output: int = 0, cached: int = 0, cache_write: int = 0, reasoning: int = 0,
               cache_apart: bool = False, reasoning_apart: bool = False) -> Usage:
    """The one usage rule every path applies to a provider's counts (missing counts are 0).

    `cache_apart`: the provider reports cached and cache-write tokens beside `prompt` rather than in it
    (Anthropic's `cache_read_input_tokens` / `cache_creation_input_tokens`), so they are summed in;
    `reasoning_apart`: it reports reasoning beside `output` (Gemini's `thoughtsTokenCount`), so it is added."""
    prompt, output, cached, cache_write, reasoning = (max(0, int(v or 0)) for v in
                                                      (prompt, output, cached, cache_write, reasoning))
    total_in = prompt + cached + cache_write if cache_apart else prompt
    total_out = output + reasoning if reasoning_apart else output
    return Usage(input_tokens=total_in, output_tokens=total_out, reasoning_tokens=min(reasoning, total_out),
                 cached_tokens=min(cached, total_in), cache_write_tokens=_written(min(cache_write, total_in)))


FINAL_PREFIX = "FINAL ANSWER:"


def final_text(answer: str) -> str:
    """The one final-answer rule of every path that records `answer.final`: a leading `FINAL ANSWER:` (any case,
    after blank space) is stripped with the blank space around the answer, so EM and F1 never see it; any other
    answer is kept as it is."""
    text = answer.lstrip()
    if text[: len(FINAL_PREFIX)].upper() == FINAL_PREFIX:
        return text[len(FINAL_PREFIX):].strip()
    return answer


# docs/how-to/hosted.md: an answer cites results by their doc_ids in square brackets, `[d3]` or `[d3, d5]`
_CITES = re.compile(r"\s*\[([^\[\]\n]{1,200})\]")


def cited_doc_ids(answer: str, known: Container[str]) -> tuple[str, list[str]]:
    """(the answer without its doc_id citations, the doc_ids cited in order): a bracket counts only when every name in
    it is one of `known` (the trajectory's doc_ids), so any other bracketed text stays part of the answer."""
    cited: list[str] = []

    def take(m: re.Match[str]) -> str:
        names = [n.strip() for n in m.group(1).split(",")]
        if not all(n and n in known for n in names):
            return m.group(0)
        cited.extend(names)
        return ""

    text = _CITES.sub(take, answer)
    return (text.strip() if cited else answer), cited


class ToolCall(msgspec.Struct, kw_only=True):
    call_id: str
    name: str
    arguments: str  # the raw JSON string the model sent (may be invalid JSON)


class Labels(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    supports_gold: bool
    contradicts_gold: bool
    relevant: bool


class Verdict(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Judge reply, schema version 1 (docs/concepts/judge.md)."""

    snippet: Labels | None  # a reply always has it; None as recorded for an item never shown (docs/concepts/shown.md)
    page: Labels | None
    supports_final_answer: bool
    rationale: str


class JudgeItemRef(msgspec.Struct, kw_only=True):
    trajectory_id: str
    url_normalized: str


class RunStarted(_Body, tag="run.started"):
    run_id: str
    config: JSON
    code_version: str


class DatasetQuestion(_Body, tag="dataset.question"):
    qid: str
    question: str
    gold_answer: str  # the first alias
    strata: dict[str, str] = {}
    # docs/how-to/compare.md: every accepted answer, the first being `gold_answer`; absent (UNSET, never encoded) for a question
    # with one answer, so such events keep their bytes.
    gold_aliases: list[str] | msgspec.UnsetType = msgspec.UNSET


_ALSO = " (also accepted: "


def gold_text(aliases: list[str]) -> str:
    """The gold answer as one text for a prompt: the first alias, then the others as JSON strings
    (`Paris (also accepted: "Paris, France")`); a single answer is itself, so such prompts keep their bytes."""
    if len(aliases) <= 1:
        return aliases[0] if aliases else ""
    return aliases[0] + _ALSO + ", ".join(msgspec.json.encode(a).decode() for a in aliases[1:]) + ")"


def gold_text_aliases(text: str) -> list[str]:
    """The aliases `gold_text` wrote (a text it did not write is one alias)."""
    head, sep, tail = text.partition(_ALSO)
    if sep and tail.endswith(")"):
        try:
            rest = msgspec.json.decode(f"[{tail[:-1]}]", type=list[str])
        except msgspec.DecodeError:
            return [text]
        return [head, *rest]
    return [text]


class TrajectoryStarted(_Body, tag="trajectory.started"):
    trajectory_id: str
    qid: str
    provider: str
    question: str = ""
    gold_answer: str = ""
    # Attempt number of this (question, provider) cell within its run: a cell whose trajectory ended with reason
    # `error` is recorded again by the next `record` (up to `limits.max_attempts`); the new trajectory names the
    # errored one it replaces in `supersedes`, and analytics then read only the latest attempt of each cell.
    attempt: int = 1
    supersedes: str | None = None
    # Epoch e of the cell (docs/concepts/statistics.md, `[run] epochs`): absent (UNSET, never encoded) for epoch 1, so the events of a
    # single-epoch run keep their bytes; read it through `epoch_of`.
    epoch: int | msgspec.UnsetType = msgspec.UNSET


def epoch_of(started: TrajectoryStarted) -> int:
    """The epoch of a trajectory.started (1 when the field is absent)."""
    return 1 if isinstance(started.epoch, msgspec.UnsetType) else started.epoch


class ModelResponded(_Body, tag="model.responded"):
    iteration: int
    text: str | None
    tool_calls: list[ToolCall] = []
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_ms: float = 0.0
    finish_reason: str | None = None
    raw_digest: str | None = None
    # sha256 (hex) of the request this reply answered, so `replay` can tell when a re-run asks something else:
    # hashlib.sha256(msgspec.json.encode({"messages": messages, "tools": tools or []}, order="sorted")).hexdigest()
    # over exactly the `messages`/`tools` passed to `complete(...)`. Storing the same bytes as a blob (its digest is
    # this value) lets replay print a message-level diff. None: recorded without it (replay then cannot see prompt changes).
    request_sha256: str | None = None
    # docs/concepts/shown.md, what the model was sent: the sha256 of each request message's canonical JSON (sorted keys), each
    # message stored once as a blob under that digest, and the digest of the tool list's canonical JSON (a blob
    # too). UNSET (never encoded) on events recorded before, and where the request is unknown (a trace-file import).
    request_messages: list[str] | msgspec.UnsetType = msgspec.UNSET
    tools_digest: str | msgspec.UnsetType = msgspec.UNSET
    # docs/reference/prices.md: latency_ms is the whole call (our own queueing, retries and backoff included); provider_ms the final
    # attempt from request sent to last byte read; queue_ms the waits for our own concurrency and rate limits, all
    # attempts. Absent (UNSET, never encoded) in stores recorded before, in imported traces and for fetch cache hits,
    # so those events keep their bytes; SQL reads them as NULL.
    provider_ms: float | msgspec.UnsetType = msgspec.UNSET
    queue_ms: float | msgspec.UnsetType = msgspec.UNSET
    # docs/concepts/shown.md: a proxied reply the agent stopped reading before its end (it disconnected mid-stream), recorded whole
    # all the same. UNSET (never encoded) otherwise, so every other event keeps its bytes.
    client_disconnected: bool | msgspec.UnsetType = msgspec.UNSET
    # docs/how-to/claude-gemini.md: the model that answered (the reply's name, else the request's) and the model API
    # it was asked over ("chat", "responses", "anthropic", "gemini"); UNSET (never encoded) on events recorded before
    model: str | msgspec.UnsetType = msgspec.UNSET
    api: str | msgspec.UnsetType = msgspec.UNSET


class SearchCalled(_Body, tag="search.called"):
    call_id: str
    iteration: int
    query: str
    provider: str = ""
    params: JSON = {}


class SearchResult(_Body, tag="search.result"):
    call_id: str
    doc_id: str
    rank: int
    title: str
    url: str
    url_normalized: str
    domain: str
    snippet: str
    metadata: JSON = {}
    # docs/how-to/providers.md: characters of the surface text (`surface_chars(snippet)`); left out (UNSET) on events recorded
    # before it and on imported traces, so their bytes stay as they were; readers use length(snippet) then
    surface_chars: int | msgspec.UnsetType = msgspec.UNSET
    # docs/how-to/hosted.md: which of SURFACE_FIELDS the caller received for this result (a hosted search layer gives
    # less than a search API) and whether the model read text the caller cannot (encrypted content, hidden page
    # reads). UNSET (never encoded) on search-API results, which give url, title and snippet, so their bytes stay.
    surface: list[str] | msgspec.UnsetType = msgspec.UNSET
    model_saw_more: bool | msgspec.UnsetType = msgspec.UNSET


SURFACE_FIELDS = ("url", "title", "snippet", "cited_text", "page")
"""What a caller can receive per search result (docs/how-to/hosted.md); a result without `surface` received url, title, snippet."""


def surface_chars(snippet: str) -> int:
    """Size of a result's snippet surface: Unicode code points, as DuckDB's length() counts them."""
    return len(snippet)


SearchStatus = Literal["ok", "http_error", "timeout", "bad_response"]
# `hidden` (docs/how-to/hosted.md): a hosted page open whose text the model read and the caller never received
FetchStatus = Literal["ok", "timeout", "http_error", "too_large", "bad_response", "hidden"]


class SearchCompleted(_Body, tag="search.completed"):
    call_id: str
    status: SearchStatus
    n_results: int
    latency_ms: float
    raw_digest: str | None = None
    http_status: int | None = None
    error: str | None = None
    # docs/reference/prices.md: latency_ms is the whole call (our own queueing, retries and backoff included); provider_ms the final
    # attempt from request sent to last byte read; queue_ms the waits for our own concurrency and rate limits, all
    # attempts. Absent (UNSET, never encoded) in stores recorded before, in imported traces and for fetch cache hits,
    # so those events keep their bytes; SQL reads them as NULL.
    provider_ms: float | msgspec.UnsetType = msgspec.UNSET
    queue_ms: float | msgspec.UnsetType = msgspec.UNSET
    # docs/concepts/shown.md: a proxied reply the agent stopped reading before its end (it disconnected mid-stream), recorded whole
    # all the same. UNSET (never encoded) otherwise, so every other event keeps its bytes.
    client_disconnected: bool | msgspec.UnsetType = msgspec.UNSET


class FetchCalled(_Body, tag="fetch.called"):
    call_id: str
    iteration: int
    doc_id: str | None  # None: a proxied fetch of a URL no result of the trajectory showed (no judge item)
    url: str


class FetchCompleted(_Body, tag="fetch.completed"):
    call_id: str
    doc_id: str | None
    status: FetchStatus
    content_digest: str | None
    n_bytes: int
    n_tokens: int
    cache_hit: bool
    latency_ms: float
    http_status: int | None = None
    error: str | None = None
    # docs/reference/prices.md: latency_ms is the whole call (our own queueing, retries and backoff included); provider_ms the final
    # attempt from request sent to last byte read; queue_ms the waits for our own concurrency and rate limits, all
    # attempts. Absent (UNSET, never encoded) in stores recorded before, in imported traces and for fetch cache hits,
    # so those events keep their bytes; SQL reads them as NULL.
    provider_ms: float | msgspec.UnsetType = msgspec.UNSET
    queue_ms: float | msgspec.UnsetType = msgspec.UNSET
    # docs/concepts/shown.md: a proxied reply the agent stopped reading before its end (it disconnected mid-stream), recorded whole
    # all the same. UNSET (never encoded) otherwise, so every other event keeps its bytes.
    client_disconnected: bool | msgspec.UnsetType = msgspec.UNSET


class ToolRefused(_Body, tag="tool.refused"):
    """A tool call the harness refused (unknown doc_id, bad arguments); the model sees the error text."""

    call_id: str
    iteration: int
    name: str
    arguments: str
    reason: str


class ToolCalled(_Body, tag="tool.called"):
    """A tool call that is neither a search nor a fetch, as a relayed MCP server answered it (`mcp wrap`): its
    arguments and its raw result (a blob), for SQL; no judge item comes
    of it."""

    call_id: str
    iteration: int
    name: str
    arguments: str
    status: str  # "ok", or "error" when the server answered with isError or a JSON-RPC error
    result_digest: str | None
    latency_ms: float


class CallRetried(_Body, tag="call.retried"):
    what: str  # e.g. "search:brave", "fetch:jina", "chat:agent", "chat:judge"
    call_id: str | None
    attempt: int
    reason: str  # "429", "5xx", "timeout", ...
    wait_s: float


class CallFailed(_Body, tag="call.failed"):
    """A call that still failed after its retries and left no other event (e.g. a judge call); resume retries it."""

    what: str
    call_id: str | None
    status: str  # "http_error", "timeout", "bad_response"
    http_status: int | None = None
    error: str | None = None
    attempts: int = 1
    # docs/concepts/shown.md: a proxied reply the agent stopped reading before its end (it disconnected mid-stream), recorded whole
    # all the same. UNSET (never encoded) otherwise, so every other event keeps its bytes.
    client_disconnected: bool | msgspec.UnsetType = msgspec.UNSET


class Citation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """docs/how-to/hosted.md: one source an answer cites (a hosted layer's url_citation, web_search_result_location or
    grounding support); `item` is the normalised URL of the judge item it links to (None: no such item)."""

    url: str
    title: str = ""
    cited_text: str = ""
    start: int | None = None
    end: int | None = None
    item: str | None = None


class AnswerFinal(_Body, tag="answer.final"):
    iteration: int
    text: str
    # docs/how-to/hosted.md: the sources the answer cites, in the order given; UNSET (never encoded) when the reply cited none
    citations: list[Citation] | msgspec.UnsetType = msgspec.UNSET


# `abandoned`: a proxied trajectory (docs/how-to/own-agent.md) still open when the proxy stopped; `limit`: stopped by a limit (a
# proxy guardrail `--max-turns`, `--max-tokens`, `--max-usd`, or an imported Inspect limit; docs/concepts/shown.md), which in `error`.
TrajectoryReason = Literal["answered", "max_iterations", "error", "abandoned", "limit"]


class TrajectoryFinished(_Body, tag="trajectory.finished"):
    reason: TrajectoryReason
    iterations: int
    usage: Usage = msgspec.field(default_factory=Usage)
    error: str | None = None


class JudgeStarted(_Body, tag="judge.started"):
    judge_run_id: str
    model: str
    prompt_version: str
    prompt_sha256: str
    schema_version: int = 1
    params: JSON = {}


class JudgeDefault(_Body, tag="judge.default"):
    """`judge --default`: from here on the report, the explorer and export use this judge run when none is named
    (docs/how-to/judge-runs.md); the latest such event wins, and a store without one uses its first judge run."""

    judge_run_id: str


class JudgeVerdict(_Body, tag="judge.verdict"):
    judge_run_id: str
    item: JudgeItemRef
    surface: Literal["snippet", "page"]
    valid: bool
    labels: Verdict | None
    invalid_reason: str | None = None
    raw_digest: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_ms: float = 0.0
    # docs/reference/prices.md: latency_ms is the whole call (our own queueing, retries and backoff included); provider_ms the final
    # attempt from request sent to last byte read; queue_ms the waits for our own concurrency and rate limits, all
    # attempts. Absent (UNSET, never encoded) in stores recorded before, in imported traces and for fetch cache hits,
    # so those events keep their bytes; SQL reads them as NULL.
    provider_ms: float | msgspec.UnsetType = msgspec.UNSET
    queue_ms: float | msgspec.UnsetType = msgspec.UNSET
    # docs/how-to/batch.md: the model batch whose result this verdict is; absent (UNSET, never encoded) for an online call
    batch_id: str | msgspec.UnsetType = msgspec.UNSET
    # docs/how-to/claude-gemini.md: the judge model that answered (the reply's name, else the request's) and the model
    # API it was asked over (chat, responses, anthropic, gemini), as on model.responded; absent (UNSET, never encoded)
    # when no model answered (a refused call), in imported judgments and in stores recorded before
    model: str | msgspec.UnsetType = msgspec.UNSET
    api: str | msgspec.UnsetType = msgspec.UNSET


class JudgeBackfill(_Body, tag="judge.backfill"):
    """docs/how-to/hosted.md: `judge --backfill-pages`: the page of an item whose text the caller never received,
    fetched through the fetch backend and judged as surface `backfill` (the evidence behind the URL, which the model
    may not have read); its own event, so no figure of what the caller saw ever counts it."""

    judge_run_id: str
    item: JudgeItemRef
    url: str  # the URL fetched
    fetch_status: FetchStatus
    valid: bool
    labels: Verdict | None  # page labels (no snippet labels: none reached the caller)
    invalid_reason: str | None = None
    http_status: int | None = None
    page_digest: str | None = None  # the fetched page, a blob
    n_tokens: int = 0
    fetch_ms: float = 0.0
    raw_digest: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_ms: float = 0.0


class JudgeBatchSubmitted(_Body, tag="judge.batch.submitted"):
    """docs/how-to/batch.md: one model batch of a judge run created; each item's custom_id is its `item_id`."""

    judge_run_id: str
    batch_id: str
    api: str  # the model API its items ask over (chat, responses: OpenAI's Batch API; anthropic: Message Batches)
    items: list[JudgeItemRef]
    request_sha256: str  # of the request file (OpenAI) or request body (Anthropic) the batch was made of
    submission: int = 1  # 2: these items' resubmission after their first batch did not answer them


class JudgeBatchPolled(_Body, tag="judge.batch.polled"):
    """A model batch's status changed (recorded only on a change)."""

    judge_run_id: str
    batch_id: str
    status: str


class JudgeBatchFinished(_Body, tag="judge.batch.finished"):
    """A model batch ended and its results were read: how many items each outcome had (verdicts: the succeeded)."""

    judge_run_id: str
    batch_id: str
    status: str
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0


def item_id(trajectory_id: str, url_normalized: str) -> str:
    """A judge item's stable id (a model batch's custom_id: 64 characters at most, letters and digits)."""
    return hashlib.sha256(f"{trajectory_id}\x1f{url_normalized}".encode()).hexdigest()[:40]


class AuditAnswer(_Body, tag="audit.answer"):
    trajectory_id: str | None
    provider: str | None
    qid: str | None
    semantic_match: bool
    source: str
    # docs/concepts/statistics.md: the epoch a (provider, qid) row names; absent (UNSET, never encoded) on rows that name a trajectory_id
    # or a single-epoch cell, so earlier audit events keep their bytes.
    epoch: int | msgspec.UnsetType = msgspec.UNSET


class AuditLabel(_Body, tag="audit.label"):
    judge_run_id: str
    item: JudgeItemRef
    surface: Literal["snippet", "page"]
    label: Literal["supports_gold", "contradicts_gold", "relevant"]
    judge_value: bool
    human_value: bool | Literal["unclear"]


class AuditCase(msgspec.Struct, kw_only=True):
    """One label of one judge item on one surface, as `audit sample` drew it."""

    trajectory_id: str
    url_normalized: str
    surface: Literal["snippet", "page"]
    label: Literal["supports_gold", "contradicts_gold", "relevant"]


class AuditStratum(msgspec.Struct, kw_only=True):
    """One stratum of an audit sample: provider x surface x label x the judge's value; N_h cases, n_h drawn."""

    provider: str
    surface: Literal["snippet", "page"]
    label: Literal["supports_gold", "contradicts_gold", "relevant"]
    judge_value: bool
    population: int  # N_h: the judge run's cases in the stratum when the sample was drawn
    sampled: int  # n_h: the cases drawn (all of them when N_h <= k)


class AuditDesign(_Body, tag="audit.design"):
    """docs/concepts/statistics.md: how `audit sample` drew its cases (a stratified random sample), so human labels can be weighted
    back to the population and correct the judge's rates."""

    judge_run_id: str
    seed: str
    k: int
    strata: list[AuditStratum]
    cases: list[AuditCase]
    min_labels: int = 2  # clear labels a stratum with cases needs before the report corrects its rate


class RunFinished(_Body, tag="run.finished"):
    counts: dict[str, int] = {}


class SegmentShipped(_Body, tag="segment.shipped"):
    """docs/how-to/scale.md: one batch of a segment appended to the central log, in the batch's own transaction; the last one
    of a segment is where its shipper resumes. Positions and hash are the segment's own (local), not the log's."""

    segment_id: str
    host: str
    first: int  # local position of the batch's first event
    last: int  # local position of its last event: the next batch starts after it
    head_hash: str  # the segment's hash at `last`: a resuming shipper checks its file still holds that event
    events: int = 0  # events of the batch the log did not hold yet (the rest were there by event_id)


Payload = (
    RunStarted
    | DatasetQuestion
    | TrajectoryStarted
    | ModelResponded
    | SearchCalled
    | SearchResult
    | SearchCompleted
    | FetchCalled
    | FetchCompleted
    | ToolRefused
    | ToolCalled
    | CallRetried
    | CallFailed
    | AnswerFinal
    | TrajectoryFinished
    | JudgeStarted
    | JudgeVerdict
    | JudgeBackfill
    | JudgeDefault
    | JudgeBatchSubmitted
    | JudgeBatchPolled
    | JudgeBatchFinished
    | AuditAnswer
    | AuditLabel
    | AuditDesign
    | RunFinished
    | SegmentShipped
)

PAYLOAD_TYPES: tuple[type[_Body], ...] = typing.get_args(Payload)
TYPE_NAMES: tuple[str, ...] = tuple(str(t.__struct_config__.tag) for t in PAYLOAD_TYPES)


class NewEvent(msgspec.Struct, kw_only=True):
    """What a producer appends; the store assigns position, stream_seq, recorded_at and hash."""

    stream_id: str
    run_id: str
    payload: Payload
    event_id: uuid.UUID = msgspec.field(default_factory=uuid.uuid4)


class StoredEvent(msgspec.Struct, kw_only=True):
    """One row of the events table, decoded."""

    position: int
    event_id: uuid.UUID
    stream_id: str
    stream_seq: int
    type: str
    run_id: str
    recorded_at: datetime
    payload: Payload
    hash: str


_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Payload] = msgspec.json.Decoder(Payload)


def encode_payload(payload: Payload) -> bytes:
    """The exact bytes stored in the payload column."""
    return _encoder.encode(payload)


def decode_payload(data: bytes | str) -> Payload:
    return _decoder.decode(data)


def type_of(payload: Payload) -> str:
    return payload.__struct_config__.tag  # type: ignore[return-value]


def stable_event_id(*parts: str) -> uuid.UUID:
    """Content-derived id, so re-importing or re-recording the same fact is a no-op."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "searchtrace:" + "\x1f".join(parts))


def trajectory_stream(trajectory_id: str) -> str:
    """The stream holding one trajectory's events (recorded or imported)."""
    return f"traj:{trajectory_id}"


def segment_stream(segment_id: str) -> str:
    """The stream of a segment's `segment.shipped` markers in the central log."""
    return f"segment:{segment_id}"


def judge_stream(judge_run_id: str) -> str:
    """The stream holding one judge run's events."""
    return f"judge:{judge_run_id}"
