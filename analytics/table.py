"""The terminal form of the report: one column per provider (rich), then complementarity and custom metrics."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

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
    ("latency_ms_per_trajectory", "latency ms / trajectory"),
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
)


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


def _get(block: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(block, dict):
            return None
        block = block.get(part)  # type: ignore[assignment]
    return block


def render_table(report: dict[str, Any], console: Console) -> None:
    """Print the report as tables (numbers only; `--json` is the contract)."""
    providers: dict[str, dict[str, Any]] = report["providers"]
    names = sorted(providers)
    if not names:
        console.print("no trajectories in this database yet (record, demo or import some)")
        return
    title = f"searchtrace report · judge run {report.get('judge_run_id') or '(none)'}"
    per = max(1, (console.width - _LABEL_WIDTH) // _CELL_WIDTH)  # many providers: several tables that fit the width
    for start in range(0, len(names), per):
        part = names[start : start + per]
        more = f" (providers {start + 1}–{start + len(part)} of {len(names)})" if len(names) > per else ""
        table = Table(title=title + more, title_justify="left")
        table.add_column("metric")
        for name in part:
            table.add_column(name, justify="right")
        for key, label in ROWS:
            table.add_row(label, *(fmt(_get(providers[n], key)) for n in part))
        for metric, values in sorted((report.get("custom") or {}).items()):
            table.add_row(f"custom: {metric}", *(fmt(values.get(n)) for n in part))
        console.print(table)
    comp = report.get("complementarity") or {}
    if comp:
        ct = Table(title="complementarity (questions both providers ran)", title_justify="left")
        for col in ("pair", "A only", "B only", "both", "neither", "url Jaccard"):
            ct.add_column(col, justify="left" if col == "pair" else "right")
        for pair in sorted(comp):
            c = comp[pair]
            ct.add_row(
                pair, *(fmt(c[k]) for k in ("a_only", "b_only", "both", "neither", "url_jaccard"))
            )
        console.print(ct)
