"""docs/concepts/statistics.md intervals and tests against independent computations (closed forms, hand-made tables, enumeration)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from searchtrace.analytics._metrics import TrajectoryStats, provider_metrics
from searchtrace.analytics._uncertainty import (
    BOOTSTRAPPED,
    PROPORTIONS,
    RATIO_OF_PROPORTIONS,
    RATIOS,
    beta_binomial_interval,
    effective_n,
    holm,
    mcnemar_exact,
    proportion_interval,
    score_interval,
    sign_flip,
    tango_interval,
)
from tests.analytics.analytics_fixture import import_fixture, intervals, report_json

Z = 1.959964
ZERO = ("searches fetches input_tokens output_tokens reasoning_tokens page_tokens latency_us domains items valid invalid "
        "snippet_only page_visible smart missed blind noop discovered supported contradicted supported_appearances "
        "supported_rank1").split()


def row(provider: str, qid: str, match: bool | None, epoch: int = 1, **kw: int) -> TrajectoryStats:
    vals: dict[str, Any] = dict.fromkeys(ZERO, 0) | kw
    return TrajectoryStats(stream_id=f"{provider}{qid}{epoch}", trajectory_id=f"{provider}:{qid}~{epoch}",
                           provider=provider, qid=qid, epoch=epoch, gold_answer="paris",
                           final_answer="paris" if match else "rome", semantic_match=match, **vals)


def wilson_closed(x: int, n: int) -> tuple[float, float]:
    """The other textbook form: (x + z²/2 ± z·sqrt(x(n−x)/n + z²/4)) / (n + z²)."""
    root = Z * math.sqrt(x * (n - x) / n + Z * Z / 4)
    return (x + Z * Z / 2 - root) / (n + Z * Z), (x + Z * Z / 2 + root) / (n + Z * Z)


@pytest.mark.parametrize(("x", "n"), [(25, 100), (26, 100), (1, 3), (7, 7), (0, 12)])
def test_plain_score_interval_matches_the_closed_form(x: int, n: int) -> None:
    lo, hi = wilson_closed(x, n)
    got = score_interval(x / n, n, corrected=False)
    assert math.isclose(got[0], lo, rel_tol=1e-12, abs_tol=1e-15) and math.isclose(got[1], hi, rel_tol=1e-12)


@pytest.mark.parametrize(("x", "n"), [(25, 100), (1, 30), (29, 30), (3, 7), (0, 12), (12, 12), (1, 2)])
def test_corrected_interval_inverts_the_corrected_score_test(x: int, n: int) -> None:
    # each end is where the continuity-corrected score statistic reaches z: |x − n·π| − ½ = z·sqrt(n·π(1 − π))
    lo, hi = score_interval(x / n, n)
    if x == 0:
        assert lo == 0.0
    else:
        assert math.isclose(x - n * lo - 0.5, Z * math.sqrt(n * lo * (1 - lo)), rel_tol=1e-9)
    if x == n:
        assert hi == 1.0
    else:
        assert math.isclose(n * hi - x - 0.5, Z * math.sqrt(n * hi * (1 - hi)), rel_tol=1e-9)
    plain = score_interval(x / n, n, corrected=False)
    assert lo <= plain[0] and plain[1] <= hi  # the correction only widens


@pytest.mark.parametrize(("x", "n"), [(1, 2), (1, 3), (5, 30), (29, 30), (17, 100), (50, 100)])
def test_one_epoch_complete_audit_has_effective_n_exactly_n_minus_1(x: int, n: int) -> None:
    # mᵢ = 1, yᵢ ∈ {0, 1}: Σ(yᵢ − p̂)² = n·p̂(1 − p̂), so v̂ = p̂(1 − p̂)/(n − 1) and n_eff = n − 1
    y = [1] * x + [0] * (n - x)
    assert effective_n(y, [1] * n) == n - 1
    ci, n_eff = proportion_interval(y, [1] * n)
    assert n_eff == n - 1 and ci == score_interval(x / n, n - 1)


def test_effective_n_by_hand() -> None:
    # y = (2, 0, 1), m = (2, 1, 3): p̂ = 1/2, yᵢ − p̂mᵢ = (1, −½, −½), v̂ = 3/2 · (3/2) / 36 = 1/16, n_eff = ¼ / (1/16)
    assert effective_n([2, 0, 1], [2, 1, 3]) == 4
    # (0, 0, 1) of (1, 1, 2): 1·3·16·2 / (3·6) = 16/3 > Σm = 4, capped
    assert effective_n([0, 0, 1], [1, 1, 2]) == 4
    # v̂ = 0: n (p̂ at an edge, or every question at p̂), whatever Σm; one question: 1; questions with m = 0 ignored
    assert effective_n([0, 0, 0], [2, 3, 1]) == 3 and effective_n([4, 4], [4, 4]) == 2
    assert effective_n([1, 2, 0], [2, 4, 0]) == 2 and effective_n([1], [3]) == 1
    assert effective_n([0, 0], [0, 0]) is None and proportion_interval([0], [0]) == (None, None)


def test_identical_epochs_add_no_information() -> None:
    pattern = [True] * 7 + [False] * 13
    # (n_eff is capped at Σm, which k copies multiply: these data stay below the cap, as 0/1 answers always do)
    one = {"a": [row("a", f"q{i}", x, valid=3, supported=3 * x) for i, x in enumerate(pattern)]}
    three = {"a": [row("a", f"q{i}", x, e, valid=3, supported=3 * x)
                   for i, x in enumerate(pattern) for e in (1, 2, 3)]}
    a, _ = intervals(one, replicates=50, seed="s")
    b, _ = intervals(three, replicates=50, seed="s")
    for key in PROPORTIONS:
        assert a["a"][f"{key}_ci"] == b["a"][f"{key}_ci"], key  # bit for bit: n_eff is an exact Fraction
        assert a["a"][f"{key}_n_eff"] == b["a"][f"{key}_n_eff"], key
    assert a["a"]["accuracy_n_eff"] == 19.0 and a["a"]["accuracy_wilson"] == a["a"]["accuracy_ci"]


def test_no_zero_width_proportion_interval() -> None:
    for y, m in (([0] * 5, [1] * 5), ([3] * 4, [3] * 4), ([1], [1]), ([0], [4]), ([1, 1], [2, 2])):
        ci, _ = proportion_interval(y, m)
        assert ci is not None and ci[0] < ci[1], (y, m)
    prov, _ = intervals({"a": [row("a", f"q{i}", True) for i in range(15)]}, replicates=50, seed="s")
    lo, hi = prov["a"]["accuracy_ci"]
    assert hi == 1.0 and lo == score_interval(1.0, 15)[0] and lo < 1.0  # 15/15 is not [1, 1]


def _scipy_beta_binomial_interval(y: list[int], m: list[int]) -> tuple[float, float]:
    """The profile-likelihood interval by scipy's beta-binomial pmf, optimiser and root finder (log s in [−10, 14])."""
    from scipy.optimize import brentq, minimize_scalar
    from scipy.stats import betabinom

    def profile(mu: float) -> float:
        def neg(t: float) -> float:
            s = math.exp(t)
            return -float(betabinom.logpmf(y, m, mu * s, (1 - mu) * s).sum())
        return -float(minimize_scalar(neg, bounds=(-10.0, 14.0), method="bounded", options={"xatol": 1e-9}).fun)

    top = minimize_scalar(lambda t: -profile(1 / (1 + math.exp(-t))), bounds=(-10.0, 10.0), method="bounded",
                          options={"xatol": 1e-9})
    best, mu_hat = -float(top.fun), 1 / (1 + math.exp(-top.x))

    def excess(mu: float) -> float:
        return 2 * (best - profile(mu)) - Z * Z
    return brentq(excess, 1e-9, mu_hat, xtol=1e-12), brentq(excess, mu_hat, 1 - 1e-9, xtol=1e-12)


