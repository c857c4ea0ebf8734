"""docs/concepts/statistics.md intervals drawn for the HTML page: a dot per estimate with its 95 % interval as a whisker."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any, NamedTuple

import msgspec

from searchtrace.analytics._drawing import LEFT, W, fmt, num, series_colour, svg, text
from searchtrace.analytics._model import ArmMetrics, Pair, Report
from searchtrace.analytics._table import Row

INTERVAL_METRICS: tuple[Row, ...] = (
    Row("accuracy", lambda m: m.accuracy, lambda m: m.accuracy_ci),
    Row("surface support rate", lambda m: m.surface_support_rate, lambda m: m.surface_support_rate_ci),
    Row("gold rank-1 share", lambda m: m.gold_rank1_share, lambda m: m.gold_rank1_share_ci),
    Row("contradiction / gold-URL ratio", lambda m: m.contradiction_gold_ratio, lambda m: m.contradiction_gold_ratio_ci),
    Row("fetches / trajectory", lambda m: m.fetches_per_trajectory, lambda m: m.fetches_per_trajectory_ci),
    Row("searches / trajectory", lambda m: m.searches_per_trajectory, lambda m: m.searches_per_trajectory_ci),
)
"""The estimates drawn with their intervals, one chart each."""


class PairRow(NamedTuple):
    """One paired difference of the pairs: its value, interval, p-value and Holm's adjustment (None: none)."""

    label: str
    diff: Callable[[Pair], object]
    ci: Callable[[Pair], object]
    p: Callable[[Pair], object]
    holm: Callable[[Pair], object] = lambda c: None


ACCURACY_DIFF = PairRow("accuracy difference", lambda c: c.accuracy_diff, lambda c: c.accuracy_diff_ci,
                        lambda c: c.accuracy_diff_p, lambda c: c.p_holm)
SUPPORT_DIFF = PairRow("surface support rate difference", lambda c: c.surface_support_rate_diff,
                       lambda c: c.surface_support_rate_diff_ci, lambda c: c.surface_support_rate_diff_p,
                       lambda c: c.surface_support_rate_diff_p_holm)


def _value(x: object) -> float | None:
    """A number of the report, None when null or absent."""
    return float(x) if isinstance(x, int | float) else None


def _interval(x: object) -> Sequence[float | None] | None:
    """An interval of the report, None when null or absent."""
    return x if isinstance(x, list) else None


def _ci_text(ci: Sequence[float | None] | None) -> str:
    if ci is None:
        return "–"
    return f"[{fmt(float(ci[0] or 0))}, {'∞' if ci[1] is None else fmt(float(ci[1]))}]"


def _scale(lo: float, hi: float, x0: float, x1: float) -> Any:
    span = (hi - lo) or 1.0
    return lambda v: x0 + (x1 - x0) * (v - lo) / span


def _whisker(sx: Any, y: float, point: float, ci: Sequence[float | None] | None, colour: str, title: str,
             right: float = W - 150) -> list[str]:
    """A point and its interval; an unbounded upper end (null) runs to the chart's `right` edge without a cap."""
    out = []
    if ci is not None:
        a = sx(float(ci[0] or 0))
        b = right if ci[1] is None else sx(float(ci[1]))
        out.append(f'<line x1="{num(a)}" y1="{num(y)}" x2="{num(b)}" y2="{num(y)}" stroke="{colour}" '
                   f'stroke-width="2"><title>{escape(title)}</title></line>')
        for x in (a,) if ci[1] is None else (a, b):
            out.append(f'<line x1="{num(x)}" y1="{num(y - 5)}" x2="{num(x)}" y2="{num(y + 5)}" stroke="{colour}"/>')
    out.append(f'<circle cx="{num(sx(point))}" cy="{num(y)}" r="4" fill="{colour}"><title>{escape(title)}</title>'
               "</circle>")
    return out


def interval_chart(providers: Mapping[str, ArmMetrics], metric: Row) -> str:
    """One metric: per provider the estimate and its 95% interval."""
    names = sorted(providers)
    label, ci_of = metric.label, metric.ci
    values = [(n, _value(metric.get(providers[n])), _interval(None if ci_of is None else ci_of(providers[n])))
              for n in names]
    ends = [float(v) for _, p, ci in values if p is not None for v in (p, *(ci or ())) if v is not None]
    lo, hi = (min([0.0, *ends]), max([1e-9, *ends])) if ends else (0.0, 1.0)
    row, top = 28, 8
    x0, x1 = LEFT, W - 150
    sx = _scale(lo, hi, x0, x1)
    height = top + row * len(names) + 24
    body = [f'<line x1="{x0}" y1="{num(top + row * len(names))}" x2="{x1}" y2="{num(top + row * len(names))}" '
            'stroke="#999"/>']
    for v in (lo, (lo + hi) / 2, hi):
        body.append(text(sx(v), top + row * len(names) + 15, fmt(float(v)), anchor="middle"))
    for i, (name, point, ci) in enumerate(values):
        y = top + i * row + row / 2
        body.append(text(LEFT - 8, y + 4, name, anchor="end"))
        if point is None:
            body.append(text(x0, y + 4, "–"))
            continue
        body += _whisker(sx, y, float(point), ci, series_colour(i), f"{name} {label} {fmt(float(point))} {_ci_text(ci)}")
        body.append(text(x1 + 10, y + 4, f"{fmt(float(point))} {_ci_text(ci)}"))
    return f"<h3>{escape(label)}</h3>" + svg(height, body, f"{label}: estimate and 95% interval per provider")


