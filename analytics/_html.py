"""`report --html`: one self-contained page (inline CSS and SVG, no script, no network) that shows the report.

`render(report, extra=...)` draws the docs/reference/report.md report; `extra` may add what the report does not carry:
`{"gold_rank_hist": {provider: {rank: count}}, "per_trajectory": {provider: [{"fetches", "input_tokens",
"output_tokens"}, ...]}}`. `extras_from_db(store, judge_run_id)` computes that from events.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

import msgspec

from searchtrace.analytics._drawing import (
    LEFT,
    W,
    axis,
    count_axis_end,
    fmt,
    legend,
    nice_max,
    num,
    rect,
    series_colour,
    svg,
    text,
)
from searchtrace.analytics._interval_plots import PairRow, interval_chart, interval_section, paired_chart
from searchtrace.analytics._lookups import HasCursor, gold_rank_hist, judge_run, per_trajectory
from searchtrace.analytics._model import (
    OBSERVED_CELLS,
    PARTITION,
    SUPPORTED_CELLS,
    ArmMetrics,
    Complementarity,
    Report,
)
from searchtrace.analytics._table import (
    ARM_ROWS,
    CORRECTED,
    ROWS,
    Row,
    batch_line,
    corrected_blocks,
    corrected_pairs,
    fmt_names,
    has_ci,
    interval,
    p_value,
)
from searchtrace.store import BadInput

CORRECTED_SUPPORT = Row("surface support rate, corrected", lambda m: m.surface_support_rate_corrected,
                        lambda m: m.surface_support_rate_corrected_ci)
CORRECTED_CONTRADICTION = Row("surface contradiction rate, corrected", lambda m: m.surface_contradiction_rate_corrected,
                              lambda m: m.surface_contradiction_rate_corrected_ci)
CORRECTED_DIFF = PairRow("corrected surface support rate difference", lambda c: c.surface_support_rate_corrected_diff,
                         lambda c: c.surface_support_rate_corrected_diff_ci,
                         lambda c: c.surface_support_rate_corrected_diff_p)
_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:980px;color:#212121;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin:2.2rem 0 .3rem}
p.note{color:#555;margin:.2rem 0 .8rem;font-size:.92rem}
svg{width:100%;min-width:600px;height:auto;display:block}svg text{font:13px system-ui,sans-serif;fill:#333}
.chart{overflow-x:auto;margin:.3rem 0}.chart-title{font-weight:600;font-size:.95rem;margin:.9rem 0 .1rem}
table{border-collapse:collapse;font-size:.86rem;margin-top:.5rem}th,td{padding:.25rem .55rem;border-bottom:1px solid #e0e0e0;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f5f5f5}
.legend span{display:inline-block;margin-right:1rem;font-size:.85rem}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-1px}
.wide{overflow-x:auto}
"""


# -- charts ----------------------------------------------------------------------
def partition_chart(providers: Mapping[str, ArmMetrics]) -> str:
    """Stacked share of SMART / MISSED / BLIND / NO-OP per provider, with the counts under each bar."""
    names = sorted(providers)
    # docs/how-to/hosted.md: the fifth cell is drawn when some arm has one, so a store without hosted layers draws as before
    parts = PARTITION if any(providers[n].partition.unobserved for n in names) else OBSERVED_CELLS
    row, top, bar = 50, 10, 26
    height = top + row * len(names) + 30
    x0, x1 = LEFT, W - 20
    body = axis(x0, x1, top + row * len(names) + 4, top, 1.0, pct=True)
    for i, name in enumerate(names):
        part = providers[name].partition
        total = sum(part.count(p) for p in parts)
        y = top + i * row
        body.append(text(LEFT - 8, y + bar / 2 + 6, name, anchor="end"))
        x = float(x0)
        for p in parts:
            n = part.count(p)
            w = (x1 - x0) * n / total if total else 0.0
            body.append(rect(x, y + 2, w, bar, p.colour, f"{name} {p.name}: {n} of {total} items"))
            if w > 40:
                share = f"{n / total:.0%}"
                body.append(
                    text(x + w / 2, y + bar / 2 + 6, share, anchor="middle", extra=' style="fill:#fff"')
                )
            x += w
        counts = " · ".join(f"{p.name} {part.count(p):,}" for p in parts)
        body.append(
            text(
                x0, y + bar + 15, f"{counts}  (of {total:,} items)", extra=' style="fill:#555"'
            )
        )
    return svg(height, body, "support partition per provider") + legend(
        [(f"{p.name} ({p.meaning})", p.colour) for p in parts]
    )