def test_beta_binomial_interval_against_scipy() -> None:
    rng = np.random.default_rng(7)
    for p, n in ((0.03, 30), (0.4, 12), (0.95, 40)):
        m = (10 + rng.binomial(20, 0.5, n)).tolist()
        y = rng.binomial(m, rng.beta(4 * p, 4 * (1 - p), n)).tolist()
        got, want = beta_binomial_interval(y, m), _scipy_beta_binomial_interval(y, m)
        assert all(math.isclose(g, w, rel_tol=2e-4) for g, w in zip(got, want, strict=True)), (p, got, want)
    # every y = 0: the end at 0, and as s -> 0 each question is all or nothing, so the upper end is at least the
    # binomial likelihood-ratio bound over the 30 questions (0 of 30: 30·ln(1 − π) = −z²/2)
    lo, hi = beta_binomial_interval([0] * 30, [20] * 30)
    assert lo == 0.0 and 1 - math.exp(-Z * Z / 60) - 1e-4 <= hi < 0.07
    lo, top = beta_binomial_interval([20] * 30, [20] * 30)  # the mirror image
    assert math.isclose(lo, 1 - hi, rel_tol=1e-12) and top == 1.0


def test_clustered_proportions_widen_where_few_questions_carry_the_items() -> None:
    # 2 of 30 questions carry all the support: Wilson at n_eff sees 6 of 600 items; the beta-binomial fit sees
    # a rate spread over questions, so the interval reaches further up
    rows = [row("a", f"q{i:02d}", True, valid=20, supported=3 * (i < 2)) for i in range(30)]
    prov, _ = intervals({"a": rows}, replicates=50, seed="s")
    wilson, _ = proportion_interval([3, 3] + [0] * 28, [20] * 30)
    lo, hi = prov["a"]["surface_support_rate_ci"]
    assert wilson is not None and lo <= wilson[0] and hi > wilson[1] and lo < 0.01 < hi
    assert prov["a"]["surface_support_rate_n_eff"] == float(effective_n([3, 3] + [0] * 28, [20] * 30))
    copies = [row("a", r.qid, True, e, valid=20, supported=r.supported) for r in rows for e in (1, 2, 3)]
    three, _ = intervals({"a": copies}, replicates=50, seed="s")
    assert three["a"]["surface_support_rate_ci"] == [lo, hi]  # three identical epochs: the fit sees one


