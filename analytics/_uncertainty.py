"""docs/concepts/statistics.md uncertainty (it replaces §12's interval and test rules): Wilson intervals at the effective sample size
for proportions, question-bootstrap percentile intervals for means and other ratios, one paired question-level
estimand per comparison with its exact test, and Holm over the report's pairs.

Proportions (PROPORTIONS: Σy/Σm over questions, all epochs pooled per question): the continuity-corrected Wilson
score interval at the Korn–Graubard effective sample size n_eff = p̂(1−p̂)/v̂, v̂ = n/(n−1)·Σᵢ(yᵢ − p̂mᵢ)²/(Σmᵢ)²
over the n questions with mᵢ > 0, capped at Σmᵢ, n when v̂ = 0 (and when n = 1). n_eff is an exact Fraction,
so k identical epochs give bit for bit the interval of one epoch. The corrected form because the plain score
interval covers less than 92.5 % at n = 30 for some p in 0.02 … 0.98 (small n·p̂, where Wilson dips).
Proportions of items clustered by question (CLUSTERED: surface_support_rate, gold_rank1_share) take the hull of
that interval and the beta-binomial profile-likelihood interval (`beta_binomial_interval`: yᵢ of mᵢ items,
question rates ~ Beta(μ, s), a question's epochs counted once when all have the same counts): where a few
questions carry most of the items, a sample that drew none of them has a small p̂ and a small v̂, and Wilson at
n_eff alone covered 87–92 % at n = 30 for p <= 0.05 or >= 0.95; the fitted spread of the rates keeps the
interval open towards them. `<metric>_n_eff` stays the Korn–Graubard n_eff.

Means and other ratios (BOOTSTRAPPED): each provider's trajectories are summed per question into a table of
sufficient statistics (one row per qid, sorted), a replicate is the vector of how often each question was drawn,
and every replicate's sums are one matrix product of those counts with the table. The integer columns stay
integers in float64 (sums far below 2**53), so the product is exact whatever order BLAS adds in; the fractional
columns (token F1, USD, paired differences) are summed per replicate by numpy's own (single-threaded,
fixed-order) reduction. Same events and seed, same bytes. A replicate whose denominator is 0 is left out of the
interval and counted in `<metric>_ci_undefined`.

Draws, as a function of `--seed S`: for a sorted qid list of length n, a PCG64 generator seeded with the first
16 bytes of sha256("searchtrace.bootstrap/1\\0" S "\\0" qid_1 "\\0" … qid_n) (big-endian) draws B rows of n
indices in [0, n) with `Generator.integers`, in chunks of rows; row r's count of index i is how often qid i is in
replicate r. Everything over the same question list (providers, pairs) therefore shares the same replicates,
which is what makes a pair's differences paired. Interval: numpy's linear-interpolation 2.5 % and 97.5 %
quantiles of the defined replicates.

Tokens and USD per correct answer (a ratio whose denominator can be near 0, where the bootstrap of Σx/Σcorrect
cannot cover): mean per trajectory (bootstrap, 97.5 %) over the correct-per-trajectory share (its proportion
interval, 97.5 %), ends divided crosswise — Bonferroni, so ≥ 95 % whatever their dependence; an upper end
over a lower share of 0 is unbounded (null).

Pairs "A|B" (docs/concepts/paired-and-audits.md): `accuracy_diff` is the mean over the questions both ran with an
audited answer on both sides of āᵢ − b̄ᵢ (each side's mean over its audited epochs), with Tango's score interval at
the effective sample size (`paired_accuracy_interval`: never [0, 0], also without a discordant pair) and a p-value:
McNemar exact with one audited epoch per question on both sides, else the exact sign-flip test by dynamic
programming (`sign_flip`). `surface_support_rate_diff` is R_A − R_B, the difference of the two ratio estimates
Σy/Σm over the questions with valid items on both sides (what a reader gets by subtracting the printed rates), with
Newcombe's hybrid interval from each side's clustered interval and the p-value that inverts it
(`support_difference`).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from itertools import combinations

import msgspec
import numpy as np
import numpy.typing as npt

from searchtrace.analytics._metrics import Scores, TrajectoryStats, answer_scores, epoch_spread, paired_qids
from searchtrace.analytics._model import ArmMetrics, Discordant, Interval, Pair, field_key

Z95 = 1.959964
Z975 = 2.241403  # two-sided 97.5 %: each half of a Bonferroni 95 % ratio interval
LEVEL = 0.95
DP_CELLS = 4_000_000  # sign-flip DP work (differences x reachable sums) beyond which differences go to a grid: a
# few ms per test; each |d| then moves by at most ~m²/DP_CELLS of its size (0.25 % at m = 100)
_RESCALE = 960  # sign-flip DP steps between two exact rescalings of its counts
_CHUNK_CELLS = 2000000  # replicate rows per chunk x questions: bounds the memory of one weight matrix

Floats = npt.NDArray[np.float64]

# Integer columns of a question table (sums over the question's trajectories, every epoch).
COLUMNS = (
    "trajectories", "audited", "correct", "em", "valid", "supported", "contradicted", "supported_appearances",
    "supported_rank1", "searches", "fetches", "input_tokens", "output_tokens", "reasoning_tokens", "page_tokens",
)
_COL = {c: i for i, c in enumerate(COLUMNS)}
F1 = "f1"  # the fractional column, kept apart

# The proportions by their report field's name (the interval fields are `<name>_ci`, `<name>_n_eff`).
ACCURACY, EXACT_MATCH, TOKEN_F1, SUPPORT, RANK1 = (field_key(ArmMetrics, get) for get in (
    lambda m: m.accuracy, lambda m: m.exact_match, lambda m: m.token_f1, lambda m: m.surface_support_rate,
    lambda m: m.gold_rank1_share))
# Report key -> (numerator column, denominator column): each is a ratio of sums over trajectories (docs/concepts/metrics.md).
RATIOS: dict[str, tuple[str, str]] = {
    ACCURACY: ("correct", "audited"),
    EXACT_MATCH: ("em", "trajectories"),
    TOKEN_F1: (F1, "trajectories"),
    SUPPORT: ("supported", "valid"),
    RANK1: ("supported_rank1", "supported_appearances"),
    "contradiction_gold_ratio": ("contradicted", "supported"),
    "searches_per_trajectory": ("searches", "trajectories"),
    "fetches_per_trajectory": ("fetches", "trajectories"),
    "input_tokens_per_trajectory": ("input_tokens", "trajectories"),
    "output_tokens_per_trajectory": ("output_tokens", "trajectories"),
    "reasoning_tokens_per_trajectory": ("reasoning_tokens", "trajectories"),
    "page_tokens_per_trajectory": ("page_tokens", "trajectories"),
}
# The ratios whose numerator counts a subset of the denominator's units (token F1: a share in [0, 1] of each
# trajectory), Wilson at the effective sample size.
PROPORTIONS = (ACCURACY, EXACT_MATCH, TOKEN_F1, SUPPORT, RANK1)
# Proportions of items (snippets, appearances) clustered by question: the hull of the Wilson interval and the
# beta-binomial profile-likelihood interval (`clustered_interval`); the Wilson one alone covered 87–92 % at n = 30
# for p <= 0.05 or >= 0.95 (a few questions carry most of the support; a sample without them looks precise).
CLUSTERED = (SUPPORT, RANK1)
# contradicted / supported: two proportions of the valid items, one over the other (both may be near 0)
RATIO_OF_PROPORTIONS = ("contradiction_gold_ratio",)
BOOTSTRAPPED = tuple(k for k in RATIOS if k not in PROPORTIONS and k not in RATIO_OF_PROPORTIONS)
PER_CORRECT = ("tokens_per_correct", "usd_per_correct")

PROPORTION_METHOD = "wilson_ess_cc"
EPOCH_SD_METHOD = "chi_square_epochs"
CLUSTERED_METHOD = "wilson_ess_cc+beta_binomial_profile_lr"
METHODS: dict[str, str] = {
    **{f"{k}_ci": CLUSTERED_METHOD if k in CLUSTERED else PROPORTION_METHOD for k in PROPORTIONS},
    "accuracy_wilson": PROPORTION_METHOD,
    "accuracy_epoch_sd_ci": EPOCH_SD_METHOD,
    **{f"{k}_ci": "bootstrap_expanded_percentile" for k in BOOTSTRAPPED},
    **{f"{k}_ci": "ratio_bonferroni" for k in (*PER_CORRECT, *RATIO_OF_PROPORTIONS)},
    "accuracy_diff_ci": "tango_score_ess",
    field_key(Pair, lambda c: c.surface_support_rate_diff_ci): "mover_clustered",
    "p_holm": "holm",
    field_key(Pair, lambda c: c.surface_support_rate_diff_p_holm): "holm",
}
"""The method behind each interval and adjusted p-value key; the tests' names are per pair (`*_test`)."""