def panel_bars(
    hist: Mapping[str, Mapping[Any, int]],
    providers: Sequence[str],
    categories: Sequence[int],
    what: str,
    label: str,
) -> str:
    """One panel of bars per provider over integer categories, each bar labelled with its share."""
    names = [p for p in providers if p in hist] + sorted(set(hist) - set(providers))
    panel, top = 90, 10
    height = top + panel * max(len(names), 1) + 30
    x0, x1 = LEFT, W - 20
    slot = (x1 - x0) / max(len(categories), 1)
    body: list[str] = []
    for i, name in enumerate(names):
        counts = {int(r): int(c) for r, c in hist[name].items()}
        total = sum(counts.values())
        y_base = top + (i + 1) * panel - 12
        body.append(text(LEFT - 8, y_base - panel / 2 + 10, name, anchor="end"))
        body.append(
            text(LEFT - 8, y_base - panel / 2 + 25, f"n={total:,}", anchor="end", extra=' style="fill:#777"')
        )
        body.append(f'<line x1="{x0}" y1="{num(y_base)}" x2="{x1}" y2="{num(y_base)}" stroke="#999"/>')
        peak = max(counts.values(), default=0)
        for j, r in enumerate(categories):
            c = counts.get(r, 0)
            h = (panel - 26) * c / peak if peak else 0.0
            share = c / total if total else 0.0
            x = x0 + j * slot + slot * 0.15
            body.append(
                rect(x, y_base - h, slot * 0.7, h, series_colour(i), f"{name} {what} {r}: {c:,} ({share:.0%})")
            )
            if c and slot > 24:
                body.append(text(x + slot * 0.35, y_base - h - 3, f"{share:.0%}", anchor="middle"))
    y_axis = top + panel * max(len(names), 1) + 2
    for j, r in enumerate(categories):
        body.append(text(x0 + (j + 0.5) * slot, y_axis + 12, str(r), anchor="middle"))
    body.append(text((x0 + x1) / 2, y_axis + 27, what, anchor="middle", extra=' style="fill:#777"'))
    return svg(height + 6, body, label)


def rank_chart(hist: Mapping[str, Mapping[Any, int]], providers: Sequence[str]) -> str:
    """Gold-supporting result appearances at each rank (1..10 at least), one panel per provider."""
    ranks = sorted({int(r) for h in hist.values() for r in h} | set(range(1, 11)))
    return panel_bars(hist, providers, ranks, "rank", "gold-supporting results by rank")


def count_chart(values: Mapping[str, Sequence[int]], what: str, label: str) -> str:
    """Trajectories by a small count (fetches, searches), one panel per provider."""
    hist: dict[str, dict[int, int]] = {}
    for name, xs in values.items():
        h = hist.setdefault(name, {})
        for x in xs:
            h[int(x)] = h.get(int(x), 0) + 1
    top = max([0, *(k for h in hist.values() for k in h)])
    if top > 20:  # too many categories for bars: fall back to a box plot
        return box_chart({n: [float(x) for x in xs] for n, xs in values.items()}, label)
    return panel_bars(hist, sorted(hist), list(range(top + 1)), what, label)


def rank1_chart(providers: Mapping[str, ArmMetrics]) -> str:
    """Fallback without per-rank counts: the report's gold rank-1 share per provider."""
    names = sorted(providers)
    row, top = 30, 10
    height = top + row * max(len(names), 1) + 30
    x0, x1 = LEFT, W - 60
    body = axis(x0, x1, top + row * max(len(names), 1) + 4, top, 1.0, pct=True)
    for i, name in enumerate(names):
        share = providers[name].gold_rank1_share
        y = top + i * row
        body.append(text(LEFT - 8, y + row / 2 + 4, name, anchor="end"))
        w = (x1 - x0) * (share or 0.0)
        body.append(rect(x0, y + 6, w, row - 12, series_colour(i), f"{name}: gold rank-1 share {fmt(share)}"))
        body.append(text(x0 + w + 4, y + row / 2 + 4, "–" if share is None else f"{share:.0%}"))
    return svg(height, body, "gold rank-1 share per provider")