def test_mcnemar_against_the_binomial() -> None:
    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair
    assert mcnemar_exact(0, 5) == 2 / 32  # 2 · P(X ≤ 0), X ~ Bin(5, ½)
    assert mcnemar_exact(4, 1) == 2 * (1 + 5) / 32
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1
    assert mcnemar_exact(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096, rel=1e-15)


def test_paired_tables_by_hand() -> None:
    # 10 questions: both right on 4, a only on 3, b only on 1, both wrong on 2 -> McNemar on (3, 1): 2·(1+4)/16
    pattern = [(True, True)] * 4 + [(True, False)] * 3 + [(False, True)] + [(False, False)] * 2
    rows = {"a": [row("a", f"q{i}", x) for i, (x, _) in enumerate(pattern)],
            "b": [row("b", f"q{i}", y) for i, (_, y) in enumerate(pattern)]}
    _, pairs = intervals(rows, replicates=200, seed="s")
    pair = pairs["a|b"]
    assert pair["accuracy_test"] == "mcnemar_exact" and pair["discordant"] == {"a_only_correct": 3, "b_only_correct": 1}
    assert pair["accuracy_diff_p"] == 10 / 16 and pair["accuracy_diff"] == pytest.approx(0.2)
    assert "p_holm" not in pair  # one pair: nothing to adjust
    lo, hi = pair["accuracy_diff_ci"]
    assert lo <= 0.2 <= hi
    # Tango's interval at n_eff = n − 1 = 9 (one epoch a side): b = 3, c = 1 scaled by 9/10
    assert pair["accuracy_diff_n_eff"] == 9.0 and pair["accuracy_diff_ci"] == tango_interval(2.7, 0.9, 9.0)
    for both in (True, False):  # all correct / all wrong on both sides: no discordant pair, a zero difference
        same = {p: [row(p, f"q{i}", both) for i in range(8)] for p in ("a", "b")}
        prov, pairs = intervals(same, replicates=200, seed="s")
        assert pairs["a|b"]["accuracy_diff_p"] == 1.0 and pairs["a|b"]["accuracy_diff"] == 0.0
        # no discordant pair: Tango's interval is ±z²/(n + z²), never [0, 0]
        assert pairs["a|b"]["accuracy_diff_ci"] == pytest.approx([-Z * Z / (8 + Z * Z), Z * Z / (8 + Z * Z)])
        assert prov["a"]["accuracy_ci"] == score_interval(float(both), 8)  # v̂ = 0: n_eff = n
        assert prov["a"]["accuracy_wilson"] == prov["a"]["accuracy_ci"]


