"""Plain data every adapter returns: normalised search hits, fetch results, chat replies, retries."""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

from searchtrace.adapters._urls import base_url_problem
from searchtrace.store import BadInput, FetchStatus, SearchStatus, ToolCall, Usage

# The request header that names the trajectory a call belongs to: our client sends it, the sandbox counts by it and
# the replay transport serves by it (HTTP header names are case-insensitive; raw ASGI scopes hold it lower-case).
TRACE_HEADER = "X-Searchtrace-Trace"
TRACE_HEADER_RAW = TRACE_HEADER.lower().encode("ascii")

# a token count as a reply reports it: at least 0, at most 10^12 (sums over a run must fit 64-bit integers)
Tokens = Annotated[int, msgspec.Meta(ge=0, le=10**12)]


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """An endpoint's default pacing: conservative real-world plans (free / entry, providers.md); a config raises it."""

    rps: float
    concurrency: int
    timeout_s: float


class EndpointSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where an endpoint lives and how it is reached by default; declared once, in the endpoint's own module."""

    name: str  # "jina", "openai", or a search provider's name
    key_env: str
    base_url_env: str  # the variable overriding the base URL
    default_base_url: str
    limits: Limits
    sandbox_path: str  # its base URL below a sandbox root


class RetryInfo(msgspec.Struct, kw_only=True):
    """One retry an adapter made; the engine records it as `call.retried`."""

    what: str  # "search:brave", "fetch:jina", "chat:<model>"
    attempt: int  # 1 for the first retry
    reason: str  # "429", "5xx", "timeout", "transport"
    wait_s: float


class SearchHit(msgspec.Struct, kw_only=True):
    """One result in rank order, already normalised to docs/concepts/protocol.md (doc_id is assigned by the engine)."""

    rank: int
    title: str
    url: str
    domain: str
    snippet: str
    metadata: dict[str, Any] = {}
    surface: list[str] | None = None  # docs/how-to/hosted.md: a hosted layer's received fields (None: a search API's)
    model_saw_more: bool | None = None


# docs/reference/prices.md clean latency, beside latency_ms (the whole call): provider_ms is the final attempt from request sent to
# last byte read, queue_ms the waits for our own concurrency and rate limits over all attempts. UNSET where no
# request was made (a fetch cache hit) or an adapter does not measure them; events then omit them.
OptionalMs = float | msgspec.UnsetType


class SearchResponse(msgspec.Struct, kw_only=True):
    status: SearchStatus
    hits: list[SearchHit] = []
    raw: bytes | None = None  # the provider's body, for a blob (never request headers)
    latency_ms: float = 0.0
    provider_ms: OptionalMs = msgspec.UNSET
    queue_ms: OptionalMs = msgspec.UNSET
    http_status: int | None = None
    error: str | None = None  # the provider's own error message
    retries: list[RetryInfo] = []


class FetchResponse(msgspec.Struct, kw_only=True):
    status: FetchStatus
    content: str | None = None  # markdown
    n_bytes: int = 0
    n_tokens: int = 0
    cache_hit: bool = False
    latency_ms: float = 0.0
    provider_ms: OptionalMs = msgspec.UNSET
    queue_ms: OptionalMs = msgspec.UNSET
    http_status: int | None = None
    error: str | None = None
    retries: list[RetryInfo] = []


class ChatResponse(msgspec.Struct, kw_only=True):
    text: str | None
    tool_calls: list[ToolCall] = []
    usage: Usage = msgspec.field(default_factory=Usage)
    latency_ms: float = 0.0
    provider_ms: OptionalMs = msgspec.UNSET
    queue_ms: OptionalMs = msgspec.UNSET
    finish_reason: str | None = None
    raw: bytes | None = None
    retries: list[RetryInfo] = []
    model: str | None = None  # the model that answered (the reply's name, else the request's)
    api: str | None = None  # the model API it was asked over ("chat", "responses", "anthropic", "gemini")


class Endpoint(msgspec.Struct, kw_only=True):
    """Where and how fast one API may be called; keys are read from `key_env`, never stored here."""

    base_url: str
    key_env: str | None = None
    rps: float = 5.0
    burst: int = 0  # 0: rps/10 per 0.1 s window (no first-second burst)
    concurrency: int = 8
    timeout_s: float = 30.0
    max_retries: int = 4
    max_wait_s: float = 60.0
    quota: str | None = None  # docs/how-to/scale.md: the quota domain whose rate this endpoint shares (leased across Ray workers)

    def __post_init__(self) -> None:
        """The one gate every adapter's endpoint passes: no credentials in the URL, finite rates and timeouts."""
        problem = base_url_problem(self.base_url)
        if problem:
            raise BadInput(f"base URL: {problem}")
        for name in ("rps", "timeout_s", "max_wait_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise BadInput(f"{name}: must be a finite number >= 0, got {value}")

