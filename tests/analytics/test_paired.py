"""docs/concepts/paired-and-audits.md: paired intervals against independent computations, one estimand per
comparison on a real demo store, corrections that refuse to guess, and audits sized for an answer."""

from __future__ import annotations

import csv
import json
import math
import random
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from searchtrace.analytics._uncertainty import (
    mover_difference,
    paired_accuracy_interval,
    score_interval,
    tango_interval,
)
from tests.analytics.analytics_fixture import corrected, intervals, report_json
from tests.builders import run_cli

Z = 1.959964


def tango_statistic(b: float, c: float, n: float, delta: float) -> float:
    """Tango's score statistic with the restricted MLE of P(B only) found numerically (not by the closed form):
    the log-likelihood b·ln(q + Δ) + c·ln q + (n − b − c)·ln(1 − 2q − Δ) maximised over the q that keep every
    cell probability in [0, 1]."""
    from scipy import optimize
    lo, hi = max(0.0, -delta), (1 - delta) / 2

    def minus_ll(q: float) -> float:
        cells = ((b, q + delta), (c, q), (n - b - c, 1 - 2 * q - delta))
        return -sum(k * math.log(max(p, 1e-300)) for k, p in cells if k)

    q = optimize.minimize_scalar(minus_ll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}).x
    return (b - c - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))


@pytest.mark.parametrize(("b", "c", "n"), [(3, 1, 10), (2, 4, 30), (0, 0, 30), (1, 0, 30), (5, 0, 5), (7, 2, 100),
                                           (0.9, 2.7, 9.0)])
def test_tango_interval_inverts_the_score_test(b: float, c: float, n: float) -> None:
    lo, hi = tango_interval(b, c, n)
    point = (b - c) / n
    assert lo <= point <= hi and hi - lo > 0
    for end, sign in ((lo, 1), (hi, -1)):
        if abs(end) < 1:  # an end inside (−1, 1) is where |T| = z; just inside it |T| < z, just outside > z
            assert tango_statistic(b, c, n, end) == pytest.approx(sign * Z, abs=1e-4)
            assert abs(tango_statistic(b, c, n, end + sign * 1e-4)) < Z < abs(tango_statistic(b, c, n, end - sign * 1e-4))


def test_no_discordant_pair_gives_the_closed_form_not_a_point() -> None:
    # b = c = 0: T² = nΔ/(1 − Δ) at Δ > 0, so the ends are ±z²/(n + z²) (the bootstrap gave [0, 0])
    for n in (1, 8, 30, 100):
        assert tango_interval(0, 0, n) == pytest.approx([-Z * Z / (n + Z * Z), Z * Z / (n + Z * Z)], abs=1e-12)
    ci, n_eff = paired_accuracy_interval([Fraction(0)] * 30, [1] * 30)
    assert n_eff == 30 and ci == tango_interval(0.0, 0.0, 30.0)


def test_effective_sample_size_of_paired_differences() -> None:
    # one epoch a side: n_eff = n − 1 exactly, as for a single proportion
    diffs = [Fraction(1)] * 3 + [Fraction(-1)] + [Fraction(0)] * 6
    ci, n_eff = paired_accuracy_interval(diffs, [1] * 10)
    assert n_eff == 9 and ci == tango_interval(3 * 0.9, 1 * 0.9, 9.0)
    # three epochs a side that average out: more information than n questions, up to the 3n epochs
    rng = random.Random(3)
    diffs = [Fraction(rng.choice((-1, 0, 0, 1)), 3) for _ in range(40)]
    _, n_eff = paired_accuracy_interval(diffs, [3] * 40)
    b = sum(d for d in diffs if d > 0)
    c = -sum(d for d in diffs if d < 0)
    mean = (b - c) / 40
    v = sum((d - mean) ** 2 for d in diffs) / (40 * 39)
    assert n_eff == min(((b + c) / 40 - mean**2) / v, Fraction(120)) and n_eff > 40


