"""The interchange formats of SPEC §9 as msgspec Structs: what `import` reads and `export` writes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from searchtrace.store import FetchStatus, TrajectoryReason, Verdict

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


class ModelStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="model"):
    iteration: Iteration
    usage: StepUsage = msgspec.field(default_factory=StepUsage)
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: waits for the harness's own limits


class Result(msgspec.Struct, kw_only=True):
    doc_id: Id
    rank: Rank
    url: Id
    title: str | None = ""  # null is read as "" (and metadata null as {})
    domain: str | None = ""  # empty: derived from the URL
    snippet: str | None = ""
    metadata: dict[str, Any] | None = {}


class SearchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="search"):
    iteration: Iteration
    call_id: Id
    query: str
    results: list[Result]
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: waits for the harness's own limits


class FetchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="fetch"):
    iteration: Iteration
    call_id: Id
    doc_id: Id
    url: str
    status: FetchStatus
    content: str | None = None
    n_tokens: Count = 0
    latency_ms: Millis = 0.0
    provider_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: the provider's time alone (absent: not written)
    queue_ms: Ms = msgspec.UNSET  # SPEC §13, when measured: waits for the harness's own limits


Step = ModelStep | SearchStep | FetchStep


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
    epoch: int = 1  # SPEC §12: the repeat of the (provider, qid) cell; (run_id, provider, qid, epoch) is unique in a file
    # the run it was recorded in, written by `export` (absent: the `import` run), so a store of several runs that
    # recorded the same cells exports into a file that imports back, each trajectory into its own run
    run_id: Id | None = None


class JudgmentLine(msgspec.Struct, kw_only=True):
    """One verdict per line of judgments.jsonl; `labels` is checked against SPEC §4 separately (when valid)."""

    judge_run_id: Id
    trajectory_id: Id
    url: Id
    valid: bool
    labels: Any = None
    invalid_reason: str | None = None


class TypedJudgmentLine(msgspec.Struct, kw_only=True):
    """JudgmentLine with labels of the §4 schema (or null): one decode for the usual line; any other falls back."""

    judge_run_id: Id
    trajectory_id: Id
    url: Id
    valid: bool
    labels: Verdict | None = None
    invalid_reason: str | None = None


AUDIT_HEADER = ("provider", "qid", "semantic_match")
AUDIT_VALUES: dict[str, bool] = {"true": True, "1": True, "false": False, "0": False}
Kind = Literal["traces", "judgments", "audit"]

trace_decoder: msgspec.json.Decoder[TraceLine] = msgspec.json.Decoder(TraceLine)
judgment_decoder: msgspec.json.Decoder[JudgmentLine] = msgspec.json.Decoder(JudgmentLine)
typed_judgment_decoder: msgspec.json.Decoder[TypedJudgmentLine] = msgspec.json.Decoder(TypedJudgmentLine)
encoder = msgspec.json.Encoder()