def test_one_estimand_with_partial_audits_and_unequal_epochs() -> None:
    # a: q0 3 epochs (2 right), q1 1 epoch right, q2 unaudited, q3 1 epoch wrong; b: 1 epoch each, q1 unaudited.
    # Paired questions (audited on both sides): q0 and q3 -> mean of (2/3 − 0, 0 − 1) = −1/6
    rows = {"a": [row("a", "q0", m, e) for e, m in ((1, True), (2, True), (3, False))]
            + [row("a", "q1", True), row("a", "q2", None), row("a", "q3", False)],
            "b": [row("b", "q0", False), row("b", "q1", None), row("b", "q2", True), row("b", "q3", True)]}
    _, pairs = intervals(rows, replicates=200, seed="s")
    pair = pairs["a|b"]
    assert pair["paired_questions"] == 2 and pair["accuracy_diff"] == float(Fraction(-1, 6))
    # sign flips of (2/3, −1) in thirds (2, −3): |±2 ± 3| ≥ 1 always -> p = 1
    assert pair["accuracy_test"] == "sign_flip_exact_dp" and pair["accuracy_diff_p"] == 1.0
    lo, hi = pair["accuracy_diff_ci"]
    assert -1.0 <= lo <= -1 / 6 <= hi <= 1.0
    # surface support: per-question rates over questions with valid items on both sides
    rows = {"a": [row("a", "q0", True, valid=4, supported=3), row("a", "q1", True, valid=2, supported=0),
                  row("a", "q2", True)],
            "b": [row("b", "q0", True, valid=1, supported=0), row("b", "q1", True, valid=5, supported=5),
                  row("b", "q2", True, valid=2, supported=2)]}
    _, pairs = intervals(rows, replicates=200, seed="s")
    pair = pairs["a|b"]
    assert pair["surface_support_rate_paired_questions"] == 2
    # one estimand: the difference of the two ratio estimates over those questions, (3 + 0)/(4 + 2) − (0 + 5)/(1 + 5)
    assert pair["surface_support_rate_diff"] == float(Fraction(3, 6) - Fraction(5, 6))
    assert pair["surface_support_rate_test"] == "mover_inverted"
    lo, hi = pair["surface_support_rate_diff_ci"]
    assert lo < -1 / 3 < hi and (pair["surface_support_rate_diff_p"] <= 0.05) == (hi < 0)


def enumerate_sign_flips(diffs: list[Fraction]) -> Fraction:
    """Full enumeration: the share of the 2^m sign vectors whose |sum| reaches the observed |sum| (exact)."""
    nz = [d for d in diffs if d != 0]
    m = len(nz)
    if m == 0:
        return Fraction(1)
    den = math.lcm(*(d.denominator for d in nz))
    vec = np.array([int(d * den) for d in nz], dtype=np.int64)
    observed = abs(int(vec.sum()))
    bits = np.arange(m, dtype=np.int64)
    hits = 0
    for start in range(0, 1 << m, 1 << 16):
        codes = np.arange(start, min(1 << m, start + (1 << 16)), dtype=np.int64)
        signs = ((codes[:, None] >> bits) & 1) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ vec) >= observed))
    return Fraction(hits, 1 << m)