def test_mover_against_the_variance_it_recovers() -> None:
    # ρ = 0 and symmetric side intervals: the Wald interval of a difference of independent estimates
    assert mover_difference(0.5, [0.4, 0.6], 0.3, [0.25, 0.35], 0.0) == pytest.approx(
        [0.2 - math.hypot(0.1, 0.05), 0.2 + math.hypot(0.1, 0.05)])
    # ρ = 1 with equal widths: the two errors cancel, only a width difference remains
    assert mover_difference(0.5, [0.4, 0.6], 0.5, [0.4, 0.6], 1.0) == pytest.approx([0.0, 0.0], abs=1e-12)
    assert mover_difference(0.02, [0.0, 0.3], 0.0, [0.0, 0.1], 0.0)[0] == pytest.approx(0.02 - math.hypot(0.02, 0.1))


def test_continuity_corrected_score_interval_reaches_the_edges_at_small_effective_n() -> None:
    # the corrected score test |p̂ − π| − 1/(2n) <= z·√(π(1 − π)/n) never rejects π = 1 when (1 − p̂)·n <= ½
    for p in (0.5, 0.7, 0.9, 0.99):
        assert score_interval(p, 1.0)[1] == 1.0
        assert score_interval(1 - p, 1.0)[0] == 0.0
    assert score_interval(0.99, 49.0)[1] == 1.0 and score_interval(0.99, 60.0)[1] < 1.0
    # away from the edge, the ends still invert the corrected test (the shifted Wilson form)
    lo, hi = score_interval(0.4, 3.0)
    for end, shift in ((lo, -1), (hi, 1)):
        assert abs(0.4 - end) - 1 / 6 == pytest.approx(Z * math.sqrt(end * (1 - end) / 3.0), abs=1e-9)
        assert shift * (end - 0.4) > 0


# -- a real demo store: one estimand, corrected the same way, refusals and audit plans ---------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("paired")
    db = folder / "demo.duckdb"
    ran = run_cli("demo", "--db", str(db), "--out", str(folder / "out"), "--n", "30", "--json")
    assert ran.code == 0, ran.err
    return db


def fresh(demo: Path, tmp_path: Path) -> Path:
    db = tmp_path / "d.duckdb"
    shutil.copy(demo, db)
    return db


def simulate_labels(tsv: Path, agreement: float, seed: int, keep: Any = None) -> Path:
    """The sample's TSV with a simulated human: agrees with the judge with chance `agreement` (rows `keep` rejects
    stay unlabelled)."""
    with tsv.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    rng = random.Random(seed)
    for r in rows:
        judge = r["judge_value"] == "true"
        if keep is None or keep(r):
            r["human_value"] = str(judge if rng.random() < agreement else not judge).lower()
    out = tsv.with_name("labelled.tsv")
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return out


def test_printed_support_difference_is_the_difference_of_the_printed_rates(demo: Path, tmp_path: Path) -> None:
    db = fresh(demo, tmp_path)
    tsv = tmp_path / "s.tsv"
    assert run_cli("audit", "sample", "--db", str(db), "--k", "8", "--out", str(tsv)).code == 0
    assert run_cli("audit", "import", "--db", str(db), str(simulate_labels(tsv, 0.85, 1))).code == 0
    _, rep = report_json(db)
    provs = rep["providers"]
    for key, pair in rep["paired"].items():
        a, b = key.split("|")
        # every question has valid items on both sides here, so the paired questions are the rates' questions
        assert pair["surface_support_rate_paired_questions"] == provs[a]["trajectories"] == provs[b]["trajectories"]
        want = Fraction(provs[a]["surface_support_rate"]) - Fraction(provs[b]["surface_support_rate"])
        assert pair["surface_support_rate_diff"] == pytest.approx(float(want), abs=1e-15)
        lo, hi = pair["surface_support_rate_diff_ci"]
        assert lo < pair["surface_support_rate_diff"] < hi
        assert (pair["surface_support_rate_diff_p"] <= 0.05) == (lo > 0 or hi < 0)  # the test of that interval
        # the corrected counterpart: the same estimand over the same questions, corrected
        assert pair["surface_support_rate_corrected_diff_questions"] == pair["surface_support_rate_paired_questions"]
        assert pair["surface_support_rate_corrected_diff"] == pytest.approx(
            provs[a]["surface_support_rate_corrected"] - provs[b]["surface_support_rate_corrected"], abs=1e-15)
        assert pair["surface_support_rate_corrected_diff_missing_strata"] == []
    methods = rep["uncertainty"]["methods"]
    assert methods["surface_support_rate_diff_ci"] == "mover_clustered"
    assert methods["surface_support_rate_diff_p"] == "mover_inverted"
    assert methods["accuracy_diff_ci"] == "tango_score_ess"


