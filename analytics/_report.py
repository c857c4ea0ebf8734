"""The report of docs/reference/report.md: which judge run, every provider's metrics, complementarity, custom metrics; JSON text.

Keys beyond the §8 contract, per provider: `reasoning_tokens_per_trajectory`, `page_tokens_per_trajectory`
(fetch.completed n_tokens), `latency_ms_per_trajectory` (model + search + fetch latencies),
`distinct_domains_per_trajectory`, `tokens_per_correct` ((input + output) / correct, null without a correct
answer), `surface_supported_items` and `surface_contradicted_items` (the ratios' numerators), and
`query_outcome` ({answerable, not_answerable} x {correct, incorrect, unaudited} trajectories),
`surface_chars_mean` / `surface_chars_median` (docs/how-to/providers.md: characters of surface per search result),
`search_provider_ms_median|p90` and `fetch_provider_ms_median|p90` (docs/reference/prices.md, analytics._latency: provider time
of successful calls only; `latency_ms_per_trajectory` above is wall time, our own queueing and backoff included),
`search_failed_calls` / `fetch_failed_calls` and `fetch_cache_hits` (docs/concepts/statistics.md: the calls those leave out; cache
hits are priced as fetches), `results_returned`,
`results_shown` and `shown_share` (docs/concepts/shown.md, analytics._shown: search results a later model request contained).
When the judge run has human snippet labels (docs/concepts/statistics.md, analytics._correction): `surface_support_rate_corrected`,
`surface_contradiction_rate` and `surface_contradiction_rate_corrected` (each `_corrected` with `_labels`, the clear
human labels it rests on), `judge_tpr` / `judge_tnr` (and `_contradicts`), `corrected_labels`, `corrected_unclear`,
`corrected_unaudited_strata`, with `_ci` / `_ci_undefined` under a bootstrap; per pair in `paired`:
`surface_support_rate_corrected_diff` (with `_labels`, `_questions`: every question both arms ran, and `_ci`,
`_ci_undefined`, `_p` under a bootstrap). At the
top: `custom` ({metric file stem: {provider: value}}) when `--metric` is given, and `judge_batches`
(analytics._batches: the judge run's model batches, null when it submitted none).

docs/how-to/compare.md, `by` other than provider (analytics._arms): the same blocks per arm under `arms` (keyed by arm value; each
also names its `runs` and `search_providers`), `by` at the top, `providers` empty; `complementarity` and `paired`
pair the arms, keyed "<A>|<B>" by arm value. Costs price each search by its provider's name, whatever the arm; the
judge-error correction stratifies each arm's cases by judge value.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction

import msgspec

import searchtrace.analytics._sources as sources
from searchtrace.analytics._arms import arms
from searchtrace.analytics._backfill import backfill_metrics
from searchtrace.analytics._batches import judge_batches
from searchtrace.analytics._citations import citation_metrics
from searchtrace.analytics._correction import METHODS as CORRECTION_METHODS
from searchtrace.analytics._correction import JudgedCase, correction, labelled_cases, report_cases
from searchtrace.analytics._cost import recorded_prices, report_costs, warning_line
from searchtrace.analytics._defaults import DEFAULT_SEED
from searchtrace.analytics._latency import provider_latency
from searchtrace.analytics._metrics import (
    TrajectoryStats,
    answer_scores,
    complementarity,
    provider_metrics,
    trajectory_stats,
)
from searchtrace.analytics._model import Report, Uncertainty
from searchtrace.analytics._rules import arm_axis, choose_judge_run, resolve_judge_run, unapplied_audits_note
from searchtrace.analytics._shown import assumed_note, provider_shown
from searchtrace.analytics._surface import surface_sizes
from searchtrace.analytics._views import ensure_views
from searchtrace.engine import Prices
from searchtrace.store import Cursor

__all__ = ["SCHEMA", "Built", "Report", "Uncertainty", "build_report", "correction_labels", "to_json"]

SCHEMA = Report().schema


class Built(msgspec.Struct, kw_only=True):
    """A report and the one-line remarks for its reader: judge runs passed over, partial judge coverage, prices
    missing (they go to stderr, never into the JSON)."""

    report: Report
    notes: list[str] = []


def correction_labels(con: Cursor, *, judge_run_id: str | None = None, run_ids: Sequence[str] = (),
                      by: str = "provider") -> list[JudgedCase]:
    """The human-labelled cases behind the label counts of the report's judge-error correction (analytics
    `counted_in`), read over the report's runs and arms (read-only, as `build_report(writable=False)` reads)."""
    arm_axis(by)
    with sources.reading(con, writable=False), arms(con, by, run_ids):
        run, _ = resolve_judge_run(con, judge_run_id)
        return [] if run is None else labelled_cases(con, run)