class QuestionTable:
    """One provider's sufficient statistics per question: `ints` (n x len(COLUMNS)) and `f1` (n), rows by sorted qid."""

    def __init__(self, qids: tuple[str, ...], ints: Floats, f1: Floats,
                 distinct: dict[str, tuple[list[int], list[int]]] | None = None):
        self.qids = qids
        self.ints = ints
        self.f1 = f1
        self.distinct = distinct or {}

    @classmethod
    def from_rows(cls, rows: Sequence[TrajectoryStats], scores: Scores | None = None) -> QuestionTable:
        scores = answer_scores(rows) if scores is None else scores
        qids = tuple(sorted({r.qid for r in rows}))
        where = {q: i for i, q in enumerate(qids)}
        at = np.array([where[r.qid] for r in rows], dtype=np.int64)
        per_row = np.array(
            [
                (1, r.semantic_match is not None, bool(r.semantic_match), s[0], r.valid - r.unobserved, r.supported, r.contradicted,
                 r.supported_appearances, r.supported_rank1, r.searches, r.fetches, r.input_tokens, r.output_tokens,
                 r.reasoning_tokens, r.page_tokens)
                for r, s in zip(rows, scores, strict=True)
            ],
            dtype=np.int64,
        ).reshape(len(rows), len(COLUMNS))
        ints = np.zeros((len(qids), len(COLUMNS)), dtype=np.int64)
        np.add.at(ints, at, per_row)  # exact integer sums per question
        # F1 per question: bincount adds in row order, so the float sums are the same on every run
        f1 = np.bincount(at, weights=np.array([float(s[1]) for s in scores], dtype=np.float64), minlength=len(qids))
        return cls(qids, ints.astype(np.float64), f1.astype(np.float64), _distinct_epochs(rows, where, ints))

    def column(self, name: str) -> list[int]:
        """One integer column as exact Python ints, by question."""
        out: list[int] = self.ints[:, _COL[name]].astype(np.int64).tolist()
        return out

    def numerator(self, name: str) -> list[int] | list[Fraction]:
        """A proportion's numerator by question: an integer column, or token F1's float sums as exact Fractions."""
        return [Fraction(x) for x in self.f1.tolist()] if name == F1 else self.column(name)

    def point(self, key: str) -> Fraction | None:
        """The statistic over the table itself, exact."""
        num, den = RATIOS[key]
        d = int(self.ints[:, _COL[den]].sum())
        if d == 0:
            return None
        n = Fraction(float(self.f1.sum())) if num == F1 else Fraction(int(self.ints[:, _COL[num]].sum()))
        return n / d


def _distinct_epochs(rows: Sequence[TrajectoryStats], where: Mapping[str, int],
                     sums: npt.NDArray[np.int64]) -> dict[str, tuple[list[int], list[int]]]:
    """Per CLUSTERED figure, (numerators, denominators) by question with a question's epochs counted once when they
    all have the same counts (a deterministic agent's copies: k of them must add no information to the fit)."""
    out: dict[str, tuple[list[int], list[int]]] = {}
    for key in CLUSTERED:
        num, den = RATIOS[key]
        seen: dict[int, set[tuple[int, int]]] = defaultdict(set)
        for r in rows:
            seen[where[r.qid]].add((getattr(r, num), getattr(r, den)))
        y, m = sums[:, _COL[num]].tolist(), sums[:, _COL[den]].tolist()
        for i, counts in seen.items():
            if len(counts) == 1:
                y[i], m[i] = next(iter(counts))
        out[key] = (y, m)
    return out


def seeded_rng(seed: str, *parts: str) -> np.random.Generator:
    """The one way a report draws random numbers: the same seed and parts give the same stream everywhere."""
    h = hashlib.sha256("\0".join(("searchtrace.bootstrap/1", seed, *parts)).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(h[:16], "big")))


def weight_chunks(seed: str, qids: tuple[str, ...], replicates: int) -> Iterator[Floats]:
    """The replicates' draw counts (rows: replicates, columns: qids), chunk by chunk, as documented above."""
    n = len(qids)
    rng = seeded_rng(seed, *qids)
    rows = max(1, _CHUNK_CELLS // max(n, 1))
    done = 0
    while done < replicates:
        b = min(rows, replicates - done)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int64)
        w = np.empty((b, n), dtype=np.float64)
        for r in range(b):  # row by row: a few times faster than one bincount over the chunk (cache)
            w[r] = np.bincount(idx[r], minlength=n)
        yield w
        done += b


