"""Strict reading of a judge reply (docs/concepts/judge.md schema 1): a verdict that fits exactly, or a reason why not."""

from __future__ import annotations

import re

import msgspec

from searchtrace.store import Verdict

SCHEMA_VERSION = 1

# One surrounding Markdown code fence, optionally with a language tag (```json ... ```).
_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?```\Z", re.DOTALL)
_decoder = msgspec.json.Decoder(Verdict)
_REASON_MAX = 300


class Parsed(msgspec.Struct, frozen=True, kw_only=True):
    """Outcome of reading one reply: `labels` when valid, else `reason` (one line)."""

    valid: bool
    labels: Verdict | None = None
    reason: str | None = None


def strip_fence(text: str) -> str:
    """Remove exactly one surrounding code fence (and surrounding whitespace); anything else is left as is."""
    body = text.strip()
    m = _FENCE.match(body)
    return m.group("body").strip() if m else body


def _one_line(msg: str) -> str:
    line = " ".join(msg.split())
    return line if len(line) <= _REASON_MAX else line[: _REASON_MAX - 1] + "…"


def parse_verdict(text: str | None, *, page_visible: bool, finish_reason: str | None = None) -> Parsed:
    """Validate a reply against schema 1 and the item's page visibility; never raises on bad replies."""
    if text is None or not text.strip():
        why = "empty reply" + (f" (finish_reason={finish_reason})" if finish_reason else "")
        return Parsed(valid=False, reason=why)
    body = strip_fence(text)
    if not body.startswith("{"):
        return Parsed(valid=False, reason=_one_line(f"not a JSON object: reply starts with {body[:40]!r}"))
    try:
        verdict = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        return Parsed(valid=False, reason=_one_line(f"wrong shape: {exc}"))
    except RecursionError:
        return Parsed(valid=False, reason="not valid JSON: nested too deeply")
    except msgspec.DecodeError as exc:
        cut = " (finish_reason=length)" if finish_reason == "length" else ""
        return Parsed(valid=False, reason=_one_line(f"not valid JSON: {exc}{cut}"))
    if verdict.snippet is None:
        return Parsed(valid=False, reason="snippet is null")
    if page_visible and verdict.page is None:
        return Parsed(valid=False, reason="page is null but the item is page-visible")
    if not page_visible and verdict.page is not None:
        return Parsed(valid=False, reason="page is not null but the item was not page-visible")
    return Parsed(valid=True, labels=verdict)


__all__ = ["SCHEMA_VERSION", "Parsed", "parse_verdict", "strip_fence"]
