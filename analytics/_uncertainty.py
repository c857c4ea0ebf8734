"""SPEC §12 uncertainty: question-bootstrap percentile intervals, Wilson, paired differences, McNemar and sign-flip tests.

Vectorised over replicates: each provider's trajectories are summed per question into a table of sufficient
statistics (one row per qid, sorted), a replicate is the vector of how often each question was drawn, and every
replicate's sums are one matrix product of those counts with the table. The integer columns stay integers in
float64 (sums far below 2**53), so the product is exact whatever order BLAS adds in; token F1, the one fractional
column, is summed per replicate by numpy's own (single-threaded, fixed-order) reduction. Same events and seed,
same bytes.

Draws, as a function of `--seed S`: for a sorted qid list of length n, a PCG64 generator seeded with the first
16 bytes of sha256("searchtrace.bootstrap/1\\0" S "\\0" qid_1 "\\0" … qid_n) (big-endian) draws B rows of n
indices in [0, n) with `Generator.integers`, in chunks of rows; row r's count of index i is how often qid i is in
replicate r. Providers (and provider pairs) with the same question list therefore share the same replicates,
which is what makes a pair's differences paired. Interval: numpy's linear-interpolation 2.5 % and 97.5 %
quantiles of the replicates where the statistic is defined (a replicate with a zero denominator is skipped).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from searchtrace.analytics._metrics import Scores, TrajectoryStats, answer_scores

Z95 = 1.959964
LEVEL = 0.95
EXACT_SIGN_FLIP_MAX = 20  # non-zero differences up to which the sign-flip test enumerates every sign vector
SIGN_FLIP_DRAWS = 100_000
_CHUNK_CELLS = 2000000  # replicate rows per chunk x questions: bounds the memory of one weight matrix

Floats = npt.NDArray[np.float64]

# Integer columns of a question table (sums over the question's trajectories, every epoch).
COLUMNS = (
    "trajectories", "audited", "correct", "em", "valid", "supported", "contradicted", "supported_appearances",
    "supported_rank1", "searches", "fetches", "input_tokens", "output_tokens", "reasoning_tokens", "page_tokens",
)
_COL = {c: i for i, c in enumerate(COLUMNS)}
F1 = "f1"  # the fractional column, kept apart

# Report key -> (numerator column, denominator column): each is a ratio of sums over trajectories (SPEC §5).
RATIOS: dict[str, tuple[str, str]] = {
    "accuracy": ("correct", "audited"),
    "exact_match": ("em", "trajectories"),
    "token_f1": (F1, "trajectories"),
    "surface_support_rate": ("supported", "valid"),
    "gold_rank1_share": ("supported_rank1", "supported_appearances"),
    "contradiction_gold_ratio": ("contradicted", "supported"),
    "searches_per_trajectory": ("searches", "trajectories"),
    "fetches_per_trajectory": ("fetches", "trajectories"),
    "input_tokens_per_trajectory": ("input_tokens", "trajectories"),
    "output_tokens_per_trajectory": ("output_tokens", "trajectories"),
    "reasoning_tokens_per_trajectory": ("reasoning_tokens", "trajectories"),
    "page_tokens_per_trajectory": ("page_tokens", "trajectories"),
}
PAIRED = ("accuracy", "surface_support_rate")


class QuestionTable:
    """One provider's sufficient statistics per question: `ints` (n x len(COLUMNS)) and `f1` (n), rows by sorted qid."""

    def __init__(self, qids: tuple[str, ...], ints: Floats, f1: Floats, cells: dict[str, list[tuple[int, int]]]):
        self.qids = qids
        self.ints = ints
        self.f1 = f1
        self.cells = cells  # qid -> [(audited, correct)] per trajectory, for the paired tests

    @classmethod
    def from_rows(cls, rows: Sequence[TrajectoryStats], scores: Scores | None = None) -> QuestionTable:
        scores = answer_scores(rows) if scores is None else scores
        qids = tuple(sorted({r.qid for r in rows}))
        where = {q: i for i, q in enumerate(qids)}
        at = np.array([where[r.qid] for r in rows], dtype=np.int64)
        per_row = np.array(
            [
                (1, r.semantic_match is not None, bool(r.semantic_match), s[0], r.valid, r.supported, r.contradicted,
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
        cells: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for r in rows:
            cells[r.qid].append((int(r.semantic_match is not None), int(bool(r.semantic_match))))
        return cls(qids, ints.astype(np.float64), f1.astype(np.float64), dict(cells))

    def subset(self, qids: tuple[str, ...]) -> QuestionTable:
        where = {q: i for i, q in enumerate(self.qids)}
        idx = np.array([where[q] for q in qids], dtype=np.int64)
        return QuestionTable(qids, self.ints[idx], self.f1[idx], {q: self.cells[q] for q in qids})

    def point(self, key: str) -> Fraction | None:
        """The statistic over the table itself, exact (the paired differences are formed from these)."""
        num, den = RATIOS[key]
        d = int(self.ints[:, _COL[den]].sum())
        if d == 0:
            return None
        n = Fraction(float(self.f1.sum())) if num == F1 else Fraction(int(self.ints[:, _COL[num]].sum()))
        return n / d


def _rng(seed: str, *parts: str) -> np.random.Generator:
    h = hashlib.sha256("\0".join(("searchtrace.bootstrap/1", seed, *parts)).encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(h[:16], "big")))


def weight_chunks(seed: str, qids: tuple[str, ...], replicates: int) -> Iterator[Floats]:
    """The replicates' draw counts (rows: replicates, columns: qids), chunk by chunk, as documented above."""
    n = len(qids)
    rng = _rng(seed, *qids)
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


class Replicates:
    """Every replicate's column sums of one question table: `ints` (B x len(COLUMNS)) and `f1` (B)."""

    def __init__(self, ints: Floats, f1: Floats):
        self.ints = ints
        self.f1 = f1

    def ratio(self, key: str) -> Floats:
        """The statistic per replicate; NaN where its denominator is 0."""
        num, den = RATIOS[key]
        d = self.ints[:, _COL[den]]
        n = self.f1 if num == F1 else self.ints[:, _COL[num]]
        out = np.full(d.shape, np.nan)
        np.divide(n, d, out=out, where=d != 0)
        return out


def replicate_all(seed: str, replicates: int, tables: Sequence[QuestionTable]) -> list[Replicates]:
    """Replicates of every table; tables with the same qid list share one pass over the same draws."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, t in enumerate(tables):
        groups[t.qids].append(i)
    out: list[Replicates | None] = [None] * len(tables)
    for qids, members in groups.items():
        ints: dict[int, list[Floats]] = defaultdict(list)
        f1s: dict[int, list[Floats]] = defaultdict(list)
        wide = np.hstack([tables[i].ints for i in members])  # one product for every member: faster than one each
        k = len(COLUMNS)
        for w in weight_chunks(seed, qids, replicates):
            sums = w @ wide  # exact: integer values far below 2**53
            for j, i in enumerate(members):
                ints[i].append(sums[:, j * k:(j + 1) * k])
                f1s[i].append((w * tables[i].f1).sum(axis=1))  # numpy's fixed-order reduction
        for i in members:
            out[i] = Replicates(np.concatenate(ints[i]), np.concatenate(f1s[i]))
    return [r for r in out if r is not None]


def percentile_interval(values: Floats) -> list[float] | None:
    """The central 95 % of the defined replicates (None when none is defined)."""
    ok = values[~np.isnan(values)]
    if ok.size == 0:
        return None
    lo, hi = np.quantile(ok, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
    return [float(lo), float(hi)]


def wilson(correct: int, n: int, z: float = Z95) -> list[float] | None:
    """Wilson score interval for a binomial proportion (None when n = 0)."""
    if n == 0:
        return None
    p = correct / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    lo = 0.0 if correct == 0 else max(0.0, centre - half)  # exact at the edges (p̂ = 0: lo = 0; p̂ = 1: hi = 1)
    hi = 1.0 if correct == n else min(1.0, centre + half)
    return [lo, hi]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: binomial(p = 1/2) on the discordant pairs; 1 when there are none."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def sign_flip(diffs: Sequence[Fraction], rng: np.random.Generator | None = None) -> tuple[float, str]:
    """Two-sided sign-flip test of mean difference 0: (p-value, method).

    Exact over all 2**m sign vectors of the m non-zero differences when m <= 20 (p = share with |sum| >= the
    observed |sum|); else SIGN_FLIP_DRAWS random sign vectors from `rng`, p = (1 + hits) / (1 + draws).
    Differences are scaled to integers by their common denominator, so every comparison is exact.
    """
    nz = [d for d in diffs if d != 0]
    m = len(nz)
    if m == 0:
        return 1.0, "sign_flip_exact"
    den = math.lcm(*(d.denominator for d in nz))
    ints = [int(d * den) for d in nz]
    observed = abs(sum(ints))
    if sum(abs(x) for x in ints) >= 2**53:  # beyond exact float64 integers: rescale (loses nothing that matters)
        scale = sum(abs(x) for x in ints) / 2**50
        vec = np.array([x / scale for x in ints], dtype=np.float64)
        obs = abs(float(vec.sum()))
    else:
        vec = np.array(ints, dtype=np.float64)
        obs = float(observed)
    if m <= EXACT_SIGN_FLIP_MAX:
        total = 1 << m
        hits = 0
        step = 1 << 16
        bits = np.arange(m, dtype=np.int64)
        for start in range(0, total, step):
            codes = np.arange(start, min(total, start + step), dtype=np.int64)
            signs = ((codes[:, None] >> bits) & 1) * 2.0 - 1.0
            hits += int(np.count_nonzero(np.abs(signs @ vec) >= obs))
        return hits / total, "sign_flip_exact"
    if rng is None:
        raise ValueError("sign_flip needs a generator for more than 20 non-zero differences")
    hits = 0
    rows = max(1, _CHUNK_CELLS // m)
    done = 0
    while done < SIGN_FLIP_DRAWS:
        b = min(rows, SIGN_FLIP_DRAWS - done)
        signs = rng.integers(0, 2, size=(b, m)).astype(np.float64) * 2.0 - 1.0
        hits += int(np.count_nonzero(np.abs(signs @ vec) >= obs))
        done += b
    return (1 + hits) / (1 + SIGN_FLIP_DRAWS), "sign_flip_mc"


def accuracy_test(a: QuestionTable, b: QuestionTable, seed: str, key: str) -> dict[str, Any]:
    """The accuracy difference's p-value over the common questions `a.qids` (== `b.qids`): McNemar when every
    question has one trajectory per side, else the sign-flip test on per-question mean differences."""
    pairs = [(a.cells[q], b.cells[q]) for q in a.qids]
    if all(len(x) == 1 and len(y) == 1 for x, y in pairs):
        a_only = sum(1 for x, y in pairs if x[0][0] and y[0][0] and x[0][1] and not y[0][1])
        b_only = sum(1 for x, y in pairs if x[0][0] and y[0][0] and y[0][1] and not x[0][1])
        return {"accuracy_diff_p": mcnemar_exact(a_only, b_only), "accuracy_test": "mcnemar_exact",
                "discordant": {"a_only_correct": a_only, "b_only_correct": b_only}}
    diffs = []
    for x, y in pairs:
        na, nb = sum(c[0] for c in x), sum(c[0] for c in y)
        if na and nb:
            diffs.append(Fraction(sum(c[1] for c in x), na) - Fraction(sum(c[1] for c in y), nb))
    p, method = sign_flip(diffs, _rng(seed, "sign-flip", key))
    return {"accuracy_diff_p": p, "accuracy_test": method}


def _diff(x: Fraction | None, y: Fraction | None) -> float | None:
    return None if x is None or y is None else float(x - y)


def uncertainty(
    by_provider: dict[str, list[TrajectoryStats]], *, replicates: int, seed: str,
    scores: dict[str, Scores] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(per provider: `<metric>_ci` and `accuracy_wilson`; per pair "A|B": paired differences, intervals, p-value).

    `scores`: each provider's metrics.answer_scores, when the caller already has them (they are the slow part)."""
    names = sorted(by_provider)
    tables = {n: QuestionTable.from_rows(by_provider[n], (scores or {}).get(n)) for n in names}
    jobs: list[QuestionTable] = [tables[n] for n in names]
    pair_tables: dict[tuple[str, str], tuple[QuestionTable, QuestionTable]] = {}
    for a, b in combinations(names, 2):
        common = tuple(sorted(set(tables[a].qids) & set(tables[b].qids)))
        ta = tables[a] if common == tables[a].qids else tables[a].subset(common)
        tb = tables[b] if common == tables[b].qids else tables[b].subset(common)
        pair_tables[(a, b)] = (ta, tb)
        jobs += [t for t in (ta, tb) if all(t is not j for j in jobs)]
    reps = replicate_all(seed, replicates, jobs)
    rep_of = {id(t): r for t, r in zip(jobs, reps, strict=True)}
    providers: dict[str, dict[str, Any]] = {}
    for n in names:
        t, r = tables[n], rep_of[id(tables[n])]
        block: dict[str, Any] = {}
        for key in RATIOS:
            block[f"{key}_ci"] = None if t.point(key) is None else percentile_interval(r.ratio(key))
        audited = int(t.ints[:, _COL["audited"]].sum())
        block["accuracy_wilson"] = wilson(int(t.ints[:, _COL["correct"]].sum()), audited)
        providers[n] = block
    pairs: dict[str, dict[str, Any]] = {}
    for (a, b), (ta, tb) in pair_tables.items():
        key = f"{a}|{b}"
        ra, rb = rep_of[id(ta)], rep_of[id(tb)]
        out: dict[str, Any] = {"paired_questions": len(ta.qids)}
        for metric in PAIRED:
            d = _diff(ta.point(metric), tb.point(metric))
            out[f"{metric}_diff"] = d
            out[f"{metric}_diff_ci"] = None if d is None else percentile_interval(ra.ratio(metric) - rb.ratio(metric))
        if out["accuracy_diff"] is None:
            out.update({"accuracy_diff_p": None, "accuracy_test": None})
        else:
            out.update(accuracy_test(ta, tb, seed, key))
        pairs[key] = out
    return providers, pairs
