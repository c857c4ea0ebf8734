"""The interchange formats of docs/reference/interchange.md as msgspec Structs: what `import` reads and `export` writes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from searchtrace.store import FetchStatus, SearchStatus, TrajectoryReason, Verdict

Id = Annotated[str, msgspec.Meta(min_length=1)]  # ids and URLs may not be empty
# Every number is checked against the column it lands in (analytics._relations: iteration and rank INTEGER, token
# counts BIGINT, latencies DOUBLE), with room for sums: a value the store cannot hold never passes validation.
INT32_MAX = 2**31 - 1
TOKENS_MAX = 10**12  # per call; a million such calls still sum inside BIGINT
MILLIS_MAX = 1e12  # ~30 years; finite, so sums stay finite too
Count = Annotated[int, msgspec.Meta(ge=0, le=TOKENS_MAX)]
Iteration = Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]
Rank = Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)]
Millis = Annotated[float, msgspec.Meta(ge=0, le=MILLIS_MAX)]
Ms = Millis | msgspec.UnsetType


class StepUsage(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    input_tokens: Count = 0
    output_tokens: Count = 0
    reasoning_tokens: Count = 0


class Retry(msgspec.Struct, kw_only=True):
    """One `call.retried` of a search or fetch step (`retries`), or standing alone as a `retry` step."""

    what: str
    attempt: Count
    reason: str
    wait_s: Millis


class ModelStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="model"):
    iteration: Iteration
    usage: StepUsage = msgspec.field(default_factory=StepUsage)
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: waits for the harness's own limits
    # docs/how-to/claude-gemini.md: the model that answered and the model API it was asked over (absent: not written)
    model: str | msgspec.UnsetType = msgspec.UNSET
    api: str | msgspec.UnsetType = msgspec.UNSET


class Result(msgspec.Struct, kw_only=True):
    doc_id: Id
    rank: Rank
    url: Id
    title: str | None = ""  # null is read as "" (and metadata null as {})
    domain: str | None = ""  # empty: derived from the URL
    snippet: str | None = ""
    metadata: dict[str, Any] | None = {}
    # docs/how-to/hosted.md: which of url, title, snippet, cited_text, page the caller received, and whether the model
    # read more (a hosted search layer's result); absent: a search API's result (url, title and snippet)
    surface: list[Literal["url", "title", "snippet", "cited_text", "page"]] | msgspec.UnsetType = msgspec.UNSET
    model_saw_more: bool | msgspec.UnsetType = msgspec.UNSET


class SearchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="search", omit_defaults=True):
    iteration: Iteration
    call_id: Id
    query: str
    results: list[Result]
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: waits for the harness's own limits
    # docs/concepts/shown.md lossless interchange, each written by `export` only when not its default:
    status: SearchStatus = "ok"
    http_status: int | None = None
    error: str | None = None
    provider: str | None = None  # search.called's provider when it is not the trajectory's
    params: dict[str, Any] = {}
    raw_digest: str | None = None  # the reply's raw body: a file of the `--blobs` folder named by this digest
    retries: list[Retry] = []


class FetchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="fetch"):
    iteration: Iteration
    call_id: Id
    doc_id: Id | None  # null: a fetch of a URL no result of the trajectory showed (no judge item)
    url: str
    status: FetchStatus
    content: str | None = None
    n_tokens: Count = 0
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # docs/reference/prices.md, when measured: waits for the harness's own limits
    # docs/concepts/shown.md lossless interchange, each written by `export` only when given (UNSET: derived or default)
    n_bytes: Count | msgspec.UnsetType = msgspec.UNSET  # default: the content's UTF-8 length
    cache_hit: bool | msgspec.UnsetType = msgspec.UNSET
    http_status: int | None | msgspec.UnsetType = msgspec.UNSET
    error: str | None | msgspec.UnsetType = msgspec.UNSET
    retries: list[Retry] | msgspec.UnsetType = msgspec.UNSET


class RefusedStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="refused"):
    """A tool call the harness refused (`tool.refused`)."""

    iteration: Iteration
    call_id: str
    name: str
    arguments: str
    reason: str


class FailedStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="failed", omit_defaults=True):
    """A call that failed after its retries and left no other event (`call.failed`, e.g. a proxied chat call)."""

    what: str
    status: str
    call_id: str | None = None
    http_status: int | None = None
    error: str | None = None
    attempts: Count = 1


class RetryStep(Retry, tag_field="kind", tag="retry", omit_defaults=True):
    """A retry of no search or fetch of the line (a model call's), in its place among the steps."""

    call_id: str | None = None


Step = ModelStep | SearchStep | FetchStep | RefusedStep | FailedStep | RetryStep


class TurnUsage(StepUsage):
    cached_tokens: Count = 0


class TurnCall(msgspec.Struct):
    """One tool call of a model turn: the raw argument string as the model sent it."""

    call_id: str
    name: str
    arguments: str


class Turn(msgspec.Struct, kw_only=True, omit_defaults=True):
    """docs/concepts/shown.md: one model turn in full; the k-th turn of a line is its k-th `model` step (same iteration), and
    its usage and latencies are the turn's own.

    `messages` is the request the model was sent (absent: unknown): its first `kept` messages are the previous
    turn's first `kept`, the rest are given here, so a growing conversation costs O(messages) in the file too. With
    `messages`, `tools` is the tool list sent (absent: none)."""

    iteration: Iteration
    text: str | None = None
    tool_calls: list[TurnCall] = []
    usage: TurnUsage = msgspec.field(default_factory=TurnUsage)
    finish_reason: str | None = None
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET
    queue_ms: Ms = msgspec.UNSET
    kept: Count = 0
    messages: list[Any] | msgspec.UnsetType = msgspec.UNSET
    tools: list[Any] | None = None
    # the request's fingerprint, written only when it is not the one the messages give (a store recorded before
    # request messages, where it is all there is)
    request_sha256: str | None | msgspec.UnsetType = msgspec.UNSET
    raw_digest: str | None = None  # the reply's raw body: a file of the `--blobs` folder named by this digest
    model: str | msgspec.UnsetType = msgspec.UNSET  # docs/how-to/claude-gemini.md: the model that answered
    api: str | msgspec.UnsetType = msgspec.UNSET  # and the model API it was asked over


class Answer(msgspec.Struct, kw_only=True):
    """A verdict on the line's final answer, imported as `audit.answer` of the trajectory."""

    source: Id
    semantic_match: bool


class Cited(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One source the final answer cites: its URL, title, the cited passage and its span in the answer."""

    url: Id
    title: str = ""
    cited_text: str = ""
    start: Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)] | None = None
    end: Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)] | None = None


class TraceLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One trajectory per line of traces.jsonl (`epoch` and `run_id` are written only when not their defaults)."""

    trajectory_id: Id
    provider: Id
    qid: Id
    question: str
    gold_answer: str
    final_answer: str | None
    stop_reason: TrajectoryReason
    steps: list[Step]
    epoch: int = 1  # docs/concepts/statistics.md: the repeat of the (provider, qid) cell; (run_id, provider, qid, epoch) is unique in a file
    # the run it was recorded in, written by `export` (absent: the `import` run), so a store of several runs that
    # recorded the same cells exports into a file that imports back, each trajectory into its own run
    run_id: Id | None = None
    turns: list[Turn] = []  # docs/concepts/shown.md: every model turn in full (absent: the model steps are all there is)
    # docs/concepts/shown.md lossless interchange, each written by `export` only when not what import derives:
    attempt: Annotated[int, msgspec.Meta(ge=1, le=INT32_MAX)] = 1
    supersedes: str | None = None
    error: str | None = None  # trajectory.finished's error line
    iterations: Iteration | None = None  # trajectory.finished's iterations (default: the last step's iteration)
    final_iteration: Iteration | None = None  # answer.final's iteration (default: likewise)
    # audit.answer rows of this trajectory (Inspect scorers: source `inspect:<scorer>`)
    answers: list[Answer] = []
    # docs/how-to/hosted.md: the sources the final answer cites, in the order given (each linked on import to the
    # item of its normalised URL, if any)
    citations: list[Cited] = []


class RunQuestion(msgspec.Struct, kw_only=True, omit_defaults=True):
    qid: Id
    question: str
    gold_answer: str
    strata: dict[str, str] = {}
    gold_aliases: list[str] | msgspec.UnsetType = msgspec.UNSET  # docs/how-to/compare.md: every accepted answer, when several


class RunLine(msgspec.Struct, kw_only=True):
    """One run per line of run.jsonl beside traces.jsonl (docs/concepts/shown.md): its run.started config and code version, the
    questions of its stream, and its run.finished counts (null: not finished)."""

    run_id: Id
    config: dict[str, Any]
    code_version: str
    questions: list[RunQuestion] = []
    counts: dict[str, int] | None = None


class JudgmentLine(msgspec.Struct, kw_only=True):
    """One verdict per line of judgments.jsonl; `labels` is checked against docs/concepts/judge.md separately (when valid)."""

    judge_run_id: Id
    trajectory_id: Id
    url: Id
    valid: bool
    labels: Any = None
    invalid_reason: str | None = None


class TypedJudgmentLine(msgspec.Struct, kw_only=True):
    """JudgmentLine with labels of the judge's schema (docs/concepts/judge.md) (or null): one decode for the usual line; any other falls back."""

    judge_run_id: Id
    trajectory_id: Id
    url: Id
    valid: bool
    labels: Verdict | None = None
    invalid_reason: str | None = None


AUDIT_HEADER = ("provider", "qid", "semantic_match")
# docs/concepts/statistics.md: a row may name the epoch of its (provider, qid) cell, or the trajectory itself (then provider and qid may
# be empty); `export` writes the epoch
AUDIT_EPOCH, AUDIT_TRAJECTORY = "epoch", "trajectory_id"
AUDIT_EXPORT_HEADER = ("provider", "qid", AUDIT_EPOCH, "semantic_match")
AUDIT_VALUES: dict[str, bool] = {"true": True, "1": True, "false": False, "0": False}
Kind = Literal["traces", "judgments", "audit"]

trace_decoder: msgspec.json.Decoder[TraceLine] = msgspec.json.Decoder(TraceLine)
run_decoder: msgspec.json.Decoder[RunLine] = msgspec.json.Decoder(RunLine)
judgment_decoder: msgspec.json.Decoder[JudgmentLine] = msgspec.json.Decoder(JudgmentLine)
typed_judgment_decoder: msgspec.json.Decoder[TypedJudgmentLine] = msgspec.json.Decoder(TypedJudgmentLine)
encoder = msgspec.json.Encoder()