def test_sign_flip_dp_equals_full_enumeration() -> None:
    assert sign_flip([Fraction(1)] * 3) == (2 / 8, "sign_flip_exact_dp")  # only ±(1,1,1) reach |3|
    assert sign_flip([Fraction(1), Fraction(-1), Fraction(0)]) == (1.0, "sign_flip_exact_dp")
    assert sign_flip([Fraction(1, 2), Fraction(1, 3)]) == (2 / 4, "sign_flip_exact_dp")  # |±1/2 ± 1/3| ≥ 5/6 twice
    assert sign_flip([]) == (1.0, "sign_flip_exact_dp")
    rng = random.Random(20)
    for m in [*range(1, 21), 20, 20]:
        diffs = [Fraction(rng.randint(-6, 6), rng.choice((1, 2, 3, 4, 6))) for _ in range(m)]
        if rng.random() < 0.5:  # a shifted batch, so that small p-values are covered too
            diffs = [d + Fraction(1, 2) for d in diffs]
        p, how = sign_flip(diffs)
        assert how == "sign_flip_exact_dp" and p == enumerate_sign_flips(diffs), diffs  # equal, not close
    # beyond enumeration: still exact (no draws), e.g. m equal differences: 2 / 2^m
    assert sign_flip([Fraction(1)] * 25) == (2 / 2**25, "sign_flip_exact_dp")
    assert sign_flip([Fraction(1, 3)] * 100) == (2.0**-99, "sign_flip_exact_dp")


def test_sign_flip_on_a_grid_when_the_dp_is_too_wide() -> None:
    diffs = [Fraction(1, 7), Fraction(-5, 9), Fraction(7, 11), Fraction(3, 13), Fraction(2, 17)]
    p, how = sign_flip(diffs)
    assert how == "sign_flip_exact_dp" and p == enumerate_sign_flips(diffs)
    p, how = sign_flip(diffs, max_cells=5 * 40)  # Σ|x| limited to 40 cells: |d| rounded to multiples of Σ|d|/40
    step = sum(abs(d) for d in diffs) / 40
    rounded = [(1 if d > 0 else -1) * math.floor(abs(d) / step + Fraction(1, 2)) for d in diffs]
    assert how == "sign_flip_dp_grid" and p == enumerate_sign_flips([Fraction(x) for x in rounded])


def test_holm_by_hand() -> None:
    # sorted 1/8, 1/4, 3/8: 3·1/8, max(3/8, 2·1/4), max(1/2, 1·3/8); None stays out of the count
    assert holm({"x": 0.125, "y": 0.375, "z": 0.25, "w": None}) == {"x": 0.375, "y": 0.5, "z": 0.5, "w": None}
    assert holm({"x": 0.6, "y": 0.7}) == {"x": 1.0, "y": 1.0}
    data = synthetic(12)
    data["s"] = [row("s", r.qid, not r.semantic_match, valid=2, supported=1) for r in data["p"]]
    _, pairs = intervals(data, replicates=100, seed="s")
    assert sorted(pairs) == ["p|r", "p|s", "r|s"]
    for metric, key in (("accuracy_diff_p", "p_holm"), ("surface_support_rate_diff_p", "surface_support_rate_diff_p_holm")):
        assert {k: v[key] for k, v in pairs.items()} == holm({k: v[metric] for k, v in pairs.items()})


def synthetic(n: int, copies: int = 1) -> dict[str, list[TrajectoryStats]]:
    """Two providers on n questions with varied facts; `copies` repeats every question under new qids."""
    rng = random.Random(7)
    out: dict[str, list[TrajectoryStats]] = {"p": [], "r": []}
    for i in range(n):
        for name in out:
            facts = {"searches": rng.randint(1, 5), "fetches": rng.randint(0, 3), "input_tokens": rng.randint(100, 900),
                     "output_tokens": rng.randint(10, 90), "valid": rng.randint(2, 9)}
            facts["supported"] = rng.randint(0, facts["valid"])
            facts["contradicted"] = rng.randint(0, 2)
            facts["supported_appearances"] = facts["supported"] + rng.randint(0, 2)
            facts["supported_rank1"] = rng.randint(0, facts["supported_appearances"])
            match = rng.random() < 0.5
            for c in range(copies):
                out[name].append(row(name, f"q{i:03d}-{c}", match, **facts))
    return out


def widths(block: dict[str, Any]) -> dict[str, float]:
    return {k: block[f"{k}_ci"][1] - block[f"{k}_ci"][0] for k in RATIOS}