class Job:
    """Columns over one question list to sum per replicate: `ints` (n x c, exact integers) and `floats` (n x f)."""

    def __init__(self, qids: tuple[str, ...], ints: Floats, floats: Floats):
        self.qids = qids
        self.ints = ints
        self.floats = floats


def replicate_sums(seed: str, replicates: int, jobs: Sequence[Job]) -> list[tuple[Floats, Floats]]:
    """Per job, every replicate's column sums (B x c, B x f); jobs over the same qid list share one pass over the
    same draws, and their integer columns one matrix product."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, job in enumerate(jobs):
        groups[job.qids].append(i)
    out: list[tuple[Floats, Floats]] = [(np.empty((0, 0)), np.empty((0, 0)))] * len(jobs)
    for qids, members in groups.items():
        wide = np.hstack([jobs[i].ints for i in members])
        edges = np.cumsum([0, *(jobs[i].ints.shape[1] for i in members)])
        ints: list[Floats] = []
        floats: dict[int, list[Floats]] = defaultdict(list)
        for w in weight_chunks(seed, qids, replicates):
            ints.append(w @ wide)  # exact: integer values far below 2**53
            for i in members:
                f = jobs[i].floats
                floats[i].append(np.stack([(w * f[:, j]).sum(axis=1) for j in range(f.shape[1])], axis=1)
                                 if f.shape[1] else np.empty((w.shape[0], 0)))  # numpy's fixed-order reduction
        all_ints = np.concatenate(ints)
        for j, i in enumerate(members):
            out[i] = (all_ints[:, edges[j]:edges[j + 1]], np.concatenate(floats[i]))
    return out


def _t_quantile(z: float, nu: int) -> float:
    """Student's t quantile for the normal quantile `z` (> 0) and nu degrees of freedom: exact for nu <= 2, else the
    Cornish–Fisher expansion (Abramowitz & Stegun 26.7.5; at the 95 % level 0.004 low at nu = 3, < 1e-4 from nu = 9)."""
    p = 0.5 * math.erfc(-z / math.sqrt(2))
    if nu == 1:
        return math.tan(math.pi * (p - 0.5))
    if nu == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / nu + g2 / nu**2 + g3 / nu**3 + g4 / nu**4


def expanded_level(level: float, n: int) -> float:
    """Hesterberg's expanded percentile level for n resampled units: the percentile bootstrap of a mean is as
    narrow as z·σ̂/√n with the n−1 and t corrections missing; α' = 2Φ(−√(n/(n−1))·t_{n−1}), so the interval
    keeps its coverage at n = 30 (measured by `bench coverage`). `level` itself when n < 2."""
    if n < 2:
        return level
    z = math.sqrt(2) * _erfinv(level)
    widened = math.sqrt(n / (n - 1)) * _t_quantile(z, n - 1)
    return 1 - math.erfc(widened / math.sqrt(2))


def _erfinv(y: float) -> float:
    """Inverse error function by Newton steps from Winitzki's approximation (to double precision)."""
    a = 0.147
    ln = math.log(1 - y * y)
    x = math.copysign(math.sqrt(math.sqrt((2 / (math.pi * a) + ln / 2) ** 2 - ln / a) - (2 / (math.pi * a) + ln / 2)), y)
    for _ in range(3):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def percentile_interval(values: Floats, level: float = LEVEL, units: int = 0) -> list[float] | None:
    """The central `level` share of the defined (not NaN) replicates (None when none is defined); with `units`
    (the resampled questions) at the expanded level of `expanded_level`."""
    ok = values[~np.isnan(values)]
    if ok.size == 0:
        return None
    level = expanded_level(level, units) if units else level
    lo, hi = np.quantile(ok, [(1 - level) / 2, 1 - (1 - level) / 2])
    return [float(lo), float(hi)]


def _divide(num: Floats, den: Floats) -> Floats:
    out = np.full(den.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def effective_n(y: Sequence[int | Fraction], m: Sequence[int]) -> Fraction | None:
    """Korn–Graubard effective sample size of Σy/Σm over questions (docs/concepts/statistics.md), exact; None when Σm = 0.

    With Y = Σyᵢ, M = Σmᵢ over the n questions with mᵢ > 0: p̂(1−p̂) = Y(M−Y)/M² and
    v̂ = n/(n−1)·Σ(yᵢM − Ymᵢ)²/M⁴, so n_eff = Y(M−Y)M²(n−1) / (n·Σ(yᵢM − Ymᵢ)²), capped at M; n when that sum is
    0 (v̂ = 0) or n = 1 (no variance to estimate)."""
    units = [(yi, mi) for yi, mi in zip(y, m, strict=True) if mi > 0]
    n = len(units)
    if n == 0:
        return None
    big_y, big_m = sum(yi for yi, _ in units), sum(mi for _, mi in units)
    spread = sum((yi * big_m - big_y * mi) ** 2 for yi, mi in units)
    if spread == 0 or n == 1:
        return Fraction(n)
    return min(Fraction(big_y * (big_m - big_y) * big_m * big_m * (n - 1), n * spread), Fraction(big_m))


def score_interval(p: float, n: float, z: float = Z95, corrected: bool = True) -> list[float]:
    """Wilson score interval for proportion `p` at sample size `n` > 0, continuity-corrected (Newcombe 1998,
    method 4) unless `corrected` is False; exact at the edges (p = 0: lo = 0; p = 1: hi = 1; corrected, p·n <= ½:
    lo = 0 and (1 − p)·n <= ½: hi = 1, where the shifted score test no longer rejects the edge)."""
    z2 = z * z
    if corrected:
        lo = (2 * n * p + z2 - 1 - z * math.sqrt(max(0.0, z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)))) / (2 * (n + z2))
        hi = (2 * n * p + z2 + 1 + z * math.sqrt(max(0.0, z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)))) / (2 * (n + z2))
    else:
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        lo, hi = centre - half, centre + half
    if corrected:  # the corrected score test's |p̂ − π| − 1/(2n) <= 0 reaches the edge: the interval ends there
        lo, hi = (0.0 if p * n <= 0.5 else lo), (1.0 if (1 - p) * n <= 0.5 else hi)
    return [0.0 if p == 0 else min(p, max(0.0, lo)), 1.0 if p == 1 else max(p, min(1.0, hi))]


