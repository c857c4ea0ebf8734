"""The terminal form of the report: one column per provider, or per arm of `--by` (rich), then complementarity and
custom metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

from searchtrace.analytics._report import Report

ROWS: tuple[tuple[str, str], ...] = (
    ("trajectories", "trajectories"),
    ("audited", "audited"),
    ("correct", "correct"),
    ("accuracy", "accuracy"),
    ("exact_match", "exact match"),
    ("token_f1", "token F1"),
    ("searches_per_trajectory", "searches / trajectory"),
    ("fetches_per_trajectory", "fetches / trajectory"),
    ("distinct_domains_per_trajectory", "distinct domains / trajectory"),
    ("input_tokens_per_trajectory", "input tokens / trajectory"),
    ("output_tokens_per_trajectory", "output tokens / trajectory"),
    ("reasoning_tokens_per_trajectory", "reasoning tokens / trajectory"),
    ("page_tokens_per_trajectory", "fetched-page tokens / trajectory"),
    ("search_provider_ms_median", "search ms, median (provider)"),
    ("search_provider_ms_p90", "search ms, p90 (provider)"),
    ("fetch_provider_ms_median", "fetch ms, median (provider)"),
    ("fetch_provider_ms_p90", "fetch ms, p90 (provider)"),
    ("tokens_per_correct", "tokens / correct answer"),
    ("items", "judge items"),
    ("valid_items", "valid verdicts"),
    ("invalid_items", "invalid verdicts (excluded)"),
    ("snippet_only_items", "snippet-only rows"),
    ("page_visible_items", "page-visible rows"),
    ("partition.SMART", "SMART (S, fetched)"),
    ("partition.MISSED", "MISSED (S, not fetched)"),
    ("partition.BLIND", "BLIND (no S, fetched)"),
    ("partition.NO-OP", "NO-OP (no S, not fetched)"),
    ("discovered_support", "discovered support"),
    ("surface_support_rate", "surface support rate"),
    ("surface_chars_mean", "surface chars / result (mean)"),
    ("surface_chars_median", "surface chars / result (median)"),
    ("surface_answerable_queries", "surface-answerable queries"),
    ("gold_rank1_share", "gold rank-1 share"),
    ("contradiction_gold_ratio", "contradiction / gold-URL ratio"),
    ("search_usd", "USD search"),
    ("fetch_usd", "USD fetch"),
    ("agent_model_usd", "USD agent model"),
    ("judge_model_usd", "USD judge model"),
    ("judge_model_batch_usd", "  of which batched"),
    ("usd_per_trajectory", "USD / trajectory"),
    ("usd_per_correct", "USD / correct answer"),
)


# docs/how-to/compare.md: in a report by another axis, what each arm holds (lists of names), above ROWS
ARM_ROWS: tuple[tuple[str, str], ...] = (("runs", "runs"), ("search_providers", "search providers"))


def fmt_names(value: Any) -> str:
    """An arm's list of names in one cell."""
    return ", ".join(str(v) for v in value) if isinstance(value, list) else fmt(value)


def axis_title(report: Report) -> str:
    """What a report by another axis than providers adds to a title (docs/how-to/compare.md: the heading names the axis)."""
    return "" if report.axis == "provider" else f" · arms by {report.axis}"


_LABEL_WIDTH = 36  # the metric column and the table's borders
_CELL_WIDTH = 12  # one provider column ("12,345.6" plus padding)


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


def fmt_usd(value: Any) -> str:
    """Dollars with four significant digits (small per-call costs stay visible)."""
    return "–" if value is None else f"${value:,.4g}" if abs(value) < 1000 else f"${value:,.0f}"


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


def interval(ci: Any) -> str:
    """`0.170–0.340`: a 95% interval in one short cell ("–" when there is none, "∞" for an unbounded end)."""
    if not isinstance(ci, list) or len(ci) != 2:
        return "–"
    lo, hi = float(ci[0]), ("∞" if ci[1] is None else short(float(ci[1])))
    return f"[{short(lo)}, {hi}]" if lo < 0 else f"{short(lo)}–{hi}"