def test_intervals_contain_points_are_seeded_and_narrow_with_more_questions() -> None:
    data = synthetic(40)
    prov, pairs = intervals(data, replicates=2000, seed="one")
    for name, block in prov.items():
        point = msgspec.to_builtins(provider_metrics(data[name]))
        for key in (*RATIOS, "tokens_per_correct"):
            lo, hi = block[f"{key}_ci"]
            assert lo <= point[key] <= hi, (name, key)
        assert all(block[f"{k}_ci_undefined"] == 0 for k in (*BOOTSTRAPPED, "tokens_per_correct"))
        assert not any(f"{k}_ci_undefined" in block for k in (*PROPORTIONS, *RATIO_OF_PROPORTIONS))
        assert all(block[f"{k}_n_eff"] > 0 for k in PROPORTIONS)
    assert intervals(data, replicates=2000, seed="one") == (prov, pairs)  # same seed: the same numbers
    other, _ = intervals(data, replicates=2000, seed="two")
    for key in ("input_tokens_per_trajectory", "output_tokens_per_trajectory",
                "tokens_per_correct"):  # the near-continuous bootstrapped ones move with the seed
        assert other["p"][f"{key}_ci"] != prov["p"][f"{key}_ci"], key
    for key in (*PROPORTIONS, *RATIO_OF_PROPORTIONS):  # closed form: no draws
        assert other["p"][f"{key}_ci"] == prov["p"][f"{key}_ci"], key
    four, _ = intervals(synthetic(40, copies=4), replicates=2000, seed="one")
    ratios = [widths(four["p"])[k] / w for k, w in widths(prov["p"]).items() if w > 0]
    assert len(ratios) >= 10
    assert 0.4 < float(np.median(ratios)) < 0.6 and all(0.3 < x < 0.75 for x in ratios), ratios  # 1/sqrt(4) = 0.5


def test_undefined_replicates_are_counted() -> None:
    # only q000 has supported items: the bootstrap of contradicted / supported would be 0/0 in every replicate that
    # does not draw it and [0.5, 0.5] in the others; as a ratio of two proportions of the valid items it is wide
    rows = {"a": [row("a", f"q{i:03d}", i % 2 == 0, valid=3, supported=2 if i == 0 else 0,
                      contradicted=int(i == 0))
                  for i in range(10)]}
    prov, _ = intervals(rows, replicates=500, seed="u")
    lo, hi = prov["a"]["contradiction_gold_ratio_ci"]
    assert lo < 0.5 and (hi is None or hi > 0.5)
    # a pair whose arms share one audited question: Tango's interval of one discordant pair, not [1, 1]
    pair = {"a": [row("a", f"q{i:03d}", True) for i in range(10)],
            "b": [row("b", "q000", False)] + [row("b", f"q{i:03d}", None) for i in range(1, 10)]}
    _, pairs = intervals(pair, replicates=500, seed="u")
    assert pairs["a|b"]["accuracy_diff_ci"] == tango_interval(1.0, 0.0, 1.0) and pairs["a|b"]["accuracy_diff_ci"][0] < 0


def test_per_correct_intervals() -> None:
    data = synthetic(30)
    usd = {name: {r.qid: Fraction(r.input_tokens + r.output_tokens, 1000) for r in rows} for name, rows in data.items()}
    prov, _ = intervals(data, replicates=1000, seed="c", usd=usd)
    for block in prov.values():
        tokens, spent = block["tokens_per_correct_ci"], block["usd_per_correct_ci"]
        assert tokens[0] < tokens[1] and block["usd_per_correct_ci_undefined"] == 0
        # USD proportional to tokens: the same interval, a thousandth
        assert spent == pytest.approx([tokens[0] / 1000, tokens[1] / 1000], rel=1e-12)
    plain, _ = intervals(data, replicates=1000, seed="c")
    assert "usd_per_correct_ci" not in plain["p"] and plain["p"]["tokens_per_correct_ci"] == prov["p"]["tokens_per_correct_ci"]
    none_right = {"a": [row("a", f"q{i}", False, input_tokens=10) for i in range(5)]}
    block = intervals(none_right, replicates=100, seed="c")[0]["a"]
    assert block["tokens_per_correct_ci"] is None  # no correct answer: no estimate, no interval


