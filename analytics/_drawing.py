"""The SVG pieces every chart of the HTML page is drawn with (the report page and its interval section)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

PALETTE = ("#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#558b2f", "#4e342e", "#37474f")
W = 720  # drawing width of every chart (scaled by CSS)
LEFT = 120  # room for provider names


def num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return escape(str(v))


def text(x: float, y: float, s: str, *, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}"{extra}>{escape(s)}</text>'


def rect(x: float, y: float, w: float, h: float, fill: str, title: str, opacity: float = 1.0) -> str:
    op = f' fill-opacity="{opacity}"' if opacity < 1 else ""
    return (
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0.0))}" height="{num(h)}" fill="{fill}"{op}>'
        f"<title>{escape(title)}</title></rect>"
    )


def svg(height: float, body: Sequence[str], label: str) -> str:
    """A chart drawn W wide; on a narrow screen it scrolls sideways rather than shrinking its text below ~11 px."""
    return (
        f'<div class="chart"><svg viewBox="0 0 {W} {num(height)}" role="img" aria-label="{escape(label)}">'
        + "".join(body)
        + "</svg></div>"
    )


def tick(v: float) -> str:
    if v >= 1_000_000:
        return f"{v / 1_000_000:g}M"
    return f"{v / 1000:g}k" if v >= 1000 else num(v)


def nice_max(v: float) -> float:
    """A round axis end at or above v (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × 10^k)."""
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * exp >= v:
            return float(m * exp)
    return float(10 * exp)


def count_axis_end(v: float) -> tuple[float, int]:
    """An axis end and tick count for counts: whole-number ticks only (a count is never 0.6)."""
    top = max(1, math.ceil(v))
    if top <= 5:
        return float(top), top
    end = max(top, math.ceil(nice_max(v)))
    for ticks in (5, 4, 6, 3, 2):
        if end % ticks == 0:
            return float(end), ticks
    end += -end % 5
    return float(end), 5


def axis(
    x0: float, x1: float, y: float, top: float, vmax: float, ticks: int = 5, pct: bool = False
) -> list[str]:
    out = [f'<line x1="{x0}" y1="{num(y)}" x2="{x1}" y2="{num(y)}" stroke="#999"/>']
    for i in range(ticks + 1):
        v = vmax * i / ticks
        x = x0 + (x1 - x0) * i / ticks
        out.append(f'<line x1="{num(x)}" y1="{num(top)}" x2="{num(x)}" y2="{num(y)}" stroke="#eee"/>')
        out.append(text(x, y + 15, f"{v:.0%}" if pct else tick(v), anchor="middle"))
    return out


def legend(items: Sequence[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in items)
    return f'<div class="legend">{spans}</div>'


def series_colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]
