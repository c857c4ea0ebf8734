"""The docs/reference/prices.md price table (a `--prices FILE` or a run config's `[prices]`), validated on load.

USD per 1,000 search requests by provider, per 1M tokens of fetched content by backend, per 1M model tokens by
model. Applied nowhere by default: analytics._cost uses it only when the user gives it.
"""

from __future__ import annotations

import math
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.store import BadInput, read_bounded, shown

MAX_PRICE = 1e9  # USD per unit (1,000 requests, 1M tokens): far above any real price, far below a float's range


class ModelPrice(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """USD per 1M tokens."""

    input: float
    output: float
    cached_input: float | None = None


class Prices(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    as_of: str
    search: dict[str, float] = {}  # USD per 1,000 requests, by provider name (or kind)
    fetch: dict[str, float] = {}  # USD per 1M tokens of fetched content, by backend
    models: dict[str, ModelPrice] = {}
    # docs/how-to/batch.md: a model batch's tokens cost this fraction of the model's price (OpenAI and Anthropic: half)
    batch_discount: float = 0.5


def model_usd(p: ModelPrice, inp: int, cached: int, out: int) -> Fraction:
    """USD of one model's usage: input less cached at the input price, cached at `cached_input` (the input price
    when none), output at the output price, per 1M tokens; exact, so the same usage gives the same bytes."""
    cached_price = p.input if p.cached_input is None else p.cached_input
    return (Fraction(inp - cached) * Fraction(p.input) + Fraction(cached) * Fraction(cached_price)
            + Fraction(out) * Fraction(p.output)) / 1_000_000


def searches_usd(price: float, searches: int) -> Fraction:
    """USD of `searches` answered requests at `price` per 1,000 (the table's `search` unit)."""
    return Fraction(searches) * Fraction(price) / 1000


def fetched_usd(price: float, tokens: int) -> Fraction:
    """USD of `tokens` of fetched content at `price` per 1M tokens (the table's `fetch` unit)."""
    return Fraction(tokens) * Fraction(price) / 1_000_000


def parse_prices(data: Any, src: str) -> Prices:
    """A decoded price table; BadInput naming `src` and the key."""
    if isinstance(data, dict):  # name the exact key of a non-number price (msgspec says only `search[...]`)
        for table in ("search", "fetch"):
            for name, usd in (data.get(table) or {}).items() if isinstance(data.get(table), dict) else ():
                if isinstance(usd, bool) or not isinstance(usd, int | float):
                    raise BadInput(f"{src}: key {table}.{name}: a price must be a number (USD), got {shown(usd)}")
    try:
        prices = msgspec.convert(data, Prices, strict=False)
    except msgspec.ValidationError as exc:
        msg = str(exc)
        where = msg.rsplit(" - at `$", 1)
        key = where[1].rstrip("`").lstrip(".") if len(where) == 2 else ""
        raise BadInput(f"{src}: {'key ' + key + ': ' if key else ''}{where[0]}") from None
    for table, values in (("search", prices.search), ("fetch", prices.fetch)):
        for name, usd in values.items():
            if (problem := _price_problem(usd)) is not None:
                raise BadInput(f"{src}: key {table}.{name}: {problem}")
    if not (math.isfinite(prices.batch_discount) and 0 <= prices.batch_discount <= 1):
        raise BadInput(f"{src}: key batch_discount: the fraction of the price a batch pays, 0 to 1, got "
                       f"{prices.batch_discount}")
    for name, m in prices.models.items():
        for field in ("input", "output", "cached_input"):
            v = getattr(m, field)
            if v is not None and (problem := _price_problem(v)) is not None:
                raise BadInput(f"{src}: key models.{name}.{field}: {problem}")
    return prices


def _price_problem(usd: float) -> str | None:
    """Why `usd` is not a price: it must be finite, >= 0 and at most MAX_PRICE (costs are summed exactly, then
    shown as floats: inf, nan or 1e308 cannot be)."""
    if not (math.isfinite(usd) and 0 <= usd <= MAX_PRICE):
        return f"a price must be a finite number from 0 to {MAX_PRICE:g} (USD), got {usd}"
    return None


def load_prices(path: Path) -> Prices:
    """Reads a price file (TOML, docs/reference/prices.md)."""
    raw = read_bounded(path, "text", "price file")
    try:
        data = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: not valid TOML ({exc})") from None
    return parse_prices(data, str(path))
