"""Helpers for the store tests: one example of every event type, small event factories, verify (the CLI runner: tests/builders.py)."""

from __future__ import annotations

import uuid

from searchtrace.store import (
    AnswerFinal,
    AuditAnswer,
    AuditCase,
    AuditDesign,
    AuditLabel,
    AuditStratum,
    CallFailed,
    CallRetried,
    DatasetQuestion,
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeBackfill,
    JudgeBatchFinished,
    JudgeBatchPolled,
    JudgeBatchSubmitted,
    JudgeDefault,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    ModelResponded,
    NewEvent,
    Payload,
    RunFinished,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    SegmentShipped,
    ToolCall,
    ToolCalled,
    ToolRefused,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
    Verdict,
    verify,
)
from searchtrace.store._events import PAYLOAD_TYPES


def every_payload() -> list[Payload]:
    """One non-default instance of every payload type (unicode, nesting, nulls, floats)."""
    item = JudgeItemRef(trajectory_id="t-1", url_normalized="https://example.org/a?b=1")
    usage = Usage(input_tokens=11, output_tokens=7, reasoning_tokens=3, cached_tokens=2)
    return [
        RunStarted(run_id="r1", config={"models": {"agent": "gpt"}, "max_iterations": 10, "p": [1, 2.5]}, code_version="abc"),
        DatasetQuestion(qid="q1", question="Wer schrieb „Faust“? 🙂", gold_answer="Goethe", strata={"topic": "lit"}),
        TrajectoryStarted(trajectory_id="t-1", qid="q1", provider="brave", question="q?", gold_answer="g"),
        ModelResponded(
            iteration=1,
            text=None,
            tool_calls=[ToolCall(call_id="c1", name="search_web", arguments='{"query": "x"')],
            usage=usage,
            latency_ms=12.5,
            finish_reason="tool_calls",
            raw_digest="ab" * 32,
        ),
        SearchCalled(call_id="c1", iteration=1, query="who wrote faust", provider="brave", params={"count": 10}),
        SearchResult(
            call_id="c1",
            doc_id="d1",
            rank=1,
            title="Faust — Wikipedia",
            url="https://de.wikipedia.org/wiki/Faust#x",
            url_normalized="https://de.wikipedia.org/wiki/Faust",
            domain="de.wikipedia.org",
            snippet="line one\nline two \"quoted\" \\ backslash \u0000 nul",
            metadata={"age": "2 days", "score": 0.93, "extra": None},
        ),
        SearchCompleted(call_id="c1", status="timeout", n_results=0, latency_ms=15000.0, http_status=None, error="timed out"),
        FetchCalled(call_id="c2", iteration=2, doc_id="d1", url="https://de.wikipedia.org/wiki/Faust"),
        FetchCompleted(
            call_id="c2",
            doc_id="d1",
            status="ok",
            content_digest="cd" * 32,
            n_bytes=12345,
            n_tokens=3000,
            cache_hit=True,
            latency_ms=1.25,
            http_status=200,
        ),
        ToolRefused(call_id="c3", iteration=2, name="fetch_page", arguments='{"doc_id": "d99"}', reason="unknown doc_id"),
        ToolCalled(call_id="m4", iteration=1, name="firecrawl_scrape", arguments='{"url": "https://x.example/"}',
                   status="ok", result_digest="ab" * 32, latency_ms=812.5),
        CallRetried(what="search:brave", call_id="c1", attempt=2, reason="429", wait_s=1.0),
        CallFailed(what="chat:judge", call_id="j|t|u", status="http_error", http_status=503, error="busy", attempts=3),
        AnswerFinal(iteration=3, text="Johann Wolfgang von Goethe"),
        TrajectoryFinished(reason="max_iterations", iterations=10, usage=usage, error=None),
        JudgeStarted(judge_run_id="j1", model="kimi", prompt_version="v1", prompt_sha256="ef" * 32, params={"t": 0}),
        JudgeVerdict(
            judge_run_id="j1",
            item=item,
            surface="page",
            valid=True,
            labels=Verdict(
                snippet=Labels(supports_gold=True, contradicts_gold=False, relevant=True),
                page=None,
                supports_final_answer=False,
                rationale="because",
            ),
            raw_digest="01" * 32,
            usage=usage,
            latency_ms=99.0,
        ),
        JudgeDefault(judge_run_id="j1"),
        JudgeBackfill(judge_run_id="j1", item=item, url="https://example.org/a?b=1", fetch_status="ok", valid=True,
                      labels=Verdict(snippet=None, page=Labels(supports_gold=True, contradicts_gold=False,
                                                               relevant=True),
                                     supports_final_answer=True, rationale="the page"),
                      http_status=200, page_digest="cd" * 32, n_tokens=42, fetch_ms=3.5, raw_digest="01" * 32,
                      usage=usage, latency_ms=7.25),
        JudgeBatchSubmitted(judge_run_id="j1", batch_id="batch_1", api="chat", items=[item], request_sha256="ab" * 32,
                            submission=2),
        JudgeBatchPolled(judge_run_id="j1", batch_id="batch_1", status="in_progress"),
        JudgeBatchFinished(judge_run_id="j1", batch_id="batch_1", status="completed", succeeded=1, errored=2,
                           expired=3, canceled=4),
        AuditAnswer(trajectory_id=None, provider="tavily", qid="q1", semantic_match=True, source="audit.tsv"),
        AuditLabel(
            judge_run_id="j1", item=item, surface="snippet", label="relevant", judge_value=True, human_value="unclear"
        ),
        AuditAnswer(trajectory_id=None, provider="exa", qid="q2", semantic_match=False, source="audit.tsv", epoch=2),
        AuditDesign(
            judge_run_id="j1", seed="s", k=2,
            strata=[AuditStratum(provider="tavily", surface="snippet", label="supports_gold", judge_value=True,
                                 population=7, sampled=2)],
            cases=[AuditCase(trajectory_id="t-1", url_normalized="https://example.org/a?b=1", surface="snippet",
                             label="supports_gold")],
        ),
        RunFinished(counts={"trajectories": 3, "events": 99}),
        SegmentShipped(segment_id="0f" * 16, host="höst-1", first=1, last=5000, head_hash="9a" * 32, events=4999),
    ]


def covered_types() -> set[type]:
    return set(PAYLOAD_TYPES)


def ev(stream: str, i: int = 0, *, run: str = "run-1", text: str | None = None, event_id: uuid.UUID | None = None) -> NewEvent:
    """A small event of a stream (answer.final carries i so order can be checked)."""
    payload = AnswerFinal(iteration=i, text=text if text is not None else f"{stream}:{i}")
    if event_id is None:
        return NewEvent(stream_id=stream, run_id=run, payload=payload)
    return NewEvent(stream_id=stream, run_id=run, payload=payload, event_id=event_id)


def intact(log: EventLog, events: int | None = None) -> None:
    """The log verifies (and holds `events` events, when given)."""
    report = verify(log.cursor())
    assert report.ok, report.line()
    if events is not None:
        assert report.events == events, report.line()