def proportion_interval(y: Sequence[int | Fraction], m: Sequence[int], z: float = Z95) -> tuple[list[float] | None, Fraction | None]:
    """(interval, n_eff) of Σy/Σm: the score interval at the effective sample size; (None, None) when Σm = 0."""
    n_eff = effective_n(y, m)
    if n_eff is None:
        return None, None
    return score_interval(float(Fraction(sum(y), sum(m))), float(n_eff), z, PROPORTION_METHOD == "wilson_ess_cc"), n_eff


# ln(α + β) grid over which the beta-binomial likelihood is maximised for each mean (a parabola through the best
# point and its neighbours refines it): e^-10, all or nothing per question; e^14, the binomial limit for any count
# of items a question has
_LOG_STRENGTH = np.linspace(-10.0, 14.0, 97)
_STRENGTH = np.exp(_LOG_STRENGTH)
_EDGE = 25.0  # |logit μ| bound of the search: μ within 1.4e-11 of 0 or 1
_GOLDEN = (math.sqrt(5) - 1) / 2


def _expit(t: float) -> float:
    return 1 / (1 + math.exp(-t))


def _tails(counts: npt.NDArray[np.int64], size: int) -> Floats:
    """#{i: countᵢ > j} for j in [0, size)."""
    h = np.bincount(counts, minlength=size + 1)
    return (len(counts) - np.cumsum(h))[:size].astype(np.float64)


def beta_binomial_profile(y: Sequence[int], m: Sequence[int]) -> Callable[[float], float]:
    """ℓ(t) = max over the strength s = α + β of the beta-binomial log-likelihood of yᵢ of mᵢ at mean μ = expit(t).

    With a = μs, b = (1 − μ)s: ℓ = Σᵢ [lnΓ(yᵢ + a) − lnΓ(a) + lnΓ(mᵢ − yᵢ + b) − lnΓ(b) − lnΓ(mᵢ + s) + lnΓ(s)], and
    lnΓ(c + x) − lnΓ(x) = Σ_{j<c} ln(x + j) for an integer c, so ℓ = Σ_j [N_y(j)·ln(a + j) + N_{m−y}(j)·ln(b + j)
    − N_m(j)·ln(s + j)] with N_c(j) = #{i: cᵢ > j}: no lnΓ, one matrix product per strength grid."""
    yy, mm = np.asarray(y, dtype=np.int64), np.asarray(m, dtype=np.int64)
    yy, mm = yy[mm > 0], mm[mm > 0]
    size = int(mm.max())
    j = np.arange(size, dtype=np.float64)
    ny, nf = _tails(yy, size), _tails(mm - yy, size)
    by_strength = np.log(_STRENGTH[:, None] + j) @ _tails(mm, size)

    def profile(t: float) -> float:
        mu = _expit(t)
        ll = (np.log((_STRENGTH * mu)[:, None] + j) @ ny + np.log((_STRENGTH * (1 - mu))[:, None] + j) @ nf
              - by_strength)
        k = min(max(int(np.argmax(ll)), 1), len(_STRENGTH) - 2)
        l0, l1, l2 = float(ll[k - 1]), float(ll[k]), float(ll[k + 1])
        bend = l0 - 2 * l1 + l2
        return max(l1, l1 - (l0 - l2) ** 2 / (8 * bend)) if bend < 0 else l1

    return profile


def _root(f: Callable[[float], float], lo: float, hi: float, f_lo: float, f_hi: float) -> float:
    """A root of f in [lo, hi] where f changes sign (Illinois: regula falsi that halves a stuck end's value)."""
    side, x = 0, lo
    for _ in range(100):
        x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        fx = f(x)
        if fx == 0:
            break
        if (fx > 0) == (f_hi > 0):
            hi, f_hi = x, fx
            f_lo, side = (f_lo / 2 if side == -1 else f_lo), -1
        else:
            lo, f_lo = x, fx
            f_hi, side = (f_hi / 2 if side == 1 else f_hi), 1
        if hi - lo < 1e-9:
            break
    return x


def beta_binomial_interval(y: Sequence[int], m: Sequence[int], z: float = Z95) -> list[float]:
    """Profile-likelihood interval of the mean μ of yᵢ ~ BetaBinomial(mᵢ, μ, s) over questions (Σm > 0): the μ where
    2(ℓ(μ̂) − ℓ(μ)) <= z², found on the logit scale; an end at 0 (1) when every y is 0 (every y is m).

    The fitted spread of the per-question rates is what widens the interval where few questions carry the items:
    as s → 0 each question is all or nothing, so the interval is never narrower than a binomial one over questions."""
    big_y, big_m = sum(y), sum(m)
    profile = beta_binomial_profile(y, m)
    if big_y == 0 or big_y == big_m:  # the likelihood's supremum (0) is at the edge
        top, best = (-_EDGE if big_y == 0 else _EDGE), 0.0
    else:  # golden section for the maximum, from a bracket around logit(p̂)
        t0 = math.log(big_y / (big_m - big_y))
        a, b = t0 - 2.0, t0 + 2.0
        while a > -_EDGE and profile(a) > profile(a + 0.5):
            a -= 2.0
        while b < _EDGE and profile(b) > profile(b - 0.5):
            b += 2.0
        c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
        fc, fd = profile(c), profile(d)
        while b - a > 1e-6:
            if fc > fd:
                b, d, fd = d, c, fc
                c = b - _GOLDEN * (b - a)
                fc = profile(c)
            else:
                a, c, fc = c, d, fd
                d = a + _GOLDEN * (b - a)
                fd = profile(d)
        top, best = (c, fc) if fc > fd else (d, fd)

    def excess(t: float) -> float:
        return 2 * (best - profile(t)) - z * z

    ends: list[float] = []
    for sign, at_edge in ((-1, big_y == 0), (1, big_y == big_m)):
        if not at_edge:  # step out from the maximum, doubling, until the deviance passes z², then the root
            inner, f_inner, step = top, -z * z, 0.5
            outer = top + sign * step
            f_outer = excess(outer)
            while f_outer <= 0 and abs(outer) < _EDGE:
                inner, f_inner, step = outer, f_outer, 2 * step
                outer = max(-_EDGE, min(_EDGE, outer + sign * step))
                f_outer = excess(outer)
            if f_outer > 0:
                lo, hi, f_lo, f_hi = (outer, inner, f_outer, f_inner) if sign < 0 else (inner, outer, f_inner, f_outer)
                ends.append(_expit(_root(excess, lo, hi, f_lo, f_hi)))
                continue
        ends.append(0.0 if sign < 0 else 1.0)
    return ends


