"""Agreement between two label sources (docs/concepts/statistics.md): Cohen's kappa on a 2x2 table, and two judge runs compared.

A 2x2 table is (both true, A true / B false, A false / B true, both false). Kappa = (p_o - p_e) / (1 - p_e) with
p_o the observed agreement and p_e the agreement expected from the two marginals; computed in exact fractions,
null when there is no case or when p_e = 1 (both sources constant and equal: agreement by chance alone).
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import searchtrace.analytics._sources as sources
from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._lookups import HasCursor, known_judge_runs, providers, verdicts
from searchtrace.analytics._model import (
    Disagreement,
    JudgeComparison,
    LabelAgreement,
    LabelValues,
    Partition,
    ProviderComparison,
    SideRates,
    Table2x2,
    VerdictLabels,
)
from searchtrace.analytics._rules import first_verdicts, partition_cell, surface_support
from searchtrace.store import BadInput, Labels, Verdict

Table2 = tuple[int, int, int, int]  # (tt, tf, ft, ff): A's value first
Weighted2 = tuple[Fraction, Fraction, Fraction, Fraction]  # the same table of weighted counts (a design's N_h/n_h)
COMPARED: tuple[tuple[str, str], ...] = (
    ("snippet", "supports_gold"),
    ("snippet", "contradicts_gold"),
    ("snippet", "relevant"),
    ("page", "supports_gold"),  # only where both verdicts have page labels
)


def cohen_kappa(table: Table2 | Weighted2) -> float | None:
    """Cohen's kappa of a 2x2 table of counts or of weights; None without cases or when chance agreement is 1."""
    tt, tf, ft, ff = (Fraction(x) for x in table)
    n = tt + tf + ft + ff
    if n == 0:
        return None
    p_o = (tt + ff) / n
    a_true, b_true = (tt + tf) / n, (tt + ft) / n
    p_e = a_true * b_true + (1 - a_true) * (1 - b_true)
    if p_e == 1:
        return None
    return float((p_o - p_e) / (1 - p_e))


def table_summary(table: Table2) -> LabelAgreement:
    """n, agreement, kappa and the table itself, as the JSON of `judge compare` shows them."""
    tt, tf, ft, ff = table
    n = sum(table)
    return LabelAgreement(n=n, agreement=float(Fraction(tt + ff, n)) if n else None, kappa=cohen_kappa(table),
                          table=Table2x2(a_true_b_true=tt, a_true_b_false=tf, a_false_b_true=ft, a_false_b_false=ff))


def _labels(v: Verdict, surface: str) -> Labels | None:
    return v.snippet if surface == "snippet" else v.page


def _as_labels(v: Verdict) -> VerdictLabels:
    def one(x: Labels | None) -> LabelValues | None:
        return None if x is None else LabelValues(supports_gold=x.supports_gold, contradicts_gold=x.contradicts_gold,
                                                  relevant=x.relevant)

    return VerdictLabels(snippet=one(v.snippet), page=one(v.page))


COMMON_ITEMS_SQL = f"""
WITH it AS ({ITEMS_SQL}), va AS ({first_verdicts("$a")}), vb AS ({first_verdicts("$b")})
SELECT it.provider,
       {partition_cell(surface_support("va", "it"), "it.fetched", "it.snippet_observed")} AS cell_a,
       {partition_cell(surface_support("vb", "it"), "it.fetched", "it.snippet_observed")} AS cell_b,
       {surface_support("va", "it")} AS s_a, {surface_support("vb", "it")} AS s_b
FROM it
JOIN va ON va.trajectory_id = it.trajectory_id AND va.url_normalized = it.url_normalized
JOIN vb ON vb.trajectory_id = it.trajectory_id AND vb.url_normalized = it.url_normalized
WHERE va.valid AND vb.valid"""
"""Every judge item of a current trajectory with a valid verdict in both judge runs `$a` and `$b` (each its first
verdict, as the report counts it): its provider, its partition cell and surface support S under each run."""


def _rates_on_common_items(source: HasCursor, run_a: str, run_b: str, names: list[str]
                           ) -> dict[str, ProviderComparison]:
    """Per provider: the items valid in both runs, and the partition and surface support rate under A and under B
    over exactly those items, with the report's rules (analytics._rules)."""
    cur = source.cursor()
    try:
        with sources.reading(cur, writable=False):
            rows = cur.execute(COMMON_ITEMS_SQL, {"a": run_a, "b": run_b}).fetchall()
    finally:
        cur.close()
    parts: dict[str, tuple[Counter[str], Counter[str]]] = {name: (Counter(), Counter()) for name in names}
    supported = {name: [0, 0] for name in names}
    items = dict.fromkeys(names, 0)
    for provider, cell_a, cell_b, s_a, s_b in rows:
        parts[provider][0][cell_a] += 1
        parts[provider][1][cell_b] += 1
        supported[provider][0] += bool(s_a)
        supported[provider][1] += bool(s_b)
        items[provider] += 1

    def side(name: str, i: int) -> SideRates:
        return SideRates(partition=Partition.from_counts(parts[name][i]),
                         surface_support_rate=supported[name][i] / items[name] if items[name] else None)

    return {name: ProviderComparison(items_valid_in_both=items[name], a=side(name, 0), b=side(name, 1))
            for name in names}


def compare_judge_runs(source: HasCursor, run_a: str, run_b: str) -> JudgeComparison:
    """docs/concepts/statistics.md `judge compare A B`: per label n / agreement / kappa / 2x2 table over the items with a valid verdict
    in both runs; each provider's partition and surface support rate under A and under B over those same items
    (docs/concepts/statistics.md: a rate from each run's own valid items would differ where the runs agree); every disagreeing item."""
    known = known_judge_runs(source)
    for run in (run_a, run_b):
        if run not in known:
            raise BadInput(f"judge run {run!r} not found in the database (known: {', '.join(sorted(known)) or 'none'})")
    provider_of = providers(source)
    va, vb = verdicts(source, run_a), verdicts(source, run_b)
    tables: dict[str, list[int]] = {f"{s}.{lab}": [0, 0, 0, 0] for s, lab in COMPARED}
    disagreements: list[Disagreement] = []
    both = 0
    for key in sorted(va.keys() & vb.keys()):
        a, b = va[key], vb[key]
        tid, url = key
        if tid not in provider_of or not (a.valid and b.valid) or a.labels is None or b.labels is None:
            continue
        both += 1
        differs = []
        for surface, label in COMPARED:
            la, lb = _labels(a.labels, surface), _labels(b.labels, surface)
            if la is None or lb is None:
                continue
            x, y = bool(getattr(la, label)), bool(getattr(lb, label))
            tables[f"{surface}.{label}"][(0 if x else 2) + (0 if y else 1)] += 1
            if x != y:
                differs.append(f"{surface}.{label}")
        if differs:
            disagreements.append(Disagreement(
                trajectory_id=tid, url=url, provider=provider_of[tid], differs=differs,
                a=_as_labels(a.labels), b=_as_labels(b.labels),
                a_rationale=a.labels.rationale, b_rationale=b.labels.rationale,
            ))
    per_provider = _rates_on_common_items(source, run_a, run_b, sorted(set(provider_of.values())))
    return JudgeComparison(a=run_a, b=run_b, items_valid_in_both=both,
                           labels={name: table_summary((t[0], t[1], t[2], t[3])) for name, t in tables.items()},
                           providers=per_provider, disagreements=disagreements)