def build_report(
    con: Cursor,
    *,
    judge_run_id: str | None = None,
    writable: bool = True,
    bootstrap: int = 0,
    seed: str = DEFAULT_SEED,
    prices: Prices | None = None,
    run_ids: Sequence[str] = (),
    by: str = "provider",
) -> Built:
    """The §8 report (keys beyond the contract: extra provider keys) and its notes.

    `bootstrap` B > 0 adds docs/concepts/statistics.md intervals (`<metric>_ci` with `_n_eff` or `_ci_undefined`, `accuracy_wilson`
    per provider), the paired tests (`paired`, keyed like `complementarity`) and `uncertainty` (B, seed, methods),
    from B replicates drawn from `seed`.
    `prices` (else the `[prices]` a run config recorded, else none) adds docs/reference/prices.md cost keys (analytics._cost)
    per provider and `prices_as_of` / `prices_unpriced` at the top; what had no price is named in the notes.
    `writable`: the connection may write derived tables (catch the projections up, install the `v_*` views
    for `searchtrace sql`); without it everything is computed from views over the raw events.
    `run_ids`: the runs to report (analytics._rules.resolve_runs: required when the store holds several).
    `by`: the arm axis of docs/how-to/compare.md (`provider`, `run`, `model`, `prompt`, `config:<dotted.key>`).
    """
    arm_axis(by)  # a bad --by is one line before anything is read or written
    if writable:
        ensure_views(con)
    with sources.reading(con, writable=writable), arms(con, by, run_ids):  # every read below: these runs, these arms
        choice = choose_judge_run(con, judge_run_id)
        run, passed_over = choice.judge_run_id, list(choice.notes)
        rows = trajectory_stats(con, run)
        by_arm: dict[str, list[TrajectoryStats]] = defaultdict(list)
        for r in rows:
            by_arm[r.arm].append(r)
        scores = {name: answer_scores(r) for name, r in by_arm.items()}
        blocks = {name: provider_metrics(by_arm[name], scores[name]) for name in sorted(by_arm)}
        pairs = complementarity(con, rows)
        surface_sizes(con, blocks)
        provider_latency(con, blocks)
        assumed = provider_shown(con, blocks)
        citation_metrics(con, run, blocks)  # docs/how-to/hosted.md: nothing unless some answer cites
        backfill_metrics(con, run, blocks)  # docs/how-to/hosted.md: nothing unless the judge run backfilled
        unapplied = unapplied_audits_note(con)
        labelled = None if run is None else report_cases(con, run, rows)
        batches = judge_batches(con, run)
        prices = prices or recorded_prices(con)
        usd: dict[str, dict[str, Fraction]] | None = None
        if prices is not None:
            # with intervals, usd_per_correct's: each question's USD (an arm with a null cost has none)
            unpriced, usd = report_costs(con, prices, run, blocks, per_question=bootstrap > 0)
    report = Report(judge_run_id=run, complementarity=pairs, judge_run_chosen_by=choice.how, judge_batches=batches)
    if by == "provider":
        report.providers = blocks
    else:  # docs/how-to/compare.md: the arms, each naming the runs and search providers it holds
        for name, block in blocks.items():
            block.runs = sorted({r.run_id for r in by_arm[name]})
            block.search_providers = sorted({r.provider for r in by_arm[name]})
        report.by, report.arms = by, blocks
    notes: list[str] = []
    if prices is not None:
        report.prices_as_of = prices.as_of
        report.prices_unpriced = unpriced
        if line := warning_line(unpriced):
            notes.append(line)
    if bootstrap > 0 and by_arm:
        from searchtrace.analytics._uncertainty import LEVEL, methods, uncertainty

        report.paired = uncertainty(dict(by_arm), blocks, replicates=bootstrap, seed=seed, scores=scores, usd=usd)
        report.uncertainty = Uncertainty(bootstrap=bootstrap, seed=seed, level=LEVEL, unit="question",
                                         methods=methods(blocks, report.paired))
    if labelled is not None:  # docs/concepts/statistics.md: the judge's rates corrected by the human audit labels
        paired = report.pairs
        correction(labelled.cases, labelled.valid, blocks, paired, replicates=bootstrap, seed=seed,
                   min_labels=labelled.min_labels)
        if paired:
            report.paired = paired
        if not isinstance(report.uncertainty, msgspec.UnsetType) and bootstrap > 0:  # the corrected intervals' method
            present = {k for b in (*blocks.values(), *report.pairs.values()) for k in msgspec.to_builtins(b)}
            report.uncertainty.methods.update({k: v for k, v in CORRECTION_METHODS.items() if k in present})
        notes.extend(labelled.notes)
    notes.extend(passed_over)
    if unapplied:
        notes.append(unapplied)
    items, judged = sum(r.items for r in rows), sum(r.valid + r.invalid for r in rows)
    if run is not None and judged < items:
        notes.append(f"judge run {run}: {judged} of {items} items have a verdict")
    if assumed:
        notes.append(assumed_note(assumed))
    return Built(report=report, notes=notes)


def to_json(report: Report) -> str:
    """Canonical text: keys sorted, indent 1, trailing newline (byte-identical for the same events)."""
    return json.dumps(report.to_builtins(), indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