def contradiction_chart(providers: Mapping[str, ArmMetrics]) -> str:
    """Items whose snippet supports gold next to items whose snippet contradicts it, per provider."""
    names = sorted(providers)
    rows: list[tuple[str, int, int, float | None]] = []
    for name in names:
        p = providers[name]
        support = sum(p.partition.count(c) for c in SUPPORTED_CELLS)
        ratio = p.contradiction_gold_ratio
        contra = round(ratio * support) if isinstance(ratio, int | float) else 0
        rows.append((name, support, contra, ratio))
    vmax, ticks = count_axis_end(max([1, *(max(s, c) for _, s, c, _ in rows)]))
    row, top = 46, 10
    height = top + row * len(rows) + 30
    x0, x1 = LEFT, W - 110
    body = axis(x0, x1, top + row * len(rows) + 4, top, vmax, ticks)
    for i, (name, support, contra, ratio) in enumerate(rows):
        y = top + i * row
        body.append(text(LEFT - 8, y + row / 2 + 4, name, anchor="end"))
        for k, (n, colour, what) in enumerate(
            ((support, "#2e7d32", "support gold"), (contra, "#c62828", "contradict gold"))
        ):
            w = (x1 - x0) * n / vmax
            body.append(rect(x0, y + 5 + k * 18, w, 15, colour, f"{name}: {n} items whose snippet {what}"))
            body.append(text(x0 + w + 4, y + 17 + k * 18, str(n)))
        body.append(text(x1 + 10, y + row / 2 + 4, "ratio " + ("–" if ratio is None else f"{ratio:.2f}")))
    return svg(height, body, "contradiction against support") + legend(
        [("snippet supports gold", "#2e7d32"), ("snippet contradicts gold", "#c62828")]
    )


def _quantile(xs: Sequence[float], q: float) -> float:
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def box_chart(values: Mapping[str, Sequence[float]], label: str, *, counts: bool = True) -> str:
    """Box plot per provider (min, quartiles, median, max) with the mean as a dot, under a visible title.

    `counts`: the values are counts (tokens, fetches), so the axis ticks are whole numbers."""
    names = sorted(values)
    peak = max([1.0, *(max(v) for v in values.values() if v)])
    vmax, ticks = count_axis_end(peak) if counts else (nice_max(peak), 5)
    row, top = 34, 10
    height = top + row * max(len(names), 1) + 30
    x0, x1 = LEFT, W - 20
    body = axis(x0, x1, top + row * max(len(names), 1) + 4, top, vmax, ticks)

    def sx(v: float) -> float:
        return x0 + (x1 - x0) * v / vmax

    for i, name in enumerate(names):
        xs = sorted(float(v) for v in values[name])
        y = top + i * row
        body.append(text(LEFT - 8, y + row / 2 + 4, name, anchor="end"))
        if not xs:
            continue
        lo, q1, med, q3, hi = (_quantile(xs, q) for q in (0, 0.25, 0.5, 0.75, 1))
        mean = sum(xs) / len(xs)
        mid, c = y + row / 2, series_colour(i)
        tip = f"{name} {label}: n={len(xs)} min={num(lo)} q1={num(q1)} median={num(med)} q3={num(q3)} max={num(hi)} mean={num(mean)}"
        body.append(
            f'<line x1="{num(sx(lo))}" y1="{num(mid)}" x2="{num(sx(hi))}" y2="{num(mid)}" stroke="{c}"/>'
        )
        body.append(rect(sx(q1), y + 7, sx(q3) - sx(q1), row - 14, c, tip, opacity=0.35))
        body.append(
            f'<line x1="{num(sx(med))}" y1="{y + 7}" x2="{num(sx(med))}" y2="{y + row - 7}" stroke="{c}" stroke-width="2.5"/>'
        )
        body.append(
            f'<circle cx="{num(sx(mean))}" cy="{num(mid)}" r="3.5" fill="#212121"><title>mean {num(mean)}</title></circle>'
        )
    return f'<p class="chart-title">{escape(label)}</p>' + svg(height, body, label)


def mean_chart(providers: Mapping[str, ArmMetrics], get: Callable[[ArmMetrics], float | None], label: str) -> str:
    """Fallback when no per-trajectory values were given: the report's mean per provider as a bar."""
    return box_chart({n: [float(get(p) or 0.0)] for n, p in providers.items()}, label + " (mean only)",
                     counts=False)