def p_value(p: Any) -> str:
    return "–" if p is None else f"{p:.3g}"


TESTS = {"mcnemar_exact": "McNemar", "sign_flip_exact_dp": "sign-flip", "sign_flip_dp_grid": "sign-flip (grid)",
         "mover_inverted": "score (inverted)"}


def is_cost(key: str) -> bool:
    """A USD row of ROWS: shown only when the report was priced (`prices_as_of`)."""
    return key.endswith("_usd") or key.startswith("usd_")


def lookup(block: Mapping[str, Any], key: str) -> Any:
    """A report value by its ROWS key (`partition.SMART` reaches into the partition)."""
    value: Any = block
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def batch_line(report: Report) -> str | None:
    """The judge run's model batches in one line (docs/how-to/batch.md), or None when it submitted none."""
    b = report.judge_batches
    if not isinstance(b, dict):
        return None
    line = (f"judge batches: {b['batches']:,} ({b['live']:,} live), {b['items']:,} items sent "
            f"({b['submitted']:,} sends, {b['resubmitted']:,} resubmitted); results: {b['succeeded']:,} succeeded, "
            f"{b['errored']:,} errored, {b['expired']:,} expired, {b['canceled']:,} canceled; "
            f"{b['online']:,} judged online by fallback, {b['left']:,} left unjudged")
    return line + (f", {b['pending']:,} pending" if b["pending"] else "")


def render_table(report: Report, console: Console) -> None:
    """Print the report as tables (numbers only; `--json` is the contract)."""
    providers = report.blocks
    names = sorted(providers)
    if not names:
        console.print("no trajectories in this database yet (record, demo or import some)")
        return
    title = f"searchtrace report · judge run {report.judge_run_id or '(none)'}{axis_title(report)}"
    if u := report.uncertainty:
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
            for key, label in ARM_ROWS:
                table.add_row(label, *(fmt_names(providers[n].get(key)) for n in part))
        for key, label in ROWS:
            if is_cost(key):
                if isinstance(report.prices_as_of, msgspec.UnsetType):
                    continue
                label += f" (prices {report.prices_as_of})" if key == "search_usd" else ""
            show = fmt_usd if is_cost(key) else fmt
            table.add_row(label, *(show(lookup(providers[n], key)) for n in part))
            if any(f"{key}_ci" in providers[n] for n in part):  # the interval on its own row, just below
                table.add_row("  95% interval", *(interval(providers[n].get(f"{key}_ci")) for n in part), style="dim")
        for metric, values in sorted((report.custom or {}).items()):
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
            ct.add_row(
                pair, *(fmt(c[k]) for k in ("a_only", "b_only", "both", "neither", "url_jaccard"))
            )
        console.print(ct)
    comp = report.paired or {}
    paired = [p for p in sorted(comp) if "accuracy_diff" in comp[p]]
    if paired:
        holm = any("p_holm" in comp[p] for p in paired)
        tests = [sum(comp[p].get(k) is not None for p in paired) for k in ("p_holm", "surface_support_rate_diff_p_holm")]
        title = "paired differences A − B, per question (n: questions audited on both sides)"
        if holm:
            title += f"; Holm over the {tests[0]} accuracy and {tests[1]} surface-support tests shown"
        pt = Table(title=title, title_justify="left")
        cols = ["pair", "n", "Δ accuracy", "p", *(["p Holm"] if holm else []), "Δ surface support", "p",
                *(["p Holm"] if holm else [])]
        for col in cols:
            pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=col == "pair")
        for pair in paired:
            c = comp[pair]
            acc = [fmt(c.get("accuracy_diff")), p_value(c.get("accuracy_diff_p")),
                   *([p_value(c.get("p_holm"))] if holm else [])]
            ssr = [fmt(c.get("surface_support_rate_diff")), p_value(c.get("surface_support_rate_diff_p")),
                   *([p_value(c.get("surface_support_rate_diff_p_holm"))] if holm else [])]
            pt.add_row(pair, fmt(c.get("paired_questions")), *acc, *ssr)
            pad = [""] if holm else []
            pt.add_row("  95% interval", "", interval(c.get("accuracy_diff_ci")),
                       TESTS.get(str(c.get("accuracy_test")), ""), *pad,
                       interval(c.get("surface_support_rate_diff_ci")),
                       TESTS.get(str(c.get("surface_support_rate_test")), ""), *pad, style="dim")
        console.print(pt)
    corrected_table(report, console)