def test_report_json_with_intervals_is_byte_identical_per_seed(tmp_path: Path) -> None:
    db = tmp_path / "u.duckdb"
    import_fixture(db, tmp_path / "in")
    text, rep = report_json(db, "--judge-run-id", "j1")
    again, _ = report_json(db, "--judge-run-id", "j1")
    assert text == again
    methods = rep["uncertainty"].pop("methods")
    assert rep["uncertainty"] == {"bootstrap": 2000, "seed": "searchtrace", "level": 0.95, "unit": "question"}
    assert methods["accuracy_ci"] == methods["accuracy_wilson"] == "wilson_ess_cc"
    assert methods["token_f1_ci"] == "wilson_ess_cc"
    assert methods["contradiction_gold_ratio_ci"] == "ratio_bonferroni"
    assert methods["searches_per_trajectory_ci"] == "bootstrap_expanded_percentile" and methods["tokens_per_correct_ci"] == "ratio_bonferroni"
    assert methods["accuracy_diff_ci"] == "tango_score_ess" and methods["p_holm"] == "holm"
    assert methods["surface_support_rate_diff_ci"] == "mover_clustered"
    assert methods["surface_support_rate_diff_p"] == "mover_inverted"
    assert methods["accuracy_diff_p"] in ("mcnemar_exact", "mcnemar_exact+sign_flip_exact_dp", "sign_flip_exact_dp")
    assert set(methods) <= {k for b in (*rep["providers"].values(), *rep["paired"].values()) for k in b}
    other, _ = report_json(db, "--judge-run-id", "j1", "--seed", "another", "--bootstrap", "500")
    assert other != text
    off, plain = report_json(db, "--judge-run-id", "j1", "--bootstrap", "0")
    assert "uncertainty" not in plain and not any(k.endswith("_ci") for b in plain["providers"].values() for k in b)
    # the intervals only add keys: every key of the plain report keeps its value
    for name, block in plain["providers"].items():
        assert {k: rep["providers"][name][k] for k in block} == block
    assert plain["complementarity"] == rep["complementarity"] and "paired" not in plain
    assert sorted(rep["paired"]) == sorted(rep["complementarity"])
    assert json.loads(off) == plain


def test_html_draws_the_intervals(tmp_path: Path) -> None:
    from searchtrace.analytics import Report, render

    db = tmp_path / "h.duckdb"
    import_fixture(db, tmp_path / "in")
    _, rep = report_json(db, "--judge-run-id", "j1")
    page = render(msgspec.convert(rep, Report))
    section = page.split("<h2>How sure: 95% intervals</h2>", 1)[1].split("<h2>Per provider</h2>", 1)[0]
    # one whisker (line + two caps) and one dot per provider with a defined estimate, per metric chart
    defined = sum(rep["providers"][n]["accuracy_ci"] is not None for n in rep["providers"])
    acc = section.split("<h3>accuracy</h3>", 1)[1].split("<h3>", 1)[0]
    assert acc.count("<circle") == defined and acc.count('stroke-width="2"') == defined
    assert "Wilson score interval at the effective sample size" in section
    assert "Paired differences" in section and "p=" in section
    tests = [sum(c[k] is not None for c in rep["paired"].values()) for k in ("p_holm", "surface_support_rate_diff_p_holm")]
    assert tests == [1, 3]  # alpha|gamma is the one pair with questions audited on both sides
    assert "adjusted over the 1 accuracy tests and the 3 surface-support tests shown" in section and " Holm " in section
    _, plain = report_json(db, "--judge-run-id", "j1", "--bootstrap", "0")
    assert "How sure" not in render(msgspec.convert(plain, Report))


def test_table_shows_the_tests_and_holm(tmp_path: Path) -> None:
    from rich.console import Console

    from searchtrace.analytics import Report, render_table
    from searchtrace.analytics._table import interval

    db = tmp_path / "t.duckdb"
    import_fixture(db, tmp_path / "in")
    _, rep = report_json(db, "--judge-run-id", "j1")
    console = Console(record=True, width=240)
    render_table(msgspec.convert(rep, Report), console)
    text = " ".join(console.export_text().split())  # titles wrap at the table's width
    assert "Holm over the 1 accuracy and 3 surface-support tests shown" in text and "p Holm" in text
    assert "McNemar" in text and "score (inverted)" in text and "Wilson at the effective sample size" in text
    assert "Wilson 95%" not in text  # accuracy_wilson is accuracy_ci now: one interval row
    assert interval([1.0, None]) == "1.000–∞" and interval([-0.5, 0.25]) == "[-0.500, 0.250]"