def clustered_interval(y: Sequence[int], m: Sequence[int], distinct: tuple[Sequence[int], Sequence[int]],
                       z: float = Z95) -> tuple[list[float] | None, Fraction | None]:
    """(interval, n_eff) of a CLUSTERED proportion: the hull of its Wilson interval at the effective sample size
    and the beta-binomial profile interval fitted to `distinct` (the question's epochs counted once when identical)."""
    ci, n_eff = proportion_interval(y, m, z)
    if ci is None:
        return None, None
    lo, hi = beta_binomial_interval(*distinct, z=z)
    return [min(ci[0], lo), max(ci[1], hi)], n_eff


def tango_interval(b: float, c: float, n: float, z: float = Z95) -> list[float]:
    """Tango's (1998) score interval for a paired difference of proportions Δ = (b − c)/n: b pairs right on A only,
    c on B only, of n. The Δ with |b − c − nΔ| <= z·sqrt(n(2q̃ + Δ(1 − Δ))), q̃ the restricted maximum-likelihood
    estimate of P(B only) given Δ: the root of 2n·q² + W·q − cΔ(1 − Δ) = 0, W = −b − c + (2n − b + c)Δ. Never
    collapses: with b = c = 0 it is ±z²/(n + z²). Real-valued counts are allowed (see `paired_accuracy_interval`)."""
    if n <= 0:
        return [-1.0, 1.0]
    point = (b - c) / n

    def parts(d: float) -> tuple[float, float]:
        """(b − c − nΔ, its standard deviation under Δ): the statistic is their ratio, falling as Δ grows."""
        w = -b - c + (2 * n - b + c) * d
        q = (math.sqrt(max(0.0, w * w + 8 * n * c * d * (1 - d))) - w) / (4 * n)
        return b - c - n * d, math.sqrt(max(0.0, n * (2 * q + d * (1 - d))))

    def beyond(d: float, sign: int) -> bool:
        """Whether the statistic at Δ = d passes sign·z (d below the lower end: +1; above the upper end: −1)."""
        num, sd = parts(d)
        return num > z * sd if sign > 0 else num < -z * sd

    def end(lo: float, hi: float, sign: int) -> float:
        """Bisection for the crossing of sign·z between lo and hi."""
        for _ in range(200):
            mid = (lo + hi) / 2
            if beyond(mid, sign) == (sign > 0):
                lo = mid
            else:
                hi = mid
            if hi - lo <= 4e-16:
                break
        return (lo + hi) / 2

    lower = end(-1.0, point, 1) if beyond(-1.0, 1) else -1.0
    upper = end(point, 1.0, -1) if beyond(1.0, -1) else 1.0
    return [min(point, lower), max(point, upper)]


def paired_accuracy_interval(diffs: Sequence[Fraction], epochs: Sequence[int], z: float = Z95
                             ) -> tuple[list[float] | None, Fraction | None]:
    """(interval, n_eff) of the mean of per-question differences dᵢ = āᵢ − b̄ᵢ ∈ [−1, 1] (each side's mean over its
    audited epochs): Tango's interval at the effective sample size, as `effective_n` does for one proportion.

    b = Σ max(dᵢ, 0), c = Σ max(−dᵢ, 0) over the n questions (the discordant pairs when each side has one epoch);
    the model's variance of one question's difference at Δ̂ = (b − c)/n is σ² = (b + c)/n − Δ̂², the observed one of
    the mean v̂ = Σ(dᵢ − Δ̂)²/(n(n − 1)), so n_eff = σ²/v̂ (n − 1 with one epoch a side; more where epochs
    average out), capped at Σ `epochs` (each question's fewer epochs), n when v̂ = 0 or n = 1; Tango's interval of
    (b·n_eff/n, c·n_eff/n, n_eff)."""
    n = len(diffs)
    if n == 0:
        return None, None
    b = sum((d for d in diffs if d > 0), Fraction(0))
    c = -sum((d for d in diffs if d < 0), Fraction(0))
    point = (b - c) / n
    spread = sum(((d - point) ** 2 for d in diffs), Fraction(0))
    sigma2 = (b + c) / n - point * point
    n_eff = Fraction(n) if spread == 0 or n == 1 or sigma2 == 0 else min(
        sigma2 * n * (n - 1) / spread, Fraction(sum(epochs)))
    scale = n_eff / n
    return tango_interval(float(b * scale), float(c * scale), float(n_eff), z), n_eff


def mover_difference(point_a: float, ci_a: Sequence[float], point_b: float, ci_b: Sequence[float], rho: float
                     ) -> list[float]:
    """Newcombe's hybrid (MOVER, Zou & Donner 2008) interval of A − B from each side's own interval and the
    correlation ρ of the two estimates: lower = Δ − √((A − l_A)² − 2ρ(A − l_A)(u_B − B) + (u_B − B)²), upper
    likewise with the other ends; within [−1, 1]."""
    la, ua = point_a - ci_a[0], ci_a[1] - point_a
    lb, ub = point_b - ci_b[0], ci_b[1] - point_b
    d = point_a - point_b
    lower = d - math.sqrt(max(0.0, la * la - 2 * rho * la * ub + ub * ub))
    upper = d + math.sqrt(max(0.0, ua * ua - 2 * rho * ua * lb + lb * lb))
    return [max(-1.0, lower), min(1.0, upper)]


def _normal_p(z: float) -> float:
    """Two-sided normal p-value of |z|."""
    return math.erfc(abs(z) / math.sqrt(2))


