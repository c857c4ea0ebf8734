"""The terminal form of the report: one column per provider, or per arm of `--by` (rich), then complementarity and
custom metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import msgspec
from rich.console import Console
from rich.table import Table

from searchtrace.analytics._model import (
    OBSERVED_CELLS,
    PARTITION,
    ArmMetrics,
    Cell,
    Pair,
    PairColumn,
    Report,
    Shown,
    arm_key,
    field_key,
    pair_key,
)


class Row(NamedTuple):
    """One row of the report's tables: its label, the block's value and (when it has one) its interval."""

    label: str
    get: Callable[[ArmMetrics], object]
    ci: Callable[[ArmMetrics], object] | None = None
    usd: bool = False  # a USD row: shown only when the report was priced (`prices_as_of`)
    seen: bool = False  # shown only when some arm counts something in it (UNOBSERVED: only hosted layers have it)

    @property
    def key(self) -> str:
        """The value's key in the report's JSON (`partition.SMART` reaches into the partition)."""
        return field_key(ArmMetrics, self.get)


def _short(cell: Cell) -> str:
    """A cell's meaning in a table's few words ("S, not fetched")."""
    return cell.meaning.replace("no surface support", "no S").replace("surface supports gold", "S")


ROWS: tuple[Row, ...] = (
    Row("trajectories", lambda m: m.trajectories),
    Row("audited", lambda m: m.audited),
    Row("correct", lambda m: m.correct),
    Row("accuracy", lambda m: m.accuracy, lambda m: m.accuracy_ci),
    Row("exact match", lambda m: m.exact_match, lambda m: m.exact_match_ci),
    Row("token F1", lambda m: m.token_f1, lambda m: m.token_f1_ci),
    Row("searches / trajectory", lambda m: m.searches_per_trajectory, lambda m: m.searches_per_trajectory_ci),
    Row("fetches / trajectory", lambda m: m.fetches_per_trajectory, lambda m: m.fetches_per_trajectory_ci),
    Row("distinct domains / trajectory", lambda m: m.distinct_domains_per_trajectory),
    Row("input tokens / trajectory", lambda m: m.input_tokens_per_trajectory,
        lambda m: m.input_tokens_per_trajectory_ci),
    Row("output tokens / trajectory", lambda m: m.output_tokens_per_trajectory,
        lambda m: m.output_tokens_per_trajectory_ci),
    Row("reasoning tokens / trajectory", lambda m: m.reasoning_tokens_per_trajectory,
        lambda m: m.reasoning_tokens_per_trajectory_ci),
    Row("fetched-page tokens / trajectory", lambda m: m.page_tokens_per_trajectory,
        lambda m: m.page_tokens_per_trajectory_ci),
    Row("search ms, median (provider)", lambda m: m.search_provider_ms_median),
    Row("search ms, p90 (provider)", lambda m: m.search_provider_ms_p90),
    Row("fetch ms, median (provider)", lambda m: m.fetch_provider_ms_median),
    Row("fetch ms, p90 (provider)", lambda m: m.fetch_provider_ms_p90),
    Row("tokens / correct answer", lambda m: m.tokens_per_correct, lambda m: m.tokens_per_correct_ci),
    Row("judge items", lambda m: m.items),
    Row("valid verdicts", lambda m: m.valid_items),
    Row("invalid verdicts (excluded)", lambda m: m.invalid_items),
    Row("snippet-only rows", lambda m: m.snippet_only_items),
    Row("page-visible rows", lambda m: m.page_visible_items),
    *(Row(f"{cell.name} ({_short(cell)})", get) for cell, get in zip(OBSERVED_CELLS, (
        lambda m: m.partition.smart, lambda m: m.partition.missed, lambda m: m.partition.blind,
        lambda m: m.partition.noop), strict=True)),
    Row(f"{PARTITION[-1].name} ({PARTITION[-1].meaning.split(':')[0]})", lambda m: m.partition.unobserved, seen=True),
    Row("discovered support", lambda m: m.discovered_support),
    Row("surface support rate", lambda m: m.surface_support_rate, lambda m: m.surface_support_rate_ci),
    Row("surface chars / result (mean)", lambda m: m.surface_chars_mean),
    Row("surface chars / result (median)", lambda m: m.surface_chars_median),
    Row("surface-answerable queries", lambda m: m.surface_answerable_queries),
    Row("gold rank-1 share", lambda m: m.gold_rank1_share, lambda m: m.gold_rank1_share_ci),
    Row("contradiction / gold-URL ratio", lambda m: m.contradiction_gold_ratio, lambda m: m.contradiction_gold_ratio_ci),
    Row("USD search", lambda m: m.search_usd, usd=True),
    Row("USD fetch", lambda m: m.fetch_usd, usd=True),
    Row("USD agent model", lambda m: m.agent_model_usd, usd=True),
    Row("USD judge model", lambda m: m.judge_model_usd, usd=True),
    Row("  of which batched", lambda m: m.judge_model_batch_usd, usd=True),
    Row("USD / trajectory", lambda m: m.usd_per_trajectory, usd=True),
    Row("USD / correct answer", lambda m: m.usd_per_correct, lambda m: m.usd_per_correct_ci, usd=True),
)
"""The rows of the terminal table and the HTML page, in order."""

REPORT_ROWS: tuple[tuple[str, str], ...] = tuple((r.key, r.label) for r in ROWS)
"""(JSON key, label) of each row, for the explorer (its JavaScript reads the report's JSON)."""

# docs/how-to/compare.md: in a report by another axis, what each arm holds (lists of names), above ROWS
ARM_ROWS: tuple[Row, ...] = (Row("runs", lambda m: m.runs), Row("search providers", lambda m: m.search_providers))


def fmt_names(value: object) -> str:
    """An arm's list of names in one cell."""
    return ", ".join(str(v) for v in value) if isinstance(value, list) else fmt(value)


def axis_title(report: Report) -> str:
    """What a report by another axis than providers adds to a title (docs/how-to/compare.md: the heading names the axis)."""
    return "" if report.axis == "provider" else f" · arms by {report.axis}"


_LABEL_WIDTH = 36  # the metric column and the table's borders
_CELL_WIDTH = 12  # one provider column ("12,345.6" plus padding)


def fmt(value: object) -> str:
    """A value in one cell ("–" for null or absent)."""
    if value is None or isinstance(value, msgspec.UnsetType):
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


def fmt_usd(value: object) -> str:
    """Dollars with four significant digits (small per-call costs stay visible)."""
    if not isinstance(value, int | float):
        return "–"
    return f"${value:,.4g}" if abs(value) < 1000 else f"${value:,.0f}"


def short(v: float) -> str:
    """A number in at most ~6 characters, for interval cells."""
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    if abs(v) >= 1000:
        return f"{v / 1000:.1f}k"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def interval(ci: object) -> str:
    """`0.170–0.340`: a 95% interval in one short cell ("–" when there is none, "∞" for an unbounded end)."""
    if not isinstance(ci, list) or len(ci) != 2:
        return "–"
    lo, hi = float(ci[0]), ("∞" if ci[1] is None else short(float(ci[1])))
    return f"[{short(lo)}, {hi}]" if lo < 0 else f"{short(lo)}–{hi}"


def p_value(p: object) -> str:
    """A p-value in one cell."""
    return f"{p:.3g}" if isinstance(p, int | float) else "–"


TESTS = {"mcnemar_exact": "McNemar", "sign_flip_exact_dp": "sign-flip", "sign_flip_dp_grid": "sign-flip (grid)",
         "mover_inverted": "score (inverted)"}


def has_ci(row: Row, blocks: list[ArmMetrics]) -> bool:
    """The row has an interval in some block (then it is shown on its own row, just below)."""
    return row.ci is not None and any(not isinstance(row.ci(b), msgspec.UnsetType) for b in blocks)


def batch_line(report: Report) -> str | None:
    """The judge run's model batches in one line (docs/how-to/batch.md), or None when it submitted none."""
    b = report.judge_batches
    if b is None or isinstance(b, msgspec.UnsetType):
        return None
    line = (f"judge batches: {b.batches:,} ({b.live:,} live), {b.items:,} items sent "
            f"({b.submitted:,} sends, {b.resubmitted:,} resubmitted); results: {b.succeeded:,} succeeded, "
            f"{b.errored:,} errored, {b.expired:,} expired, {b.canceled:,} canceled; "
            f"{b.online:,} judged online by fallback, {b.left:,} left unjudged")
    return line + (f", {b.pending:,} pending" if b.pending else "")


def render_table(report: Report, console: Console) -> None:
    """Print the report as tables (numbers only; `--json` is the contract)."""
    providers = report.blocks
    names = sorted(providers)
    if not names:
        console.print("no trajectories in this database yet (record, demo or import some)")
        return
    title = f"searchtrace report · judge run {report.judge_run_id or '(none)'}{axis_title(report)}"
    if not isinstance(u := report.uncertainty, msgspec.UnsetType):
        title += (f"\n95% intervals: proportions Wilson at the effective sample size (support rate and rank-1 share: "
                  "its hull with a beta-binomial profile interval); means and ratios bootstrap over "
                  f"questions, {u.bootstrap:,} replicates, seed {u.seed}")
    per = max(1, (console.width - _LABEL_WIDTH) // _CELL_WIDTH)  # many providers: several tables that fit the width
    for start in range(0, len(names), per):
        part = names[start : start + per]
        kind = "providers" if report.axis == "provider" else "arms"
        more = f" ({kind} {start + 1}–{start + len(part)} of {len(names)})" if len(names) > per else ""
        table = Table(title=title + more, title_justify="left")
        table.add_column("metric")
        for name in part:
            table.add_column(name, justify="right")
        if report.axis != "provider":
            for row in ARM_ROWS:
                table.add_row(row.label, *(fmt_names(row.get(providers[n])) for n in part))
        blocks = [providers[n] for n in part]
        first_usd = True
        for row in ROWS:
            label = row.label
            if row.usd:
                if isinstance(report.prices_as_of, msgspec.UnsetType):
                    continue
                label += f" (prices {report.prices_as_of})" if first_usd else ""
                first_usd = False
            if row.seen and not any(row.get(b) for b in blocks):
                continue
            show = fmt_usd if row.usd else fmt
            table.add_row(label, *(show(row.get(b)) for b in blocks))
            if row.ci is not None and has_ci(row, blocks):  # the interval on its own row, just below
                table.add_row("  95% interval", *(interval(row.ci(b)) for b in blocks), style="dim")
        custom = {} if isinstance(report.custom, msgspec.UnsetType) else report.custom
        for metric, values in sorted(custom.items()):
            table.add_row(f"custom: {metric}", *(fmt(values.get(n)) for n in part))
        console.print(table)
    if line := batch_line(report):
        console.print(line, highlight=False)
    comp = report.complementarity
    if comp:
        both = "providers" if report.axis == "provider" else "arms"
        ct = Table(title=f"complementarity (questions both {both} ran)", title_justify="left")
        for col in ("pair", "A only", "B only", "both", "neither", "url Jaccard"):
            ct.add_column(col, justify="left" if col == "pair" else "right")
        for pair in sorted(comp):
            c = comp[pair]
            ct.add_row(pair, *(fmt(v) for v in (c.a_only, c.b_only, c.both, c.neither, c.url_jaccard)))
        console.print(ct)
    pairs = report.pairs
    paired = [p for p in sorted(pairs) if not isinstance(pairs[p].accuracy_diff, msgspec.UnsetType)]
    if paired:
        holm = any(not isinstance(pairs[p].p_holm, msgspec.UnsetType) for p in paired)
        tests = [sum(isinstance(pairs[p].p_holm, int | float) for p in paired),
                 sum(isinstance(pairs[p].surface_support_rate_diff_p_holm, int | float) for p in paired)]
        title = "paired differences A − B, per question (n: questions audited on both sides)"
        if holm:
            title += f"; Holm over the {tests[0]} accuracy and {tests[1]} surface-support tests shown"
        pt = Table(title=title, title_justify="left")
        cols = ["pair", "n", "Δ accuracy", "p", *(["p Holm"] if holm else []), "Δ surface support", "p",
                *(["p Holm"] if holm else [])]
        for col in cols:
            pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=col == "pair")
        for pair in paired:
            d = pairs[pair]
            acc = [fmt(d.accuracy_diff), p_value(d.accuracy_diff_p), *([p_value(d.p_holm)] if holm else [])]
            ssr = [fmt(d.surface_support_rate_diff), p_value(d.surface_support_rate_diff_p),
                   *([p_value(d.surface_support_rate_diff_p_holm)] if holm else [])]
            pt.add_row(pair, fmt(d.paired_questions), *acc, *ssr)
            pad = [""] if holm else []
            pt.add_row("  95% interval", "", interval(d.accuracy_diff_ci), TESTS.get(str(d.accuracy_test), ""), *pad,
                       interval(d.surface_support_rate_diff_ci), TESTS.get(str(d.surface_support_rate_test), ""),
                       *pad, style="dim")
        console.print(pt)
    corrected_table(report, console)


# docs/concepts/statistics.md judge-error correction; each corrected rate is followed by its human-label count
CORRECTED: tuple[Row, ...] = (
    Row("surface support rate (judge)", lambda m: m.surface_support_rate, lambda m: m.surface_support_rate_ci),
    Row("  corrected for judge error", lambda m: m.surface_support_rate_corrected,
        lambda m: m.surface_support_rate_corrected_ci),
    Row("  human labels it rests on", lambda m: m.surface_support_rate_corrected_labels),
    Row("judge TPR, supports (vs human)", lambda m: m.judge_tpr, lambda m: m.judge_tpr_ci),
    Row("judge TNR, supports (vs human)", lambda m: m.judge_tnr, lambda m: m.judge_tnr_ci),
    Row("surface contradiction rate (judge)", lambda m: m.surface_contradiction_rate),
    Row("  corrected for judge error", lambda m: m.surface_contradiction_rate_corrected,
        lambda m: m.surface_contradiction_rate_corrected_ci),
    Row("  human labels it rests on", lambda m: m.surface_contradiction_rate_corrected_labels),
    Row("judge TPR, contradicts (vs human)", lambda m: m.judge_tpr_contradicts, lambda m: m.judge_tpr_contradicts_ci),
    Row("judge TNR, contradicts (vs human)", lambda m: m.judge_tnr_contradicts, lambda m: m.judge_tnr_contradicts_ci),
    Row("unclear labels (excluded)", lambda m: m.corrected_unclear),
)
"""The rows of the corrected table (terminal and HTML)."""

CORRECTED_ROWS: tuple[tuple[str, str], ...] = tuple((r.key, r.label) for r in CORRECTED)
"""(JSON key, label) of each corrected row, for the explorer."""
CORRECTED_MARKER = arm_key(lambda m: m.surface_support_rate_corrected)
"""The key whose presence marks a corrected block (`corrected_blocks`), for the explorer."""


def _column(get: Callable[[Pair], object], header: str, shown: Shown, holm: bool = False) -> PairColumn:
    """A column of the explorer's paired tables, its key read off the pair block's field (mypy checks it exists)."""
    return PairColumn(key=pair_key(get), header=header, shown=shown, holm=holm)


PAIRED_COLUMNS: tuple[PairColumn, ...] = (
    _column(lambda c: c.paired_questions, "n", "count"),
    _column(lambda c: c.accuracy_diff, "Δ accuracy", "difference"),
    _column(lambda c: c.accuracy_diff_ci, "95% interval", "interval"),
    _column(lambda c: c.accuracy_diff_p, "p", "p-value"),
    _column(lambda c: c.p_holm, "p Holm", "p-value", holm=True),
    _column(lambda c: c.accuracy_test, "test", "test"),
    _column(lambda c: c.surface_support_rate_diff, "Δ surface support", "difference"),
    _column(lambda c: c.surface_support_rate_diff_ci, "95% interval", "interval"),
    _column(lambda c: c.surface_support_rate_diff_p, "p", "p-value"),
    _column(lambda c: c.surface_support_rate_diff_p_holm, "p Holm", "p-value", holm=True),
)
"""The explorer's paired differences (A − B over the questions both ran), column by column."""

CORRECTED_PAIR_COLUMNS: tuple[PairColumn, ...] = (
    _column(lambda c: c.surface_support_rate_corrected_diff_questions, "n", "count"),
    _column(lambda c: c.surface_support_rate_corrected_diff, "Δ corrected", "difference"),
    _column(lambda c: c.surface_support_rate_corrected_diff_ci, "95% interval", "interval"),
    _column(lambda c: c.surface_support_rate_corrected_diff_p, "p (bootstrap)", "p-value"),
)
"""The explorer's corrected support-rate differences, column by column."""


def corrected_blocks(report: Report) -> dict[str, ArmMetrics]:
    """The blocks with a corrected support rate, by name (none without human labels)."""
    return {n: b for n, b in sorted(report.blocks.items())
            if not isinstance(b.surface_support_rate_corrected, msgspec.UnsetType)}


def corrected_pairs(report: Report) -> dict[str, Pair]:
    """The pairs with a corrected difference, by key."""
    return {k: p for k, p in sorted(report.pairs.items())
            if not isinstance(p.surface_support_rate_corrected_diff, msgspec.UnsetType)}


def corrected_table(report: Report, console: Console) -> None:
    """The judge's snippet rates next to the rates corrected by the human audit labels (only when there are any)."""
    fixed = corrected_blocks(report)
    if not fixed:
        return
    ct = Table(title="corrected for judge error (docs/concepts/statistics.md: stratified by judge value, weighted by the audit design)",
               title_justify="left")
    ct.add_column("metric")
    for name in fixed:
        ct.add_column(name, justify="right")
    blocks = list(fixed.values())
    for row in CORRECTED:
        ct.add_row(row.label, *(fmt(row.get(b)) for b in blocks))
        if row.ci is not None and has_ci(row, blocks):
            ct.add_row("  95% interval", *(interval(row.ci(b)) for b in blocks), style="dim")
    console.print(ct)
    for n, b in fixed.items():  # a corrected figure refused: say which strata lack labels (docs/concepts/paired-and-audits.md)
        if isinstance(missing := b.corrected_missing_strata, list) and missing:
            console.print(f"{n}: not corrected where a stratum has too few clear labels: {', '.join(missing)}")
    pairs = corrected_pairs(report)
    if not pairs:
        return
    pt = Table(title="corrected surface support, A − B over the n questions with valid items on both sides",
               title_justify="left")
    for col in ("pair", "n", "human labels A / B", "Δ corrected", "95% interval", "p (bootstrap)"):
        pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=col == "pair")
    for pair, c in pairs.items():
        labels = c.surface_support_rate_corrected_diff_labels
        side_a, side_b = labels if isinstance(labels, list) else (None, None)
        pt.add_row(pair, fmt(c.surface_support_rate_corrected_diff_questions), f"{fmt(side_a)} / {fmt(side_b)}",
                   fmt(c.surface_support_rate_corrected_diff), interval(c.surface_support_rate_corrected_diff_ci),
                   p_value(c.surface_support_rate_corrected_diff_p))
    console.print(pt)