# -- page ------------------------------------------------------------------------
def provider_table(providers: Mapping[str, ArmMetrics], *, priced: bool = False, arms: bool = False) -> str:
    """The terminal table's rows (analytics._table.ROWS, one definition; USD rows only when priced), one column per
    provider, or per arm (`arms`: ARM_ROWS first, what each arm holds)."""
    names = sorted(providers)
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    rows = [f"<tr><th>metric</th>{head}</tr>"]
    for row in ARM_ROWS if arms else ():
        cells = "".join(f"<td>{escape(fmt_names(row.get(providers[n])))}</td>" for n in names)
        rows.append(f"<tr><td>{escape(row.label)}</td>{cells}</tr>")
    for row in ROWS:
        if row.usd and not priced:
            continue
        cells = "".join(f"<td>{fmt(_given(row.get(providers[n])))}</td>" for n in names)
        rows.append(f"<tr><td>{escape(row.label)}</td>{cells}</tr>")
    return '<div class="wide"><table>' + "".join(rows) + "</table></div>"


def _given(value: object) -> object:
    """A report value, None when absent (UNSET)."""
    return None if isinstance(value, msgspec.UnsetType) else value


def complementarity_table(comp: Mapping[str, Complementarity]) -> str:
    cols = [f.encode_name for f in msgspec.structs.fields(Complementarity)]
    rows = ["<tr><th>pair A|B</th>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"]
    for key in sorted(comp):
        rows.append(
            f"<tr><td>{escape(key)}</td>"
            + "".join(f"<td>{fmt(v)}</td>" for v in msgspec.structs.astuple(comp[key]))
            + "</tr>"
        )
    return '<div class="wide"><table>' + "".join(rows) + "</table></div>"


def corrected_section(report: Report) -> list[str]:
    """docs/concepts/statistics.md: the judge's snippet rates corrected by the human audit labels (empty without human labels)."""
    fixed = corrected_blocks(report)
    if not fixed:
        return []
    blocks = list(fixed.values())
    head = "".join(f"<th>{escape(n)}</th>" for n in fixed)
    rows = [f"<tr><th>metric</th>{head}</tr>"]
    for row in CORRECTED:
        rows.append(f"<tr><td>{escape(row.label)}</td>" + "".join(f"<td>{fmt(_given(row.get(b)))}</td>" for b in blocks)
                    + "</tr>")
        if row.ci is not None and has_ci(row, blocks):
            ci = row.ci
            rows.append("<tr><td>  95% interval</td>" + "".join(
                f"<td>{escape(interval(ci(b)))}</td>" for b in blocks) + "</tr>")
    parts = [
        "<h2>Corrected for judge error</h2>",
        '<p class="note">The judge is an LLM: each snippet rate is corrected by the human audit labels, stratum by '
        f"stratum ({'provider' if report.axis == 'provider' else 'arm'} × label × judge value, weighted by the audit "
        "design's population), and each corrected "
        "rate names the human labels it rests on. TPR / TNR: the judge against the human labels, weighted the same "
        "way.</p>",
        '<div class="wide"><table>' + "".join(rows) + "</table></div>",
    ]
    if not isinstance(report.uncertainty, msgspec.UnsetType):
        parts += [interval_chart(fixed, CORRECTED_SUPPORT), interval_chart(fixed, CORRECTED_CONTRADICTION)]
    pairs = {k: c for k, c in corrected_pairs(report).items()
             if not isinstance(c.surface_support_rate_corrected_diff_ci, msgspec.UnsetType)}
    if pairs:
        parts.append(paired_chart(pairs, CORRECTED_DIFF))
        cells = []
        for k, c in pairs.items():
            labels = c.surface_support_rate_corrected_diff_labels
            cells.append(f"<tr><td>{escape(k)}</td><td>{fmt(_given(c.surface_support_rate_corrected_diff_questions))}</td>"
                         f"<td>{escape(' / '.join(fmt(x) for x in labels or ()))}</td>"
                         f"<td>{fmt(_given(c.surface_support_rate_corrected_diff))}</td>"
                         f"<td>{escape(interval(c.surface_support_rate_corrected_diff_ci))}</td>"
                         f"<td>{p_value(c.surface_support_rate_corrected_diff_p)}</td></tr>")
        parts.append('<div class="wide"><table><tr><th>pair A|B</th><th>questions</th><th>human labels A / B</th>'
                     "<th>Δ corrected</th><th>95% interval</th><th>p (bootstrap)</th></tr>" + "".join(cells)
                     + "</table></div>")
    return parts