def _gamma_p(a: float, x: float) -> float:
    """The regularised lower incomplete gamma P(a, x): its series below a + 1, else 1 − the continued fraction
    (Numerical Recipes 6.2), to double precision."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        ap = a
        for _ in range(1000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-17:
                break
        return total * math.exp(log_front)
    b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-17:
            break
    return 1 - math.exp(log_front) * h


def chi2_quantile(p: float, df: int) -> float:
    """The chi-square quantile: the x with P(df/2, x/2) = p, by bisection."""
    lo, hi = 0.0, max(1.0, df + 20 * math.sqrt(2 * df) + 50)
    for _ in range(200):
        mid = (lo + hi) / 2
        if _gamma_p(df / 2, mid / 2) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def epoch_sd_interval(sd: float | None, epochs: int, questions: int = 0, split: int = 0, level: float = LEVEL
                      ) -> tuple[list[float] | None, str | None]:
    """(interval, reason when null) of `accuracy_epoch_sd` over k = `epochs` epochs of `questions` questions:
    given the questions, the per-epoch accuracies are independent means of many answers (near normal), so
    (k − 1)s²/σ² ~ χ²(k − 1) and σ ∈ [s·√((k − 1)/χ²_{1−α/2}), s·√((k − 1)/χ²_{α/2})].

    Where s = 0 and no question's epochs disagree (`split` = 0, a deterministic agent), that would be the point 0;
    instead [0, √(π_U/(2n))]: σ² = Σaᵢ(1 − aᵢ)/n², a question with chance aᵢ splits its k epochs with chance
    ≥ 2aᵢ(1 − aᵢ), and none of n splitting bounds their mean chance by π_U = 1 − α^(1/n) (one-sided: the lower end
    0 is certain). Null with the reason where s is null, or s = 0 with split questions."""
    if sd is None:
        return None, "no question has an audited answer in every epoch"
    if sd == 0:
        if split or not questions:
            return None, "every epoch has the same accuracy although questions split: no interval is given"
        bound = 1 - (1 - level) ** (1 / questions)
        return [0.0, math.sqrt(bound / (2 * questions))], None
    alpha = 1 - level
    df = epochs - 1
    return [sd * math.sqrt(df / chi2_quantile(1 - alpha / 2, df)), sd * math.sqrt(df / chi2_quantile(alpha / 2, df))], None


def _split_questions(rows: Sequence[TrajectoryStats]) -> int:
    """Questions audited in every epoch whose epochs' accuracies are not all equal."""
    epochs = {r.epoch for r in rows}
    cells: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in rows:
        if r.semantic_match is not None:
            cells[r.qid][r.epoch][0] += 1
            cells[r.qid][r.epoch][1] += bool(r.semantic_match)
    return sum(1 for per in cells.values() if len(per) == len(epochs)
               and len({Fraction(c, a) for a, c in per.values()}) > 1)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: binomial(p = 1/2) on the discordant pairs; 1 when there are none."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = term = 1
    for i in range(k):  # C(n, i + 1) from C(n, i): one multiplication each, not k binomials afresh
        term = term * (n - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def sign_flip(diffs: Sequence[Fraction], max_cells: int = DP_CELLS) -> tuple[float, str]:
    """Two-sided sign-flip test of mean difference 0: (p-value, method), exact for any number of differences.

    The m non-zero |dᵢ| are scaled to integers xᵢ by their common denominator; U = the sum of the xᵢ given a +
    sign has the distribution of a subset sum, counted by dynamic programming (each difference adds the counts
    shifted by xᵢ; integers, exact in float64 while m <= 52, rescaled by exact powers of two), and
    p = P(|2U − Σx| >= |Σ signed x|) = the count of those sign vectors / 2**m.
    When m·Σx would exceed `max_cells`, each |dᵢ| is first rounded to a grid of step Σ|d|·m/max_cells
    ("sign_flip_dp_grid"): still an exact test, of the rounded differences (rounding is odd, so the null stays
    symmetric).
    """
    nz = [d for d in diffs if d != 0]
    den = math.lcm(*(d.denominator for d in nz)) if nz else 1
    return sign_flip_scaled([int(d * den) for d in nz], max_cells)


def sign_flip_scaled(signed: Sequence[int], max_cells: int = DP_CELLS) -> tuple[float, str]:
    """`sign_flip` of differences already scaled to integers by a common factor (zeros are ignored)."""
    signed = [x for x in signed if x != 0]
    method = "sign_flip_exact_dp"
    cells = len(signed) * sum(abs(x) for x in signed)
    if cells > max_cells:  # |x| -> round(|x| · max_cells / cells), half up, in integers; the sign kept
        signed = [(1 if x > 0 else -1) * ((2 * abs(x) * max_cells + cells) // (2 * cells)) for x in signed]
        signed = [x for x in signed if x != 0]
        method = "sign_flip_dp_grid"
    xs = sorted(abs(x) for x in signed)
    total, observed = sum(xs), abs(sum(signed))
    if observed == 0:
        return 1.0, method
    dist = np.zeros(total + 1, dtype=np.float64)  # subset-sum counts, scaled down by 2**-RESCALE now and then
    dist[0] = 1.0
    reach = pending = 0
    for x in xs:
        reach += x
        dist[x:reach + 1] += dist[:reach + 1 - x]  # numpy buffers the overlap: the sum of the old values
        pending += 1
        if pending == _RESCALE:  # a power of two: exact, and the counts stay far below float64's range
            dist[:reach + 1] *= 2.0**-_RESCALE
            pending = 0
    lower = (total - observed) // 2  # |2U − T| >= obs  <=>  U <= (T − obs)/2 or (by symmetry, as likely) U >= …
    return min(1.0, 2 * math.fsum(dist[:lower + 1].tolist()) * 2.0**-pending), method


def holm(ps: Mapping[str, float | None]) -> dict[str, float | None]:
    """Holm-adjusted p-values over the defined ones (ties in key order); None stays None."""
    order = sorted((p, k) for k, p in ps.items() if p is not None)
    m = len(order)
    out: dict[str, float | None] = dict.fromkeys(ps)
    running = 0.0
    for i, (p, k) in enumerate(order):
        running = max(running, min(1.0, (m - i) * p))
        out[k] = running
    return out


class _Pair:
    """One comparison over the questions both arms ran (`qids`): on the questions where num/den is defined on
    both sides (`used`), the difference of per-question means as an integer over a common `scale`, else 0."""

    def __init__(self, ta: QuestionTable, tb: QuestionTable, num: str, den: str):
        a = dict(zip(ta.qids, zip(ta.column(num), ta.column(den), strict=True), strict=True))
        b = dict(zip(tb.qids, zip(tb.column(num), tb.column(den), strict=True), strict=True))
        self.qids = tuple(sorted(set(a) & set(b)))
        paired = set(paired_qids({q: v[1] for q, v in a.items()}, {q: v[1] for q, v in b.items()}))
        self.used = [q in paired for q in self.qids]
        self.counts = [(a[q][1], b[q][1]) for q, u in zip(self.qids, self.used, strict=True) if u]
        self.scale = math.lcm(*(x for c in self.counts for x in c)) if self.counts else 1
        self.nums = [(a[q][0] * (self.scale // a[q][1]) - b[q][0] * (self.scale // b[q][1])) if u else 0
                     for q, u in zip(self.qids, self.used, strict=True)]
        self.n = len(self.counts)

    def differences(self) -> list[Fraction]:
        """The per-question differences of the used questions, exact."""
        return [Fraction(x, self.scale) for x, u in zip(self.nums, self.used, strict=True) if u]

    def paired(self) -> tuple[str, ...]:
        """The used questions."""
        return tuple(q for q, u in zip(self.qids, self.used, strict=True) if u)

    def mean(self) -> float | None:
        return float(Fraction(sum(self.nums), self.scale * self.n)) if self.n else None


def _accuracy_test(pair: _Pair, out: Pair) -> None:
    """The accuracy difference's p-value and test: McNemar with one audited epoch per question on both sides, else
    the exact sign-flip test."""
    if all(x == 1 and y == 1 for x, y in pair.counts):  # one audited epoch per question on both sides: McNemar
        a_only = sum(1 for d in pair.nums if d > 0)
        b_only = sum(1 for d in pair.nums if d < 0)
        out.accuracy_diff_p, out.accuracy_test = mcnemar_exact(a_only, b_only), "mcnemar_exact"
        out.discordant = Discordant(a_only_correct=a_only, b_only_correct=b_only)
        return
    out.accuracy_diff_p, out.accuracy_test = sign_flip_scaled(pair.nums)


SUPPORT_DIFF_TEST = "mover_inverted"  # the p-value of the support-rate difference: where its own interval reaches 0


def support_difference(ta: QuestionTable, tb: QuestionTable, qids: Sequence[str], out: Pair, z: float = Z95) -> None:
    """`surface_support_rate_diff` and its interval and p-value: over the questions with valid items on both sides
    (`qids`), R_A − R_B with R = Σyᵢ/Σmᵢ, the difference of the two ratio estimates a reader gets by subtracting the
    rates over those questions. Interval: Newcombe's hybrid (`mover_difference`) of each side's own clustered
    interval over those questions (`clustered_interval`) with ρ, the correlation of the two ratios' linearised
    question totals eᵢ = yᵢ − R·mᵢ (the delta method's), shrunk by (n − 1)/n so that identical sides still
    leave an interval. p-value: the two-sided level at which that interval's end reaches 0 (so p <= 0.05 exactly
    when the 95 % interval excludes 0)."""
    out.surface_support_rate_diff = out.surface_support_rate_diff_ci = None
    out.surface_support_rate_diff_p = out.surface_support_rate_test = None
    if not qids:
        return
    sides = []
    for t in (ta, tb):
        where = {q: i for i, q in enumerate(t.qids)}
        idx = [where[q] for q in qids]
        y, m = t.column("supported"), t.column("valid")
        dy, dm = t.distinct[SUPPORT]
        ys, ms = [y[i] for i in idx], [m[i] for i in idx]
        ratio = Fraction(sum(ys), sum(ms))
        sides.append((ys, ms, ([dy[i] for i in idx], [dm[i] for i in idx]), ratio,
                      [yi - ratio * mi for yi, mi in zip(ys, ms, strict=True)]))
    (ya, ma, da, ra, ea), (yb, mb, db, rb, eb) = sides
    n = len(qids)
    den = sum(e * e for e in ea) * sum(e * e for e in eb)
    rho = 0.0 if den == 0 else float(sum(x * y for x, y in zip(ea, eb, strict=True))) / math.sqrt(float(den))
    rho *= (n - 1) / n
    diff = float(ra - rb)

    def interval(level_z: float) -> list[float]:
        ca, _ = clustered_interval(ya, ma, da, level_z)
        cb, _ = clustered_interval(yb, mb, db, level_z)
        assert ca is not None and cb is not None  # Σm > 0 on both sides of a paired question
        return mover_difference(float(ra), ca, float(rb), cb, rho)

    ci = interval(z)
    if diff == 0:
        p = 1.0
    else:  # the z at which the end towards 0 reaches it: bisection on z (the interval grows with z)
        side = 0 if diff > 0 else 1
        lo, hi = 0.0, 2 * z
        while (interval(hi)[side] > 0) == (diff > 0) and hi < 40:
            lo, hi = hi, 2 * hi
        for _ in range(40):
            mid = (lo + hi) / 2
            if (interval(mid)[side] > 0) == (diff > 0):
                lo = mid
            else:
                hi = mid
        p = _normal_p((lo + hi) / 2)
    out.surface_support_rate_diff, out.surface_support_rate_diff_ci = diff, list(ci)
    out.surface_support_rate_diff_p, out.surface_support_rate_test = p, SUPPORT_DIFF_TEST


def uncertainty(
    by_provider: dict[str, list[TrajectoryStats]], blocks: Mapping[str, ArmMetrics], *, replicates: int, seed: str,
    scores: dict[str, Scores] | None = None, usd: dict[str, dict[str, Fraction]] | None = None,
) -> dict[str, Pair]:
    """Each provider's block gets its intervals (`<metric>_ci` with `_n_eff` or `_ci_undefined`, `accuracy_wilson`);
    returns per pair "A|B" the paired differences, their intervals and p-values, and Holm's adjustment with more
    than one pair.

    `scores`: each provider's metrics.answer_scores, when the caller already has them (they are the slow part).
    `usd`: provider -> qid -> that question's USD over its trajectories (adds `usd_per_correct_ci`)."""
    names = sorted(by_provider)
    tables = {n: QuestionTable.from_rows(by_provider[n], (scores or {}).get(n)) for n in names}
    jobs: list[Job] = []
    for n in names:
        t = tables[n]
        cost = usd.get(n) if usd is not None else None
        spent = np.array([float(cost.get(q, 0)) for q in t.qids], dtype=np.float64) if cost is not None else None
        floats = np.stack([t.f1] + ([] if spent is None else [spent]), axis=1)
        jobs.append(Job(t.qids, t.ints, floats))
    pairs_of: dict[tuple[str, str], tuple[_Pair, _Pair]] = {
        (a, b): (_Pair(tables[a], tables[b], "correct", "audited"), _Pair(tables[a], tables[b], "supported", "valid"))
        for a, b in combinations(names, 2)}
    sums = replicate_sums(seed, replicates, jobs)
    for i, n in enumerate(names):
        t, block = tables[n], blocks[n]
        ints, floats = sums[i]

        def share(key: str, t: QuestionTable = t) -> tuple[Interval | None, float | None]:
            """A proportion's interval and effective sample size."""
            num, den = RATIOS[key]
            if key in CLUSTERED:
                ci, n_eff = clustered_interval(t.column(num), t.column(den), t.distinct[key])
            else:
                ci, n_eff = proportion_interval(t.numerator(num), t.column(den))
            return None if ci is None else list(ci), None if n_eff is None else float(n_eff)

        def boot(key: str, t: QuestionTable = t, ints: Floats = ints, floats: Floats = floats
                 ) -> tuple[Interval | None, int]:
            """A mean's question-bootstrap interval and its replicates with a zero denominator."""
            num, den = RATIOS[key]
            d = ints[:, _COL[den]]
            values = _divide(floats[:, 0] if num == F1 else ints[:, _COL[num]], d)
            ci = None if t.point(key) is None else percentile_interval(values, units=len(t.qids))
            return None if ci is None else list(ci), int(np.count_nonzero(d == 0))

        block.accuracy_ci, block.accuracy_n_eff = share(ACCURACY)
        block.exact_match_ci, block.exact_match_n_eff = share(EXACT_MATCH)
        block.token_f1_ci, block.token_f1_n_eff = share(TOKEN_F1)
        block.surface_support_rate_ci, block.surface_support_rate_n_eff = share(SUPPORT)
        block.gold_rank1_share_ci, block.gold_rank1_share_n_eff = share(RANK1)
        block.accuracy_wilson = block.accuracy_ci
        if (spread := epoch_spread(by_provider[n])) is not None:  # k >= 2 epochs
            sd_ci, reason = epoch_sd_interval(
                spread[0], len({r.epoch for r in by_provider[n]}), spread[1], _split_questions(by_provider[n]))
            block.accuracy_epoch_sd_ci = None if sd_ci is None else list(sd_ci)
            if reason is not None:
                block.accuracy_epoch_sd_ci_reason = reason
        block.searches_per_trajectory_ci, block.searches_per_trajectory_ci_undefined = boot("searches_per_trajectory")
        block.fetches_per_trajectory_ci, block.fetches_per_trajectory_ci_undefined = boot("fetches_per_trajectory")
        block.input_tokens_per_trajectory_ci, block.input_tokens_per_trajectory_ci_undefined = boot(
            "input_tokens_per_trajectory")
        block.output_tokens_per_trajectory_ci, block.output_tokens_per_trajectory_ci_undefined = boot(
            "output_tokens_per_trajectory")
        block.reasoning_tokens_per_trajectory_ci, block.reasoning_tokens_per_trajectory_ci_undefined = boot(
            "reasoning_tokens_per_trajectory")
        block.page_tokens_per_trajectory_ci, block.page_tokens_per_trajectory_ci_undefined = boot(
            "page_tokens_per_trajectory")
        block.contradiction_gold_ratio_ci = _ratio_of_shares(t, "contradicted", "supported", "valid")
        block.tokens_per_correct_ci, block.tokens_per_correct_ci_undefined = _per_correct(
            t, ints[:, _COL["input_tokens"]] + ints[:, _COL["output_tokens"]], ints)
        if floats.shape[1] > 1:  # the provider's USD per question was given
            block.usd_per_correct_ci, block.usd_per_correct_ci_undefined = _per_correct(t, floats[:, 1], ints)
    pairs: dict[str, Pair] = {}
    for (a, b), (acc, ssr) in pairs_of.items():
        out = Pair(paired_questions=acc.n, surface_support_rate_paired_questions=ssr.n)
        out.accuracy_diff = acc.mean()
        ci, n_eff = paired_accuracy_interval(acc.differences(), [min(c) for c in acc.counts])
        out.accuracy_diff_ci, out.accuracy_diff_n_eff = None if ci is None else list(ci), None if n_eff is None else float(n_eff)
        if out.accuracy_diff is None:
            out.accuracy_diff_p = out.accuracy_test = None
        else:
            _accuracy_test(acc, out)
        support_difference(tables[a], tables[b], ssr.paired(), out)
        pairs[f"{a}|{b}"] = out
    if len(pairs) > 1:
        adjusted = holm({k: _given(v.accuracy_diff_p) for k, v in pairs.items()})
        adjusted_support = holm({k: _given(v.surface_support_rate_diff_p) for k, v in pairs.items()})
        for k, v in pairs.items():
            v.p_holm, v.surface_support_rate_diff_p_holm = adjusted[k], adjusted_support[k]
    return pairs


def _given(x: float | None | msgspec.UnsetType) -> float | None:
    """A p-value, None when the pair has none."""
    return None if isinstance(x, msgspec.UnsetType) else x


def _ratio_of_shares(t: QuestionTable, num: str, den: str, unit: str) -> list[float | None] | None:
    """Σnum/Σden, both counted among the same units: num's share over den's share, each its proportion interval at
    97.5 %, ends divided crosswise (Bonferroni: >= 95 % whatever their dependence); null without a den, an upper
    end over a lower share of 0 unbounded (null)."""
    if int(t.ints[:, _COL[den]].sum()) == 0:
        return None
    top, _ = proportion_interval(t.column(num), t.column(unit), Z975)
    bottom, _ = proportion_interval(t.column(den), t.column(unit), Z975)
    return None if top is None or bottom is None else _crosswise(top, bottom)


def _crosswise(top: Sequence[float], bottom: Sequence[float]) -> list[float | None]:
    """The Bonferroni ratio interval of two 97.5 % intervals: ends divided crosswise, an upper end over a lower
    bottom of 0 unbounded (null)."""
    return [top[0] / bottom[1], None if bottom[0] == 0 else top[1] / bottom[0]]


def _per_correct(t: QuestionTable, totals: Floats, ints: Floats) -> tuple[list[float | None] | None, int]:
    """(interval, undefined replicates) of Σx/Σcorrect as (mean x per trajectory) / (correct share), Bonferroni;
    `totals`: Σx per replicate."""
    trajectories = ints[:, _COL["trajectories"]]
    mean = percentile_interval(_divide(totals, trajectories), level=1 - (1 - LEVEL) / 2, units=len(t.qids))
    share, _ = proportion_interval(t.column("correct"), t.column("trajectories"), Z975)
    undefined = int(np.count_nonzero(trajectories == 0))
    if mean is None or share is None or int(t.ints[:, _COL["correct"]].sum()) == 0:
        return None, undefined
    return _crosswise(mean, share), undefined


def methods(providers: Mapping[str, ArmMetrics], pairs: Mapping[str, Pair]) -> dict[str, str]:
    """The report's `uncertainty.methods`: {interval or p-value key: method} for the keys it has; a test that
    differs between pairs is named by every name used, joined by "+" (each pair says its own in `*_test`)."""
    present = {k for block in (*providers.values(), *pairs.values()) for k in msgspec.to_builtins(block)}
    out = {k: v for k, v in METHODS.items() if k in present}
    for p_key, used in (("accuracy_diff_p", sorted({c.accuracy_test for c in pairs.values()
                                                    if isinstance(c.accuracy_test, str) and c.accuracy_test})),
                        (field_key(Pair, lambda c: c.surface_support_rate_diff_p), sorted({c.surface_support_rate_test for c in pairs.values()
                                                                if isinstance(c.surface_support_rate_test, str)
                                                                and c.surface_support_rate_test}))):
        if used:
            out[p_key] = "+".join(used)
    return out