# docs/concepts/statistics.md judge-error correction: (report key, label); each corrected rate is followed by its human-label count
CORRECTED_ROWS: tuple[tuple[str, str], ...] = (
    ("surface_support_rate", "surface support rate (judge)"),
    ("surface_support_rate_corrected", "  corrected for judge error"),
    ("surface_support_rate_corrected_labels", "  human labels it rests on"),
    ("judge_tpr", "judge TPR, supports (vs human)"),
    ("judge_tnr", "judge TNR, supports (vs human)"),
    ("surface_contradiction_rate", "surface contradiction rate (judge)"),
    ("surface_contradiction_rate_corrected", "  corrected for judge error"),
    ("surface_contradiction_rate_corrected_labels", "  human labels it rests on"),
    ("judge_tpr_contradicts", "judge TPR, contradicts (vs human)"),
    ("judge_tnr_contradicts", "judge TNR, contradicts (vs human)"),
    ("corrected_unclear", "unclear labels (excluded)"),
)


def corrected_table(report: Report, console: Console) -> None:
    """The judge's snippet rates next to the rates corrected by the human audit labels (only when there are any)."""
    providers = report.blocks
    names = [n for n in sorted(providers) if "surface_support_rate_corrected" in providers[n]]
    if not names:
        return
    ct = Table(title="corrected for judge error (docs/concepts/statistics.md: stratified by judge value, weighted by the audit design)",
               title_justify="left")
    ct.add_column("metric")
    for name in names:
        ct.add_column(name, justify="right")
    for key, label in CORRECTED_ROWS:
        ct.add_row(label, *(fmt(providers[n].get(key)) for n in names))
        if any(f"{key}_ci" in providers[n] for n in names):
            ct.add_row("  95% interval", *(interval(providers[n].get(f"{key}_ci")) for n in names), style="dim")
    console.print(ct)
    for n in names:  # a corrected figure refused: say which strata lack labels (docs/concepts/paired-and-audits.md)
        if missing := providers[n].get("corrected_missing_strata"):
            console.print(f"{n}: not corrected where a stratum has too few clear labels: {', '.join(missing)}")
    comp = report.paired or {}
    pairs = [p for p in sorted(comp) if "surface_support_rate_corrected_diff" in comp[p]]
    if not pairs:
        return
    pt = Table(title="corrected surface support, A − B over the n questions with valid items on both sides",
               title_justify="left")
    for col in ("pair", "n", "human labels A / B", "Δ corrected", "95% interval", "p (bootstrap)"):
        pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=col == "pair")
    for pair in pairs:
        c = comp[pair]
        p = c.get("surface_support_rate_corrected_diff_p")
        labels = c.get("surface_support_rate_corrected_diff_labels") or [None, None]
        pt.add_row(pair, fmt(c.get("surface_support_rate_corrected_diff_questions")), f"{fmt(labels[0])} / {fmt(labels[1])}",
                   fmt(c.get("surface_support_rate_corrected_diff")),
                   interval(c.get("surface_support_rate_corrected_diff_ci")), "–" if p is None else f"{p:.3g}")
    console.print(pt)