def paired_chart(comp: Mapping[str, Pair], diff: PairRow) -> str:
    """Per provider pair the difference A − B with its paired interval, a zero line, the p-value and Holm's."""
    label = diff.label
    keys = [k for k in sorted(comp) if not isinstance(diff.diff(comp[k]), msgspec.UnsetType)]
    ends = [float(v) for k in keys for v in (_value(diff.diff(comp[k])), *(_interval(diff.ci(comp[k])) or ()))
            if v is not None]
    bound = max([1e-9, *(abs(v) for v in ends)])
    row, top = 28, 8
    x0, x1 = LEFT + 20, W - 170
    sx = _scale(-bound, bound, x0, x1)
    height = top + row * len(keys) + 24
    body = [f'<line x1="{num(sx(0.0))}" y1="{top}" x2="{num(sx(0.0))}" y2="{num(top + row * len(keys))}" '
            'stroke="#999" stroke-dasharray="4 3"/>']
    for v in (-bound, 0.0, bound):
        body.append(text(sx(v), top + row * len(keys) + 15, fmt(float(v)), anchor="middle"))
    for i, key in enumerate(keys):
        c = comp[key]
        y = top + i * row + row / 2
        body.append(text(x0 - 8, y + 4, key.replace("|", " − "), anchor="end"))
        d = _value(diff.diff(c))
        if d is None:
            body.append(text(x0, y + 4, "–"))
            continue
        ci, p, adjusted = _interval(diff.ci(c)), _value(diff.p(c)), _value(diff.holm(c))
        note = (f"{fmt(float(d))} {_ci_text(ci)}" + ("" if p is None else f" p={p:.3g}")
                + ("" if adjusted is None else f" Holm {adjusted:.3g}"))
        body += _whisker(sx, y, float(d), ci, series_colour(i), f"{key} {label} {note}")
        body.append(text(x1 + 10, y + 4, note))
    return f"<h3>{escape(label)}</h3>" + svg(height, body, f"{label}: paired difference and 95% interval per pair")


def interval_section(report: Report) -> list[str]:
    """The page's 'How sure' section (empty when the report has no intervals)."""
    u = report.uncertainty
    if isinstance(u, msgspec.UnsetType):
        return []
    providers = report.blocks
    comp = report.pairs
    parts = [
        "<h2>How sure: 95% intervals</h2>",
        '<p class="note">Dot: the estimate; whisker: its 95% interval. Proportions (accuracy, surface support rate, '
        "gold rank-1 share): continuity-corrected Wilson score interval at the effective sample size over questions "
        "(every epoch of a question pooled), for the support rate and the rank-1 share widened to a beta-binomial "
        f"profile-likelihood interval where that reaches further; the others: percentile interval from {u.bootstrap:,} bootstrap "
        f"replicates over questions (seed {escape(u.seed)}).</p>",
    ]
    parts += [interval_chart(providers, row) for row in INTERVAL_METRICS]
    if any(not isinstance(c.accuracy_diff, msgspec.UnsetType) for c in comp.values()):
        tests = [sum(_value(c.p_holm) is not None for c in comp.values()),
                 sum(_value(c.surface_support_rate_diff_p_holm) is not None for c in comp.values())]
        holm = (f" Holm: p-values adjusted over the {tests[0]} accuracy tests and the {tests[1]} surface-support "
                "tests shown here." if any(tests) else "")
        parts += [
            "<h2>Paired differences (A − B, questions both ran)</h2>",
            '<p class="note">Per question A − B (accuracy: questions audited on both sides, each side averaged over '
            "its audited epochs; surface support: questions with valid items on both sides), averaged; interval: the "
            f"same drawn questions for both {'providers' if report.axis == 'provider' else 'arms'}; p: McNemar exact "
            "(one audited epoch per question on both "
            f"sides) or the exact sign-flip test.{holm}</p>",
            paired_chart(comp, ACCURACY_DIFF),
            paired_chart(comp, SUPPORT_DIFF),
        ]
    return parts