def test_an_audit_of_judge_true_cases_only_refuses_every_corrected_figure(demo: Path, tmp_path: Path) -> None:
    db = fresh(demo, tmp_path)
    tsv = tmp_path / "s.tsv"
    assert run_cli("audit", "sample", "--db", str(db), "--k", "8", "--out", str(tsv)).code == 0
    labelled = simulate_labels(tsv, 0.9, 2, keep=lambda r: r["judge_value"] == "true")
    assert run_cli("audit", "import", "--db", str(db), str(labelled)).code == 0
    _, rep = report_json(db)
    for name, block in rep["providers"].items():
        assert block["surface_support_rate_corrected"] is None and block["surface_support_rate_corrected_ci"] is None
        assert f"{name}|snippet|supports_gold|false" in block["corrected_missing_strata"]
    for pair in rep["paired"].values():
        assert pair["surface_support_rate_corrected_diff"] is None
        assert pair["surface_support_rate_corrected_diff_p"] is None
        assert pair["surface_support_rate_corrected_diff_ci"] is None
    status = run_cli("audit", "status", "--db", str(db), "--json")
    assert status.code == 0, status.err
    doc = json.loads(status.out)
    figures = {(f["where"], f["key"]): f for f in doc["figures"]}
    brave = figures[("brave", "surface_support_rate_corrected")]
    assert not brave["computable"] and brave["missing_strata"] == ["brave|snippet|supports_gold|false"]
    assert brave["expected_width_now"] is None and brave["expected_width_when_labelled"] is not None
    text = run_cli("audit", "status", "--db", str(db)).out
    assert "brave surface_support_rate_corrected: no, needs brave|snippet|supports_gold|false" in text


def test_audit_planned_for_a_width_gives_about_that_width(demo: Path, tmp_path: Path) -> None:
    db = fresh(demo, tmp_path)
    tsv = tmp_path / "s.tsv"
    ran = run_cli("audit", "sample", "--db", str(db), "--target-width", "0.1", "--out", str(tsv))
    assert ran.code == 0, ran.err
    planned = {}
    for line in ran.out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1].endswith("_corrected:") or len(parts) >= 3 and parts[1].endswith("_diff:"):
            planned[(parts[0], parts[1].rstrip(":"))] = float(parts[2])
    assert planned[("brave", "surface_support_rate_corrected")] == pytest.approx(0.1, abs=0.002)
    assert run_cli("audit", "import", "--db", str(db), str(simulate_labels(tsv, 0.9, 3))).code == 0
    _, rep = report_json(db)
    checked = 0
    for (where, key), width in planned.items():
        block = rep["paired"][where] if "|" in where else rep["providers"][where]
        lo, hi = block[f"{key}_ci"]
        assert abs((hi - lo) - width) <= 0.2 * width, (where, key, hi - lo, width)
        checked += 1
    assert checked == 9  # 3 providers x 2 rates, 3 pairs
    assert run_cli("audit", "sample", "--db", str(db), "--target-width", "0.1", "--n", "5", "--out",
                   str(tsv)).code == 2
    bad = run_cli("audit", "sample", "--db", str(db), "--target-width", "3", "--out", str(tsv))
    assert bad.code == 2 and "--target-width" in bad.err and "Traceback" not in bad.err


