"""When to retry a failed attempt and how long to wait: capped exponential backoff that honours stated waits."""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Mapping
from typing import Any

BACKOFF_BASE_S = 0.5  # first computed wait; doubles per retry, capped by Endpoint.max_wait_s

# Waits providers state in a message body: OpenAI "try again in 644ms", Firecrawl "retry after 1s", ...
_BODY_WAIT = re.compile(
    r"(?:try again|retry)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?)\b", re.I
)
# Messages that mean "no retry will help": monthly quota, billing, a request too large for the limit.
# SerpApi "run out of searches", Linkup INSUFFICIENT_FUNDS_CREDITS / EXCEED_BUDGET_LIMIT share the 429 status too.
_TERMINAL_429 = ("insufficient_quota", "quota_limited", "request too large", "exceeded your current quota",
                 "run out of searches", "insufficient_funds_credits", "exceed_budget_limit")


def stated_wait(headers: Mapping[str, str] | None, body: Any = None, text: str | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, `Retry-After` (seconds or HTTP date), an
    `X-RateLimit-Reset` Unix time, or the body."""
    if headers is not None:
        ms = headers.get("retry-after-ms")
        if ms:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        ra = headers.get("retry-after")
        if ra:
            try:
                return max(0.0, float(ra))
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(ra) if _looks_like_date(ra) else None
                if parsed is not None:
                    return max(0.0, parsed.timestamp() - time.time())
        reset = _reset_epoch(headers.get("x-ratelimit-reset"))
        if reset is not None:
            return max(0.0, reset - time.time())
    if isinstance(body, Mapping):
        for holder in (body, body.get("error") if isinstance(body.get("error"), Mapping) else None):
            for name in ("retry_after_seconds", "retryAfter"):  # OpenAI-style / Jina's error envelope
                if isinstance(holder, Mapping) and isinstance(holder.get(name), int | float):
                    return max(0.0, float(holder[name]))
    if text:
        m = _BODY_WAIT.search(text)
        if m:
            value = float(m.group(1))
            return value / 1000.0 if m.group(2).lower().startswith("m") else value
    return None


def _reset_epoch(value: str | None) -> float | None:
    """`X-RateLimit-Reset` as a Unix time (You.com); None for other spellings (Brave's "1, 1419704" windows)."""
    try:
        reset = float(value) if value else None
    except ValueError:
        return None
    return reset if reset is not None and reset > 1e9 else None


def _looks_like_date(value: str) -> bool:
    try:
        return email.utils.parsedate_to_datetime(value) is not None
    except (TypeError, ValueError, IndexError):
        return False


def retry_reason(http_status: int | None, message: str = "") -> str | None:
    """The retry reason for an HTTP status ("429", "5xx"), or None when retrying cannot help (4xx, quota)."""
    if http_status is None:
        return None
    if http_status == 429:
        low = message.lower()
        return None if any(t in low for t in _TERMINAL_429) else "429"
    if 500 <= http_status <= 599:
        return "5xx"
    return None


def backoff(attempt: int, *, cap_s: float, stated_s: float | None = None, base_s: float = BACKOFF_BASE_S) -> float:
    """Wait before retry number `attempt` (1-based): the stated wait if any, else jittered base·2^(attempt-1); capped."""
    if stated_s is not None:
        return min(stated_s, cap_s)
    raw = base_s * (2 ** (attempt - 1))
    return float(min(raw * random.uniform(0.5, 1.0), cap_s))
