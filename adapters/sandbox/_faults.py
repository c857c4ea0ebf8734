"""Fault injection: in-band `!fault:<kind>[x<N>]` markers and the app-level FaultPlan, both deterministic.

A marker in a search query, a fetched URL (anywhere: `https://faults.sandbox.test/page?!fault:oversized` or the
path form `https://faults.sandbox.test/!fault:timeout/x`), or the last chat message's text selects a fault;
`x<N>` limits it to the first N attempts of that same request (same route and request key), default every
attempt. A FaultPlan(seed, rates={kind: p}, routes=None) decides per (seed, route, request key, attempt) with a
hash, so a chaos run is reproducible and a retry (next attempt) gets a fresh, equally reproducible draw.
`quota` answers with the provider's own out-of-credit reply (its status differs: 402, 429, 401, 400, 432).
Judge-reply kinds (`prose`, `badjson`, `wrongshape`, `pagemismatch`) are 200 replies with a bad body, and
apply to the chat route only. Batch-item kinds (`errored`, `expired`) apply to the items of a model batch only
(route `batch`, drawn per custom_id and per submission of it), and only they do. `pause` is no fault but a turn
the Anthropic route answers in two parts (`stop_reason: "pause_turn"`, then the rest when the caller sends the
conversation back); it applies to the chat route only, where the other APIs answer it as usual.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter

import msgspec

from searchtrace.adapters._registry import search_provider_names

HTTP_KINDS = ("429", "500", "503", "timeout", "malformed", "truncated", "slow", "oversized", "401", "quota")
JUDGE_KINDS = ("prose", "badjson", "wrongshape", "pagemismatch")
BATCH_KINDS = ("errored", "expired")  # one item of a model batch (route `batch`, key: its custom_id)
PAUSE = "pause"  # an Anthropic turn paused (`pause_turn`) and continued when the caller sends it back
KINDS = HTTP_KINDS + JUDGE_KINDS + BATCH_KINDS + (PAUSE,)
OTHER_ROUTES = ("jina", "chat", "batch")  # beside one route per search provider (named after it)

_MARKER = re.compile(r"!fault:(" + "|".join(sorted(KINDS, key=len, reverse=True)) + r")(?:x(\d+))?")


def routes() -> tuple[str, ...]:
    """Every route a fault can be injected on: each search provider's, Jina Reader's, the chat route and the items
    of model batches."""
    return (*search_provider_names(), *OTHER_ROUTES)


class Marker(msgspec.Struct, frozen=True):
    kind: str
    limit: int | None  # None: every attempt


def _applies(kind: str, route: str) -> bool:
    """Whether a fault kind can happen on a route: oversized on Jina only, judge replies and pauses on chat only, batch-item
    kinds on batch items only (and nothing else there)."""
    if kind == "oversized":
        return route == "jina"
    if kind in JUDGE_KINDS or kind == PAUSE:
        return route == "chat"
    return (kind in BATCH_KINDS) == (route == "batch")


def find_markers(text: str) -> list[Marker]:
    """Every fault marker in a text, in order."""
    return [Marker(m.group(1), int(m.group(2)) if m.group(2) else None) for m in _MARKER.finditer(text)]


def strip_markers(text: str) -> str:
    return " ".join(_MARKER.sub(" ", text).split())


class FaultPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Random-looking but reproducible faults for chaos runs: P(kind) per request attempt, per route."""

    seed: int = 0
    rates: dict[str, float] = {}
    routes: frozenset[str] | None = None  # None: every route

    def __post_init__(self) -> None:
        bad = set(self.rates) - set(KINDS)
        if bad:
            raise ValueError(f"unknown fault kind(s) {sorted(bad)}; known: {', '.join(KINDS)}")

    def decide(self, route: str, key: str, attempt: int) -> str | None:
        """The fault for this attempt of this request, or None; kinds are tried in KINDS order."""
        if self.routes is not None and route not in self.routes:
            return None
        for kind in KINDS:
            p = self.rates.get(kind, 0.0)
            if p <= 0 or not _applies(kind, route):
                continue
            h = hashlib.sha256(f"{self.seed}|{route}|{key}|{attempt}|{kind}".encode()).digest()
            if int.from_bytes(h[:8], "big") / 2**64 < p:
                return kind
        return None


def parse_rates(specs: list[str]) -> dict[str, float]:
    """`429=0.05,timeout=0.01` (or several such strings) -> {kind: rate}; a bare number applies to 429/500/503."""
    rates: dict[str, float] = {}
    for spec in specs:
        for part in spec.split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                p = float(part)
                rates.update({"429": p / 3, "500": p / 3, "503": p / 3})
                continue
            kind, value = part.split("=", 1)
            if kind.strip() not in KINDS:
                raise ValueError(f"unknown fault kind {kind.strip()!r}; known: {', '.join(KINDS)}")
            rates[kind.strip()] = float(value)
    return rates


class Attempts:
    """How many times each (route, request key) was seen; thread-safe (the real server may use threads)."""

    def __init__(self) -> None:
        self._seen: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def next(self, route: str, key: str) -> int:
        with self._lock:
            self._seen[(route, key)] += 1
            return self._seen[(route, key)]


def choose(route: str, key: str, attempt: int, text: str, plan: FaultPlan | None) -> str | None:
    """The fault for one request: an in-band marker first, then the plan."""
    for m in find_markers(text):
        if not _applies(m.kind, route):
            continue
        if m.limit is None or attempt <= m.limit:
            return m.kind
        return None  # the marker's first N attempts are spent: this one succeeds
    return plan.decide(route, key, attempt) if plan is not None else None