def test_correction_is_ppi_plus_plus_with_any_lambda() -> None:
    # one provider's strata: judge-true N1 = 40 (8 labelled), judge-false N0 = 160 (12 labelled). ppi_py's PPI++
    # with the design weights (N_h/n_h per label) and its power-tuned λ gives our point, and its interval equals the
    # classical one of the human labels alone: the judge is constant within a stratum, so λ changes nothing
    from scipy import stats
    ppi_py = pytest.importorskip("ppi_py")
    from searchtrace.analytics import JudgedCase

    human = {True: [1, 1, 1, 1, 1, 1, 0, 1], False: [0] * 10 + [1, 0]}
    sizes = {True: 40, False: 160}
    cases = []
    for judge, labels in human.items():
        for i in range(sizes[judge]):
            h = bool(labels[i]) if i < len(labels) else None
            cases.append(JudgedCase(provider="a", qid=f"q{i % 20:02d}", label="supports_gold", judge_value=judge,
                                    human_value=h))
    valid = {("a", f"q{i:02d}"): 10 for i in range(20)}
    ours = corrected(cases, valid, replicates=0, seed="s")[0]["a"]["surface_support_rate_corrected"]
    y = np.array([float(x) for j in (True, False) for x in human[j]])
    yhat = np.array([float(j) for j in (True, False) for _ in human[j]])
    w = np.array([sizes[j] / len(human[j]) for j in (True, False) for _ in human[j]])
    unlabeled = np.array([1.0] * 40 + [0.0] * 160)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, w=w)
    assert float(np.asarray(point).ravel()[0]) == pytest.approx(ours, abs=1e-12)
    for lam in (0.0, 0.5, 1.0):
        assert float(np.asarray(ppi_py.ppi_mean_pointestimate(y, yhat, unlabeled, lam=lam, w=w)).ravel()[0]) == \
            pytest.approx(ours, abs=1e-12)
    assert ours == pytest.approx((40 * 7 / 8 + 160 * 1 / 12) / 200)
    assert stats.norm.ppf(0.975) == pytest.approx(Z, abs=1e-6)


def test_epoch_sd_interval_against_scipy_and_in_the_report() -> None:
    from scipy import stats

    from searchtrace.analytics._uncertainty import chi2_quantile, epoch_sd_interval
    from tests.analytics.test_uncertainty import row

    for df in (1, 2, 4, 29):
        for p in (0.025, 0.975):
            assert chi2_quantile(p, df) == pytest.approx(stats.chi2.ppf(p, df), rel=1e-12)
    lo, hi = epoch_sd_interval(0.05, 3)[0] or [0.0, 0.0]
    assert lo == pytest.approx(0.05 * math.sqrt(2 / stats.chi2.ppf(0.975, 2)))
    assert hi == pytest.approx(0.05 * math.sqrt(2 / stats.chi2.ppf(0.025, 2)))
    # epoch 1: 1 of 2 right, epoch 2: 2 of 2 -> s = √0.125 over 2 epochs (1 degree of freedom)
    rows = {"a": [row("a", "q1", True, 1), row("a", "q2", False, 1), row("a", "q1", True, 2), row("a", "q2", True, 2)]}
    block = intervals(rows, replicates=50, seed="s")[0]["a"]
    assert block["accuracy_epoch_sd_ci"] == epoch_sd_interval(math.sqrt(0.125), 2)[0]
    # a deterministic agent: no question splits its epochs, so σ <= √(π_U/(2n)) with π_U = 1 − 0.05^(1/n)
    same = {"a": [row("a", q, q == "q1", e) for e in (1, 2) for q in ("q1", "q2")]}
    block = intervals(same, replicates=50, seed="s")[0]["a"]
    assert block["accuracy_epoch_sd_ci"] == [0.0, math.sqrt((1 - 0.05 ** (1 / 2)) / 4)]
    # equal per-epoch accuracies from questions that split: no interval, and the reason
    swap = {"a": [row("a", "q1", True, 1), row("a", "q2", False, 1), row("a", "q1", False, 2), row("a", "q2", True, 2)]}
    block = intervals(swap, replicates=50, seed="s")[0]["a"]
    assert block["accuracy_epoch_sd_ci"] is None and "split" in block["accuracy_epoch_sd_ci_reason"]
