"""The interchange formats of SPEC §9 as msgspec Structs: what `import` reads and `export` writes."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from store.events import FetchStatus, TrajectoryReason


class StepUsage(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


class ModelStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="model"):
    iteration: int
    usage: StepUsage = msgspec.field(default_factory=StepUsage)
    latency_ms: float = 0.0


class Result(msgspec.Struct, kw_only=True):
    doc_id: str
    rank: int
    url: str
    title: str = ""
    domain: str = ""
    snippet: str = ""
    metadata: dict[str, Any] = {}


class SearchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="search"):
    iteration: int
    call_id: str
    query: str
    results: list[Result]
    latency_ms: float = 0.0


class FetchStep(msgspec.Struct, kw_only=True, tag_field="kind", tag="fetch"):
    iteration: int
    call_id: str
    doc_id: str
    url: str
    status: FetchStatus
    content: str | None = None
    n_tokens: int = 0
    latency_ms: float = 0.0


Step = ModelStep | SearchStep | FetchStep


class TraceLine(msgspec.Struct, kw_only=True):
    """One trajectory per line of traces.jsonl."""

    trajectory_id: str
    provider: str
    qid: str
    question: str
    gold_answer: str
    final_answer: str | None
    stop_reason: TrajectoryReason
    steps: list[Step]


class JudgmentLine(msgspec.Struct, kw_only=True):
    """One verdict per line of judgments.jsonl; `labels` is checked against SPEC §4 separately (when valid)."""

    judge_run_id: str
    trajectory_id: str
    url: str
    valid: bool
    labels: Any = None
    invalid_reason: str | None = None


AUDIT_HEADER = ("provider", "qid", "semantic_match")
AUDIT_VALUES: dict[str, bool] = {"true": True, "1": True, "false": False, "0": False}
Kind = Literal["traces", "judgments", "audit"]

trace_decoder: msgspec.json.Decoder[TraceLine] = msgspec.json.Decoder(TraceLine)
judgment_decoder: msgspec.json.Decoder[JudgmentLine] = msgspec.json.Decoder(JudgmentLine)
encoder = msgspec.json.Encoder()
