"""Guardrails of a proxied trajectory (docs/concepts/shown.md): `--max-turns`, `--max-tokens`, `--max-usd` (with `--prices`).

A limit is checked before a call is forwarded, with what the call is known to cost before it is made: a model turn,
the request's input tokens (estimated, ~4 characters a token), its input price; a search's price per request;
nothing for a fetch (its tokens are known only after it). The call that would take the trajectory past a limit, or
any call once a limit is spent, is refused (HTTP 400 `limit`) and the trajectory finishes with reason `limit`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import msgspec

from searchtrace.adapters import FETCHERS, assemble, estimate_tokens
from searchtrace.engine._prices import Prices, fetched_usd, model_usd, searches_usd
from searchtrace.store import FetchCompleted, ModelResponded, Payload, SearchCompleted, Usage


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Per-trajectory caps (None: no cap); `prices` prices `max_usd` (required with it)."""

    max_turns: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None
    prices: Prices | None = None

    @property
    def any(self) -> bool:
        return self.max_turns is not None or self.max_tokens is not None or self.max_usd is not None

    def config(self) -> dict[str, Any]:
        """The limits given, as the run config records them (`prices_as_of` names the table that priced USD)."""
        out: dict[str, Any] = {k: v for k, v in (("max_turns", self.max_turns), ("max_tokens", self.max_tokens),
                                                 ("max_usd", self.max_usd)) if v is not None}
        if self.max_usd is not None and self.prices is not None:
            out["prices_as_of"] = self.prices.as_of
        return out


class Unpriced(ValueError):
    """A call `--max-usd` cannot price (no such model, search or fetch price in `--prices`): refused, not forwarded."""


def _request_tokens(request: dict[str, Any]) -> int:
    """The estimated input tokens of a model request as JSON: a chat request's messages and tools, a Responses
    request's instructions, input and tools, a Messages request's system, a Gemini request's contents."""
    sent = [request.get(k) for k in ("messages", "instructions", "input", "tools")]
    sent += [request[k] for k in ("system", "contents", "systemInstruction") if k in request]  # chat keeps its bytes
    return estimate_tokens(msgspec.json.encode(sent).decode())


def chat_usd(limits: Limits, model: str, usage: Usage) -> Fraction:
    """USD of one model turn at `model`'s price (0 without `--max-usd`)."""
    if limits.max_usd is None:
        return Fraction(0)
    p = limits.prices.models.get(model) if limits.prices else None
    if p is None:
        raise Unpriced(f"--max-usd: no price for model {model!r} in --prices")
    return model_usd(p, usage.input_tokens, usage.cached_tokens, usage.output_tokens)


def search_usd(limits: Limits, provider: str) -> Fraction:
    """USD of one successful search (providers bill successful requests)."""
    if limits.max_usd is None:
        return Fraction(0)
    price = limits.prices.search.get(provider) if limits.prices else None
    if price is None:
        raise Unpriced(f"--max-usd: no search price for {provider!r} in --prices")
    return searches_usd(price, 1)


def fetch_usd(limits: Limits, backend: str, tokens: int) -> Fraction:
    """USD of the tokens of one fetched page."""
    if limits.max_usd is None:
        return Fraction(0)
    price = limits.prices.fetch.get(backend) if limits.prices else None
    if price is None:
        raise Unpriced(f"--max-usd: no fetch price for {backend!r} in --prices")
    return fetched_usd(price, tokens)


def exceeded(limits: Limits, *, kind: str, endpoint: str, request: dict[str, Any], turns: int, usage: Usage,
             spent: Fraction) -> str | None:
    """Which limit this call would exceed, as the trajectory's `error` line; None: within every limit.

    `turns`: model turns recorded and in flight; `usage`: the tokens recorded; `spent`: the USD recorded.
    Raises Unpriced when `--max-usd` cannot price the call."""
    if kind == "chat":
        if limits.max_turns is not None and turns >= limits.max_turns:
            return f"limit max-turns {limits.max_turns}: {turns} model turns made, no more"
        tokens = usage.input_tokens + usage.output_tokens
        ahead = _request_tokens(request)
        if limits.max_tokens is not None and tokens + ahead > limits.max_tokens:
            return (f"limit max-tokens {limits.max_tokens}: {tokens} tokens used, this request's input is about "
                    f"{ahead} more")
    if limits.max_usd is None:
        return None
    cost = Fraction(0)
    if kind == "chat":
        model = str(request.get("model", "chat"))
        cost = chat_usd(limits, model, Usage(input_tokens=_request_tokens(request)))
    elif kind == "search":
        cost = search_usd(limits, endpoint)
    elif kind == "fetch":
        fetch_usd(limits, endpoint, 0)  # priced, or refused before it is made
    if spent >= Fraction(limits.max_usd) or spent + cost > Fraction(limits.max_usd):
        return (f"limit max-usd {limits.max_usd:g}: {float(spent):.6f} USD spent, this {kind} call would cost "
                f"about {float(cost):.6f} more")
    return None


_UNREADABLE = (ValueError, TypeError, RecursionError, msgspec.DecodeError)


def model_named(raw: bytes) -> str | None:
    """The model a recorded reply names: its JSON body's `model`, or, for a stream (chat chunks or typed Responses
    events), that of the body the proxy assembles from it."""
    body = raw
    if raw.lstrip().startswith((b"data:", b"event:")):
        try:
            body = assemble("responses", raw) if b"response.completed" in raw else assemble("chat", raw)
        except _UNREADABLE:
            return None
    try:
        doc = msgspec.json.decode(body)
    except _UNREADABLE:
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) else None


def recorded_usd(limits: Limits, provider: str, payloads: Sequence[Payload], blob: Callable[[str], bytes]) -> Fraction:
    """The USD a recorded trajectory spent, as the proxy counted it before a restart: searches that answered, pages'
    tokens, and each model turn at the price of the model its raw reply names (unpriced now: not counted)."""
    if limits.max_usd is None:
        return Fraction(0)
    spent = Fraction(0)
    for p in payloads:
        try:
            if isinstance(p, SearchCompleted) and p.status == "ok":
                spent += search_usd(limits, provider)
            elif isinstance(p, FetchCompleted) and p.status == "ok":
                spent += fetch_usd(limits, FETCHERS[0], p.n_tokens)
            elif isinstance(p, ModelResponded) and (isinstance(p.model, str) or p.raw_digest is not None):
                model = p.model if isinstance(p.model, str) else model_named(blob(p.raw_digest or ""))
                if model is not None:
                    spent += chat_usd(limits, model, p.usage)
        except Unpriced:
            continue
    return spent