def render(report: Report, *, extra: dict[str, Any] | None = None) -> str:
    """The whole page as one string: charts first, then the numbers they come from."""
    providers = report.blocks
    extra = extra or {}
    names = sorted(providers)
    per_traj: dict[str, list[dict[str, Any]]] = extra.get("per_trajectory") or {}
    hist = extra.get("gold_rank_hist")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>searchtrace report {escape(str(report.judge_run_id))}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Search APIs as decision surfaces</h1>",
        f'<p class="note">judge run <b>{escape(str(report.judge_run_id))}</b> · '
        f"{escape(report.schema)} · {len(names)} "
        + ("providers" if report.axis == "provider" else f"arms by {escape(report.axis)}") + "</p>",
        "<h2>What the agent did with the evidence it saw</h2>",
        '<p class="note">Every judge item (a distinct URL in a trajectory) by whether its pre-fetch surface '
        "supported the gold answer and whether the agent fetched it.</p>",
        partition_chart(providers),
        "<h2>Where the gold-supporting results sit</h2>",
        '<p class="note">Result appearances whose snippet supports the gold answer, by rank in the search call.</p>',
        rank_chart(hist, names) if hist else rank1_chart(providers),
        "<h2>Contradiction against support</h2>",
        '<p class="note">Items whose snippet supports the gold answer next to items whose snippet asserts '
        "an incompatible answer; the ratio is contradicting / supporting.</p>",
        contradiction_chart(providers),
        "<h2>How much text each result carries</h2>",
        '<p class="note">Mean characters of pre-fetch surface per search result (docs/how-to/providers.md): a longer surface has '
        "more chances to hold the answer, so read the support rates next to it.</p>",
        mean_chart(providers, lambda m: m.surface_chars_mean, "surface characters per result"),
        "<h2>Tokens per trajectory</h2>",
        '<p class="note">Box: middle half of the trajectories; thick line: median; dot: mean; whiskers: min to max.</p>',
        box_chart(
            {n: [float(r.get("input_tokens", 0)) for r in per_traj.get(n, [])] for n in names},
            "input tokens per trajectory",
        )
        if per_traj
        else mean_chart(providers, lambda m: m.input_tokens_per_trajectory, "input tokens per trajectory"),
        box_chart(
            {n: [float(r.get("output_tokens", 0)) for r in per_traj.get(n, [])] for n in names},
            "output tokens per trajectory",
        )
        if per_traj
        else mean_chart(providers, lambda m: m.output_tokens_per_trajectory, "output tokens per trajectory"),
        "<h2>Fetches per trajectory</h2>",
        count_chart(
            {n: [int(r.get("fetches", 0)) for r in per_traj.get(n, [])] for n in names},
            "fetches in the trajectory",
            "fetches per trajectory",
        )
        if per_traj
        else mean_chart(providers, lambda m: m.fetches_per_trajectory, "fetches per trajectory"),
    ]
    parts += interval_section(report)
    parts += corrected_section(report)
    parts += [
        f"<h2>Per {escape(report.axis)}</h2>",
        provider_table(providers, priced=report.prices_as_of is not msgspec.UNSET, arms=report.axis != "provider"),
    ]
    if line := batch_line(report):
        parts.append(f'<p class="note">{escape(line)}</p>')
    if report.complementarity:
        parts += ["<h2>Complementarity</h2>", complementarity_table(report.complementarity)]
    if not isinstance(report.custom, msgspec.UnsetType) and report.custom:
        parts += ["<h2>Custom metrics</h2>", f"<pre>{escape(repr(report.custom))}</pre>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def extras_from_db(source: HasCursor, judge_run_id: str | None, runs: Sequence[str] | None = None,
                   by: str = "provider") -> dict[str, Any]:
    """gold_rank_hist and per_trajectory for `render`, computed from events (the default judge run when None), per
    provider or per arm of `by` (docs/how-to/compare.md)."""
    try:
        jr = judge_run(source, judge_run_id)
    except BadInput:
        jr = None
    return {"gold_rank_hist": gold_rank_hist(source, jr, runs, by),
            "per_trajectory": per_trajectory(source, runs, by)}
