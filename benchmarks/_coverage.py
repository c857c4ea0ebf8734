"""`searchtrace bench coverage`: docs/concepts/statistics.md coverage simulation — stores with known truth through the report's own code.

A store is a list of `analytics.TrajectoryStats` rows (what the report's SQL yields per trajectory), drawn from a
model whose every figure has a closed-form truth, and handed to the report's `analytics.uncertainty` exactly as
`build_report` does (answer_scores first); with a judge, the items also become `JudgedCase`s for the report's
`analytics.correction`. Each interval either covers its truth or not; 2,000 stores per scenario estimate the
coverage (Monte Carlo standard error ≈ 0.5 points at 95 %).

The model, per question i (clustered at the question: every epoch and every item of i share its parameters):
- answer: a_i = the chance an epoch is correct; deterministic agent: a_i ∈ {0, 1} ~ Bernoulli(p), every epoch a copy
  of the first (all fields); stochastic: a_i ~ Beta(2p, 2(1 − p)) (intra-question correlation 1/3), epochs
  independent given a_i. k = 1 is both. Every trajectory audited (partial audits in the null scenarios).
  A correct epoch answers the gold "alpha bravo charlie delta" exactly with chance ½, else "alpha bravo" (token
  F1 2/3); a wrong one "echo foxtrot" (F1 0). Truths: accuracy = p, exact_match = p/2, token_f1 = p/2 + (p/2)(2/3).
- items: m = 10 + Binomial(20, ½) valid items per trajectory, supported y ~ Binomial(m, s_i), s_i ~ Beta(4p, 4(1 − p))
  (items of a question correlated); contradicted ~ Binomial(m − y, 0.1); supported appearances y + Binomial(y, ½),
  of which rank 1 ~ Binomial(appearances, g_i), g_i ~ Beta(4p, 4(1 − p)). Truths (ratios of expectations, m, y, g_i
  independent): surface support rate = p, gold rank-1 share = p, contradiction-to-support ratio = 0.1(1 − p)/p.
- effort: searches 1 + Binomial(6, u_i), u_i ~ Beta(2, 3); fetches Binomial(4, v_i), v_i ~ Beta(1, 3); input tokens
  2000 + 3000·searches + U{0..999}; reasoning Binomial(400, u_i); output 50 + Binomial(200, ½) + reasoning (reasoning
  tokens are part of the output, as every recording path counts them); page 1500·fetches.
  Truths: 3.4, 1.0, 12,699.5, 310, 160, 1,500 per trajectory; tokens_per_correct = 13,009.5 / p.
Null scenarios: two arms "a" and "b" share every question's parameters (stochastic agent, p = 0.3), so the
question-level differences the report estimates are 0: k = 1 both (McNemar), k = 3 both, unbalanced (a has 3
epochs on the harder half of the questions, a_i below the median, 1 on the rest; b has 1), and k = 1 with each
answer audited with chance 0.6. Truth of the paired accuracy and support rate differences: 0; the tests should reject
at ≤ 5 %.
Judge scenarios: providers "long" (surfaces of U(600, 1400) characters) and "short" (U(100, 300)) with the same
true support: item truly supports with chance s_i ~ Beta(0.8, 3.2) (mean 0.2), else truly contradicts with chance
0.1. The judge says supports with chance 0.9 when true, else with the false-positive rate 0.02 + 0.1·L/1000 (L:
the surface's length): so the judge's rate is 0.2·0.9 + 0.8·(0.02 + 0.1·E[L]/1000) = 0.276 (long), 0.212
(short); contradicts with chance 0.8 when true, else 0.01. The audit draws min(N_h, 40) cases of every stratum
(provider × label × judge value) and a human labels them with the truth. Truths: surface support rate 0.2 for
both, contradiction rate 0.08, judge_tpr 0.9, judge_tnr 0.88 (long) / 0.96 (short), for contradicts 0.8 / 0.99;
every difference between the providers 0 (the judge's own long − short difference is +0.064).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

import click
import msgspec
import numpy as np
import numpy.typing as npt

from searchtrace.analytics import arm_key, pair_key

GOAL = 0.925  # every 95 % interval's coverage in every scenario (docs/concepts/statistics.md)
ALPHA = 0.05  # a test rejects when p ≤ ALPHA; under the null it may do so at most this often
P_GRID = (0.02, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.98)
QUICK_P = (0.02, 0.1, 0.5, 0.9, 0.98)
NULL_P = 0.3
GOLD, HALF, WRONG = "alpha bravo charlie delta", "alpha bravo", "echo foxtrot"  # token F1 against GOLD: 1, 2/3, 0
HALF_F1 = 2 / 3
GAMMA = 0.1  # share of unsupported items that contradict
# effort truths per trajectory (see the module docstring)
SEARCHES, FETCHES = 1 + 6 * 0.4, 4 * 0.25
INPUT, REASONING, PAGE = 2000 + 3000 * SEARCHES + 499.5, 400 * 0.4, 1500 * FETCHES
OUTPUT = 50 + 100.0 + REASONING  # reasoning is part of the output
# judge scenario
SIGMA, CONTRA, TPR, TPR_C, FPR_C = 0.2, 0.1, 0.9, 0.8, 0.01
SURFACE_CHARS = {"long": (600.0, 1400.0), "short": (100.0, 300.0)}
AUDIT_PER_STRATUM = 40

Ints = npt.NDArray[np.int64]
Kind = Literal["single", "null", "judge", "pair"]
RANKS = {"long": 3, "short": 10}  # rank-biased judge: a provider's results sit at ranks 1..R


def fpr(chars: Any) -> Any:
    """The judge's false-positive rate for supports_gold on a surface of `chars` characters."""
    return 0.02 + 0.1 * chars / 1000


def rank_fpr(rank: npt.NDArray[np.int64] | int) -> Any:
    """The rank-biased judge's false-positive rate for supports_gold at result rank `rank` (1 = top)."""
    return 0.02 + 0.2 / rank


def mean_fpr(provider: str, bias: str = "length") -> float:
    if bias == "rank":
        return float(np.mean([rank_fpr(r) for r in range(1, RANKS[provider] + 1)]))
    lo, hi = SURFACE_CHARS[provider]
    return float(fpr((lo + hi) / 2))  # fpr is linear in the length, so its mean is at the mean length


class Scenario(msgspec.Struct, frozen=True, kw_only=True):
    """One cell of the simulation; `design` names the null scenario's epochs and audits."""

    kind: Kind
    n: int
    k: int = 1
    agent: str = "stochastic"  # "deterministic" | "stochastic" (k = 1: the two are the same model)
    p: float = NULL_P
    design: str = ""
    q: float = NULL_P  # pair: arm b's truth (arm a's is p)
    coupling: str = ""  # pair: "independent" (each arm its own question parameters) | "shared" (one uniform per
    # question decides both deterministic arms' answers: discordance only where the truths differ)
    audit: int = AUDIT_PER_STRATUM  # judge: labels drawn per stratum
    audit_strata: str = "all"  # judge: "all" | "true-only" (only judge-true cases audited)
    bias: str = "length"  # judge: its false positives grow with surface "length" or with a high "rank"

    @property
    def name(self) -> str:
        if self.kind == "single":
            agent = "" if self.k == 1 else f" {self.agent[:5]}"
            return f"n{self.n} k{self.k}{agent} p{self.p:g}"
        if self.kind == "null":
            return f"null n{self.n} {self.design}" + ("" if self.p == NULL_P else f" p{self.p:g}")
        if self.kind == "pair":
            return f"pair n{self.n} k{self.k} {self.p:g}-{self.q:g} {self.coupling}"
        extra = "" if self.audit == AUDIT_PER_STRATUM else f" audit{self.audit}"
        extra += "" if self.audit_strata == "all" else f" {self.audit_strata}"
        return f"judge n{self.n}{extra}" + ("" if self.bias == "length" else f" {self.bias}-biased")


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    """One figure checked in a scenario: `where` is a provider or a pair key, `key` the report key."""

    label: str
    where: str
    key: str
    truth: float
    kind: Literal["proportion", "other", "diff", "test", "point", "refused"]  # refused: must be null in every store
    target: bool = True  # False: shown for comparison only (the uncorrected judge rate is expected to fail)



Truth = Callable[[float], float]  # a figure's truth at the scenario's p
# the single scenarios' intervals, in column order: report key, short column name, kind, truth
SINGLE: tuple[tuple[str, str, Literal["proportion", "other"], Truth], ...] = (
    (arm_key(lambda m: m.accuracy_ci), "acc", "proportion", lambda p: p),
    (arm_key(lambda m: m.accuracy_wilson), "wils", "proportion", lambda p: p),
    (arm_key(lambda m: m.exact_match_ci), "em", "proportion", lambda p: p / 2),
    (arm_key(lambda m: m.surface_support_rate_ci), "ssr", "proportion", lambda p: p),
    (arm_key(lambda m: m.gold_rank1_share_ci), "rank1", "proportion", lambda p: p),
    (arm_key(lambda m: m.token_f1_ci), "f1", "proportion", lambda p: p / 2 + p / 2 * HALF_F1),
    (arm_key(lambda m: m.contradiction_gold_ratio_ci), "c/s", "other", lambda p: GAMMA * (1 - p) / p),
    (arm_key(lambda m: m.searches_per_trajectory_ci), "srch", "other", lambda p: SEARCHES),
    (arm_key(lambda m: m.fetches_per_trajectory_ci), "ftch", "other", lambda p: FETCHES),
    (arm_key(lambda m: m.input_tokens_per_trajectory_ci), "in", "other", lambda p: INPUT),
    (arm_key(lambda m: m.output_tokens_per_trajectory_ci), "out", "other", lambda p: OUTPUT),
    (arm_key(lambda m: m.reasoning_tokens_per_trajectory_ci), "reas", "other", lambda p: REASONING),
    (arm_key(lambda m: m.page_tokens_per_trajectory_ci), "page", "other", lambda p: PAGE),
    (arm_key(lambda m: m.tokens_per_correct_ci), "tok/c", "other", lambda p: (INPUT + OUTPUT) / p),
)
SHORT = {key: short for key, short, _, _ in SINGLE}
# the paired differences of the pair and null scenarios, accuracy then support: (estimate, interval, test) keys
DIFFS: tuple[tuple[str, str, str], ...] = (
    (pair_key(lambda c: c.accuracy_diff), pair_key(lambda c: c.accuracy_diff_ci), pair_key(lambda c: c.accuracy_diff_p)),
    (pair_key(lambda c: c.surface_support_rate_diff), pair_key(lambda c: c.surface_support_rate_diff_ci),
     pair_key(lambda c: c.surface_support_rate_diff_p)),
)
# the judge scenarios' keys: the judge's support rate and its correction, per provider and between the two
JUDGE_RATE_CI = arm_key(lambda m: m.surface_support_rate_ci)
CORRECTED, CORRECTED_CI = arm_key(lambda m: m.surface_support_rate_corrected), arm_key(
    lambda m: m.surface_support_rate_corrected_ci)
JUDGE_CIS: tuple[tuple[str, Callable[[str, str], float]], ...] = (  # key, truth for (provider, bias)
    (CORRECTED_CI, lambda prov, bias: SIGMA),
    (arm_key(lambda m: m.surface_contradiction_rate_corrected_ci), lambda prov, bias: (1 - SIGMA) * CONTRA),
    (arm_key(lambda m: m.judge_tpr_ci), lambda prov, bias: TPR),
    (arm_key(lambda m: m.judge_tnr_ci), lambda prov, bias: 1 - mean_fpr(prov, bias)),
    (arm_key(lambda m: m.judge_tpr_contradicts_ci), lambda prov, bias: TPR_C),
    (arm_key(lambda m: m.judge_tnr_contradicts_ci), lambda prov, bias: 1 - FPR_C),
)
JUDGE_DIFF_CI, JUDGE_DIFF_P = DIFFS[1][1:]
CORRECTED_DIFF_CI = pair_key(lambda c: c.surface_support_rate_corrected_diff_ci)
CORRECTED_DIFF_P = pair_key(lambda c: c.surface_support_rate_corrected_diff_p)


def scenarios(p_grid: Sequence[float]) -> list[Scenario]:
    out: list[Scenario] = []
    for n in (30, 100):
        for k, agent in ((1, "stochastic"), (3, "deterministic"), (3, "stochastic")):
            out += [Scenario(kind="single", n=n, k=k, agent=agent, p=p) for p in p_grid]
    for n in (30, 100):
        out += [Scenario(kind="null", n=n, k=k, design=d) for d, k in
                (("k1", 1), ("k3", 3), ("unbalanced", 3), ("k1-partial-audit", 1))]
    for n in (30, 100):  # the paired support difference where a few questions carry the support
        out.append(Scenario(kind="null", n=n, k=3, design="k3", p=0.02))
    for n in (30, 100):  # paired accuracy near the edges and without discordance
        out += [Scenario(kind="pair", n=n, k=1, p=a, q=b, coupling=c) for a, b in ((0.06, 0.02), (0.98, 0.94))
                for c in ("independent", "shared")]
        out += [Scenario(kind="pair", n=n, k=1, p=0.5, q=0.5, coupling="shared"),
                Scenario(kind="pair", n=n, k=3, p=0.06, q=0.02, coupling="independent")]
    out += [Scenario(kind="judge", n=n) for n in (30, 100)]
    out += [Scenario(kind="judge", n=100, audit=2), Scenario(kind="judge", n=100, audit=1),
            Scenario(kind="judge", n=100, audit_strata="true-only"), Scenario(kind="judge", n=100, bias="rank")]
    return out


def figures(s: Scenario) -> list[Figure]:
    """What each interval of the scenario should cover (its truth from the generating model) and each test."""
    p = s.p
    if s.kind == "single":
        return [Figure(label=key, where="a", key=key, truth=truth(p), kind=kind) for key, _, kind, truth in SINGLE]
    if s.kind in ("pair", "null"):
        diff = s.p - s.q if s.kind == "pair" else 0.0
        kinds: tuple[Literal["point", "diff", "test"], ...] = ("point", "diff") + (("test",) if s.kind == "null" else ())
        return [Figure(label=keys[i], where="a|b", key=keys[i], truth=diff, kind=kind)
                for i, kind in enumerate(kinds) for keys in DIFFS]
    out: list[Figure] = []
    refused = s.audit < 2 or s.audit_strata != "all"  # a stratum below the correction's minimum of 2 labels
    for prov in ("long", "short"):
        judge_rate = SIGMA * TPR + (1 - SIGMA) * mean_fpr(prov, s.bias)
        out += [
            Figure(label=f"{prov} uncorrected {JUDGE_RATE_CI}", where=prov, key=JUDGE_RATE_CI, truth=SIGMA,
                   kind="proportion", target=False),
            Figure(label=f"{prov} {JUDGE_RATE_CI} (of the judge's own rate {judge_rate:.3f})", where=prov,
                   key=JUDGE_RATE_CI, truth=judge_rate, kind="proportion"),
            Figure(label=f"{prov} {CORRECTED}", where=f"{prov}~c", key=CORRECTED, truth=SIGMA, kind="point"),
            *(Figure(label=f"{prov} {key}", where=f"{prov}~c", key=key, truth=truth(prov, s.bias), kind="other")
              for key, truth in JUDGE_CIS),
        ]
    out += [
        Figure(label=f"uncorrected {JUDGE_DIFF_CI}", where="long|short", key=JUDGE_DIFF_CI, truth=0.0, kind="diff",
               target=False),
        Figure(label=f"uncorrected {JUDGE_DIFF_P}", where="long|short", key=JUDGE_DIFF_P, truth=0.0, kind="test",
               target=False),
        Figure(label=CORRECTED_DIFF_CI, where="long|short~c", key=CORRECTED_DIFF_CI, truth=0.0, kind="diff"),
        Figure(label=CORRECTED_DIFF_P, where="long|short~c", key=CORRECTED_DIFF_P, truth=0.0, kind="test"),
    ]
    if refused:  # every corrected figure must be null: no guess for a stratum without its labels
        out = [f if not f.where.endswith("~c")
               else Figure(label=f.label, where=f.where, key=f.key, truth=f.truth, kind="refused") for f in out]
    return out


# --- generating stores -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Sets the BLAS thread variables while worker processes start (they inherit them), then restores ours."""
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    saved = {v: os.environ.get(v) for v in names}
    for v in names:
        os.environ.setdefault(v, "1")
    try:
        yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def _rng(seed: int, scenario: Scenario, store: int) -> np.random.Generator:
    h = hashlib.sha256(f"searchtrace.coverage/1\0{seed}\0{scenario.name}\0{store}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(h[:16], "big")))


def _beta(rng: np.random.Generator, mean: float, strength: float, size: int) -> npt.NDArray[np.float64]:
    return rng.beta(mean * strength, (1 - mean) * strength, size)


def arm(rng: np.random.Generator, provider: str, qids: Sequence[str], params: Mapping[str, npt.NDArray[np.float64]],
        epochs: Ints, *, deterministic: bool = False, audit_share: float = 1.0) -> list[Any]:
    """One provider's trajectories: `epochs[i]` of question i, from its parameters (see the module docstring)."""
    from searchtrace.analytics import TrajectoryStats

    qi = np.repeat(np.arange(len(qids)), epochs)
    ep = np.concatenate([np.arange(1, e + 1) for e in epochs]) if len(epochs) else np.zeros(0, np.int64)
    # a deterministic agent draws once per question and repeats it in every epoch
    src = np.arange(len(qids)) if deterministic else qi
    t = len(src)

    def per(name: str) -> npt.NDArray[np.float64]:
        return params[name][src]

    correct = rng.random(t) < per("a")
    em = correct & (rng.random(t) < 0.5)
    m = 10 + rng.binomial(20, 0.5, t)
    y = rng.binomial(m, per("s"))
    c = rng.binomial(m - y, GAMMA)
    app = y + rng.binomial(y, 0.5)
    r1 = rng.binomial(app, per("g"))
    searches = 1 + rng.binomial(6, per("u"))
    fetches = rng.binomial(4, per("v"))
    inp = 2000 + 3000 * searches + rng.integers(0, 1000, t)
    out = 50 + rng.binomial(200, 0.5, t)
    rea = rng.binomial(400, per("u"))
    out = out + rea  # reasoning is part of the output
    audited = rng.random(t) < audit_share
    cols = [correct, em, m, y, c, app, r1, searches, fetches, inp, out, rea, audited]
    if deterministic:
        cols = [np.asarray(x)[qi] for x in cols]
    correct, em, m, y, c, app, r1, searches, fetches, inp, out, rea, audited = (x.tolist() for x in cols)
    rows = []
    for j in range(len(qi)):
        qid, e = qids[qi[j]], int(ep[j])
        tid = f"cov:{provider}:{qid}" + ("" if e == 1 else f"~{e}")
        final = GOLD if em[j] else HALF if correct[j] else WRONG
        rows.append(TrajectoryStats(
            stream_id=f"traj:{tid}", trajectory_id=tid, provider=provider, qid=qid, epoch=e, gold_answer=GOLD,
            final_answer=final, semantic_match=bool(correct[j]) if audited[j] else None, searches=searches[j],
            fetches=fetches[j], input_tokens=inp[j], output_tokens=out[j], reasoning_tokens=rea[j],
            page_tokens=1500 * fetches[j], latency_us=0, domains=1, items=m[j], valid=m[j], invalid=0,
            snippet_only=m[j], page_visible=0, smart=0, missed=0, blind=y[j], noop=m[j] - y[j], discovered=0,
            supported=y[j], contradicted=c[j], supported_appearances=app[j], supported_rank1=r1[j]))
    return rows


def question_params(rng: np.random.Generator, n: int, p: float, *, deterministic: bool) -> dict[str, Any]:
    a = (rng.random(n) < p).astype(np.float64) if deterministic else _beta(rng, p, 2.0, n)
    return {"a": a, "s": _beta(rng, p, 4.0, n), "g": _beta(rng, p, 4.0, n), "u": rng.beta(2.0, 3.0, n),
            "v": rng.beta(1.0, 3.0, n)}


def qid_list(n: int) -> list[str]:
    return [f"q{i:04d}" for i in range(n)]


def single_store(s: Scenario, rng: np.random.Generator) -> dict[str, list[Any]]:
    det = s.agent == "deterministic"
    params = question_params(rng, s.n, s.p, deterministic=det)
    return {"a": arm(rng, "a", qid_list(s.n), params, np.full(s.n, s.k, np.int64), deterministic=det)}


def null_store(s: Scenario, rng: np.random.Generator) -> dict[str, list[Any]]:
    params = question_params(rng, s.n, s.p, deterministic=False)
    qids = qid_list(s.n)
    if s.design == "unbalanced":
        ka = np.where(params["a"] < np.median(params["a"]), 3, 1).astype(np.int64)
        kb = np.ones(s.n, np.int64)
    else:
        ka = kb = np.full(s.n, s.k, np.int64)
    share = 0.6 if s.design == "k1-partial-audit" else 1.0
    return {"a": arm(rng, "a", qids, params, ka, audit_share=share),
            "b": arm(rng, "b", qids, params, kb, audit_share=share)}


def pair_store(s: Scenario, rng: np.random.Generator) -> dict[str, list[Any]]:
    """Two arms with truths p (a) and q (b) on the same questions (see `Scenario.coupling`)."""
    qids = qid_list(s.n)
    epochs = np.full(s.n, s.k, np.int64)
    if s.coupling == "shared":
        u = rng.random(s.n)
        pa = question_params(rng, s.n, s.p, deterministic=True)
        pb = dict(pa) if s.p == s.q else question_params(rng, s.n, s.q, deterministic=True)
        pa["a"], pb["a"] = (u < s.p).astype(np.float64), (u < s.q).astype(np.float64)
        return {"a": arm(rng, "a", qids, pa, epochs, deterministic=True),
                "b": arm(rng, "b", qids, pb, epochs, deterministic=True)}
    return {"a": arm(rng, "a", qids, question_params(rng, s.n, s.p, deterministic=False), epochs),
            "b": arm(rng, "b", qids, question_params(rng, s.n, s.q, deterministic=False), epochs)}


def judge_store(s: Scenario, rng: np.random.Generator) -> tuple[dict[str, list[Any]], list[tuple[Any, ...]],
                                                                  dict[tuple[str, str], int]]:
    """Rows counting the judge's labels, every item's (provider, qid, label, judge, truth, audited) and the
    valid items per (provider, qid)."""
    from searchtrace.analytics import TrajectoryStats

    qids = qid_list(s.n)
    sup_rate = _beta(rng, SIGMA, 4.0, s.n)
    rows: dict[str, list[Any]] = {}
    cases: list[tuple[Any, ...]] = []
    valid: dict[tuple[str, str], int] = {}
    for prov in sorted(SURFACE_CHARS):
        lo, hi = SURFACE_CHARS[prov]
        m = 10 + rng.binomial(20, 0.5, s.n)
        qi = np.repeat(np.arange(s.n), m)
        t = len(qi)
        true_s = rng.random(t) < sup_rate[qi]
        true_c = ~true_s & (rng.random(t) < CONTRA)
        if s.bias == "rank":
            false_pos = rank_fpr(rng.integers(1, RANKS[prov] + 1, t))
        else:
            false_pos = fpr(rng.uniform(lo, hi, t))
        judge_s = np.where(true_s, rng.random(t) < TPR, rng.random(t) < false_pos)
        judge_c = np.where(true_c, rng.random(t) < TPR_C, rng.random(t) < FPR_C)
        ys = np.bincount(qi, weights=judge_s, minlength=s.n).astype(np.int64).tolist()
        cs = np.bincount(qi, weights=judge_c, minlength=s.n).astype(np.int64).tolist()
        rows[prov] = [TrajectoryStats(
            stream_id=f"traj:cov:{prov}:{q}", trajectory_id=f"cov:{prov}:{q}", provider=prov, qid=q, epoch=1,
            gold_answer=GOLD, final_answer=None, semantic_match=None, searches=1, fetches=0, input_tokens=0,
            output_tokens=0, reasoning_tokens=0, page_tokens=0, latency_us=0, domains=1, items=int(m[i]),
            valid=int(m[i]), invalid=0, snippet_only=int(m[i]), page_visible=0, smart=0, missed=0, blind=ys[i],
            noop=int(m[i]) - ys[i], discovered=0, supported=ys[i], contradicted=cs[i], supported_appearances=ys[i],
            supported_rank1=0) for i, q in enumerate(qids)]
        for i, q in enumerate(qids):
            valid[(prov, q)] = int(m[i])
        for label, judge, truth in (("supports_gold", judge_s, true_s), ("contradicts_gold", judge_c, true_c)):
            audited = np.zeros(t, bool)
            for value in (False, True):  # the audit sample: min(N_h, audit) of each stratum, without replacement
                if s.audit_strata == "true-only" and not value:
                    continue
                members = np.flatnonzero(judge == value)
                take = rng.choice(members, size=min(len(members), s.audit), replace=False)
                audited[take] = True
            cases += [(prov, qids[a], label, bool(b), bool(c), bool(d))
                      for a, b, c, d in zip(qi.tolist(), judge.tolist(), truth.tolist(), audited.tolist(), strict=True)]
    return rows, cases, valid


# --- a store as docs/reference/interchange.md files (what proves the rows are what the report reads) -----------------------------------

JUDGE_RUN = "coverage-judge"


def trace_files(by_provider: Mapping[str, Sequence[Any]], folder: Path) -> tuple[Path, Path, Path]:
    """traces.jsonl, judgments.jsonl and audit.tsv whose import gives back exactly these rows' report figures.

    Supported items come first, then contradicted ones; search s shows at rank 1 a supported item for s ≤
    supported_rank1 (so that count must not exceed the searches: ValueError), else an unsupported one; every other
    appearance sits at rank ≥ 2, the searches taken in turn. Audits are (provider, qid) rows, so a
    provider's audited questions must have one epoch (ValueError)."""
    traces, judgments, audit = folder / "traces.jsonl", folder / "judgments.jsonl", folder / "audit.tsv"
    enc = msgspec.json.Encoder()
    audits: dict[tuple[str, str], bool] = {}
    with traces.open("wb") as ft, judgments.open("wb") as fj:
        for provider in sorted(by_provider):
            for r in by_provider[provider]:
                line, verdicts = _trace_line(r)
                ft.write(enc.encode(line) + b"\n")
                for v in verdicts:
                    fj.write(enc.encode(v) + b"\n")
                if r.semantic_match is not None:
                    if (r.provider, r.qid) in audits:
                        raise ValueError(f"{r.trajectory_id}: a (provider, qid) audit row cannot name one of several epochs")
                    audits[(r.provider, r.qid)] = r.semantic_match
    audit.write_text("provider\tqid\tsemantic_match\n" + "".join(
        f"{p}\t{q}\t{'true' if v else 'false'}\n" for (p, q), v in audits.items()), encoding="utf-8")
    return traces, judgments, audit


def _trace_line(r: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if r.supported_rank1 > r.searches or r.supported_appearances < r.supported:
        raise ValueError(f"{r.trajectory_id}: {r.supported_rank1} rank-1 appearances need as many searches")
    if r.fetches == 0 and r.page_tokens:
        raise ValueError(f"{r.trajectory_id}: page tokens without a fetch")
    base = f"https://{r.provider}.example/{r.qid}/{r.epoch}/"
    sup = [f"{base}s{j}" for j in range(r.supported)]
    other = [f"{base}u{j}" for j in range(r.valid - r.supported)]
    shown: list[list[str]] = []  # per search: its URLs by rank
    for s in range(r.searches):
        top = sup[s % len(sup)] if s < r.supported_rank1 else other[s % len(other)] if other else f"{base}f{s}"
        shown.append([top])
    rest = sup[min(r.supported_rank1, len(sup)):]
    rest += [sup[j % len(sup)] for j in range(r.supported_appearances - r.supported_rank1 - len(rest))]
    rest += [u for u in other if all(u not in urls for urls in shown)]
    for j, url in enumerate(rest):  # round robin over the searches (a search may show a URL twice)
        shown[j % r.searches].append(url)
    steps: list[dict[str, Any]] = [{"kind": "model", "iteration": 1, "latency_ms": 1.0, "usage": {
        "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "reasoning_tokens": r.reasoning_tokens}}]
    doc = 0
    for s, urls in enumerate(shown):
        results = []
        for rank, url in enumerate(urls, start=1):
            doc += 1
            results.append({"doc_id": f"d{doc}", "rank": rank, "title": f"t{doc}", "url": url, "domain": "",
                            "snippet": f"snippet {doc}", "metadata": {}})
        steps.append({"kind": "search", "iteration": 1, "call_id": f"s{s}", "query": "q", "latency_ms": 1.0,
                      "results": results})
    for f in range(r.fetches):  # every fetch reads search 1's rank-1 result, so that item has a page
        tokens = r.page_tokens // r.fetches + (r.page_tokens % r.fetches if f == 0 else 0)
        steps.append({"kind": "fetch", "iteration": 1, "call_id": f"f{f}", "doc_id": "d1", "url": shown[0][0],
                      "status": "ok", "content": "page", "n_tokens": tokens, "latency_ms": 1.0})
    contradicting = set(other[: r.contradicted])
    verdicts = []
    for url in [*sup, *other]:
        page = {"supports_gold": False, "contradicts_gold": False, "relevant": False}
        labels = {"snippet": {"supports_gold": url in sup, "contradicts_gold": url in contradicting,
                              "relevant": url in sup},
                  "page": page if r.fetches and url == shown[0][0] else None,
                  "supports_final_answer": False, "rationale": "simulated"}
        verdicts.append({"judge_run_id": JUDGE_RUN, "trajectory_id": r.trajectory_id, "url": url, "valid": True,
                         "labels": labels, "invalid_reason": None})
    line = {"trajectory_id": r.trajectory_id, "provider": r.provider, "qid": r.qid, "question": f"{r.qid}?",
            "gold_answer": r.gold_answer, "final_answer": r.final_answer, "stop_reason": "answered",
            "steps": steps, **({"epoch": r.epoch} if r.epoch != 1 else {})}
    return line, verdicts


# --- one store through the report's code ------------------------------------------------------------------------

def correction_api() -> tuple[Any, Any] | None:
    """The report's judge-error correction (`correction`, `JudgedCase`), None where this build has none yet."""
    import searchtrace.analytics as analytics

    fn, case = getattr(analytics, "correction", None), getattr(analytics, "JudgedCase", None)
    return None if fn is None or case is None else (fn, case)


def report_blocks(by_provider: dict[str, list[Any]], replicates: int, seed: str) -> dict[str, dict[str, Any]]:
    """What the report says for these rows: {provider or pair key: its JSON keys}, as build_report computes them
    (the figures are named by their JSON keys, as this benchmark's output names them)."""
    from searchtrace.analytics import answer_scores, provider_metrics, uncertainty

    scores = {name: answer_scores(rows) for name, rows in by_provider.items()}
    blocks = {name: provider_metrics(rows, scores[name]) for name, rows in by_provider.items()}
    pairs = uncertainty(by_provider, blocks, replicates=replicates, seed=seed, scores=scores)
    return {k: msgspec.to_builtins(v) for k, v in {**blocks, **pairs}.items()}


def run_store(s: Scenario, store: int, seed: int, replicates: int) -> dict[str, dict[str, Any]]:
    rng = _rng(seed, s, store)
    boot = f"coverage/{seed}/{store}"
    if s.kind == "single":
        return report_blocks(single_store(s, rng), replicates, boot)
    if s.kind == "null":
        return report_blocks(null_store(s, rng), replicates, boot)
    if s.kind == "pair":
        return report_blocks(pair_store(s, rng), replicates, boot)
    rows, raw, valid = judge_store(s, rng)
    blocks = report_blocks(rows, replicates, boot)
    api = correction_api()
    if api is not None:
        fn, case = api
        cases = [case(provider=prov, qid=q, label=label, judge_value=j, human_value=h if a else None)
                 for prov, q, label, j, h, a in raw]
        from searchtrace.analytics import provider_metrics

        per = {name: provider_metrics([]) for name in sorted({c.provider for c in cases})}
        pairs: dict[str, Any] = {}
        fn(cases, valid, per, pairs, replicates=replicates, seed=boot)
        blocks.update({f"{k}~c": msgspec.to_builtins(v) for k, v in {**per, **pairs}.items()})
    return blocks


# --- tallies -----------------------------------------------------------------------------------------------------

def _tally(figs: Sequence[Figure]) -> dict[str, dict[str, float]]:
    return {f.label: {"stores": 0, "absent": 0, "undefined": 0, "covered": 0, "width": 0.0, "zero_width": 0,
                      "unbounded": 0, "rejected": 0, "sum": 0.0} for f in figs}


def score(figs: Sequence[Figure], blocks: Mapping[str, Mapping[str, Any]], tally: dict[str, dict[str, float]]) -> None:
    """Add one store's figures to the tallies."""
    for f in figs:
        t = tally[f.label]
        block = blocks.get(f.where)
        if block is None or f.key not in block:
            t["absent"] += 1
            continue
        v = block[f.key]
        if v is None:
            t["undefined"] += 1
            continue
        if f.kind == "refused":  # a value where the correction must refuse
            t["stores"] += 1
            continue
        t["stores"] += 1
        if f.kind == "test":
            t["rejected"] += float(v) <= ALPHA
        elif f.kind == "point":
            t["sum"] += float(v)
        else:
            lo = -math.inf if v[0] is None else float(v[0])
            hi = math.inf if v[1] is None else float(v[1])
            t["covered"] += lo - 1e-12 <= f.truth <= hi + 1e-12
            if math.isinf(hi - lo):
                t["unbounded"] += 1
            else:
                t["width"] += hi - lo
            t["zero_width"] += hi == lo


def run_chunk(s: Scenario, start: int, stop: int, seed: int, replicates: int) -> tuple[dict[str, dict[str, float]], float]:
    """Stores [start, stop) of one scenario: their tallies and the CPU seconds they took."""
    t0 = time.process_time()
    figs = figures(s)
    tally = _tally(figs)
    for i in range(start, stop):
        score(figs, run_store(s, i, seed, replicates), tally)
    return tally, time.process_time() - t0


def merge(into: dict[str, dict[str, float]], add: Mapping[str, Mapping[str, float]]) -> None:
    for label, t in add.items():
        for k, v in t.items():
            into[label][k] += v


def summary(s: Scenario, tally: Mapping[str, Mapping[str, float]], cpu: float, stores: int) -> dict[str, Any]:
    """Per figure: coverage (or rejection rate, or mean), mean width, zero-width share, and whether it meets its goal (docs/concepts/statistics.md)."""
    out: dict[str, Any] = {"scenario": s.name, **msgspec.to_builtins(s), "stores": stores, "cpu_s": round(cpu, 2),
                           "figures": {}}
    for f in figures(s):
        t = tally[f.label]
        n = t["stores"]
        row: dict[str, Any] = {"key": f.key, "where": f.where.removesuffix("~c"), "truth": f.truth, "kind": f.kind,
                               "target": f.target, "stores": int(n), "absent": int(t["absent"]),
                               "undefined": int(t["undefined"])}
        if f.kind == "refused":
            row["ok"] = n == 0 and row["undefined"] > 0
        elif n and f.kind == "test":
            row["rejection"] = t["rejected"] / n
            row["ok"] = row["rejection"] <= ALPHA
        elif n and f.kind == "point":
            row["mean"] = t["sum"] / n
            row["ok"] = None
        elif n:
            row["coverage"] = t["covered"] / n
            bounded = n - t["unbounded"]
            row["mean_width"] = t["width"] / bounded if bounded else None
            row["unbounded"] = int(t["unbounded"])
            row["zero_width"] = t["zero_width"] / n
            row["ok"] = row["coverage"] >= GOAL and (f.kind not in ("proportion", "diff") or t["zero_width"] == 0)
        else:
            row["ok"] = None
        out["figures"][f.label] = row
    return out


# --- the command -------------------------------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}"


def _cell(row: Mapping[str, Any], value: str) -> str:
    x = row.get(value)
    if x is None:
        return f"{'n/a' if row['absent'] else '-':>6}"
    mark = "*" if row.get("ok") is False else " "
    return f"{100 * x:5.1f}{mark}"


def render(results: Sequence[Mapping[str, Any]]) -> str:
    """The text tables: coverage % per interval (* = below 92.5 %, or a zero-width proportion interval)."""
    lines: list[str] = []
    single = [r for r in results if r["kind"] == "single"]
    if single:
        lines.append(f"coverage % of 95 % intervals (* misses: < {100 * GOAL:g} % or a zero-width proportion interval)")
        lines.append(f"{'scenario':<22}" + "".join(f"{v:>6}" for v in SHORT.values()) + f"{'cpu s':>8}")
        for r in single:
            figs = r["figures"]
            lines.append(f"{r['scenario']:<22}" + "".join(_cell(figs[k], "coverage") for k in SHORT)
                         + f"{r['cpu_s']:>8.1f}")
        lines.append("zero-width share % of proportion intervals, and mean width of the proportions (where any is zero)")
        for r in single:
            zs = {k: f for k, f in r["figures"].items() if f["kind"] == "proportion" and f.get("zero_width")}
            if zs:
                lines.append(f"  {r['scenario']:<20} " + ", ".join(
                    f"{SHORT[k]} {100 * f['zero_width']:.1f}% (width {f['mean_width']:.3f})" for k, f in zs.items()))
        lines.append("mean width of the proportion intervals")
        props = [k for k in SHORT if single[0]["figures"][k]["kind"] == "proportion"]
        lines.append(f"{'scenario':<22}" + "".join(f"{SHORT[k]:>7}" for k in props))
        for r in single:
            lines.append(f"{r['scenario']:<22}" + "".join(
                f"{r['figures'][k]['mean_width']:>7.3f}" if r["figures"][k].get("mean_width") is not None
                else f"{'-':>7}" for k in props))
    duo = [r for r in results if r["kind"] == "pair"]
    if duo:
        lines.append("")
        lines.append("paired differences with known truth (a − b): mean Δ, interval covers %, mean width, zero-width %")
        lines.append(f"{'scenario':<36}{'truth':>7}{'acc Δ':>8}{'cover':>7}{'width':>7}{'zero':>6}"
                     f"{'ssr Δ':>8}{'cover':>7}{'width':>7}{'zero':>6}{'cpu s':>8}")
        for r in duo:
            f = r["figures"]
            cells = [f"{r['p'] - r['q']:>+7.2f}"]
            for diff, interval, _ in DIFFS:
                mean, ci = f[diff].get("mean"), f[interval]
                cells.append(f"{mean:>+8.3f}" if mean is not None else f"{'-':>8}")
                cells.append(_cell(ci, "coverage") + " ")
                width = ci.get("mean_width")
                cells.append(f"{width:>6.3f}" if width is not None else f"{'-':>6}")
                cells.append(f"{100 * ci.get('zero_width', 0):>6.1f}")
            lines.append(f"{r['scenario']:<36}" + "".join(cells) + f"{r['cpu_s']:>8.1f}")
    nulls = [r for r in results if r["kind"] == "null"]
    if nulls:
        lines.append("")
        lines.append(f"null (equal truth): mean Δ, interval covers 0 %, test rejects % at p ≤ {ALPHA:g}")
        lines.append(f"{'scenario':<28}{'acc Δ':>8}{'cover':>7}{'reject':>7}{'ssr Δ':>9}{'cover':>7}{'reject':>7}"
                     f"{'cpu s':>8}")
        for r in nulls:
            f = r["figures"]
            cells = []
            for diff, interval, test in DIFFS:
                mean = f[diff].get("mean")
                cells.append(f"{mean:>+8.3f}" if mean is not None else f"{'-':>8}")
                cells.append(_cell(f[interval], "coverage") + " ")
                cells.append(_cell(f[test], "rejection") + " ")
            lines.append(f"{r['scenario']:<28}" + "".join(cells) + f"{r['cpu_s']:>8.1f}")
    judges = [r for r in results if r["kind"] == "judge"]
    for r in judges:
        lines.append("")
        lines.append(f"{r['scenario']}: {r.get('bias', 'length')}-biased judge (truth: support rate {SIGMA:g} for both "
                     "providers)")
        for label, f in r["figures"].items():
            if f["kind"] == "refused":
                val = ("refused" if f.get("ok") else f"GIVEN in {f['stores']} stores") + f" (null in {f['undefined']})"
            elif f["kind"] == "point":
                val = "  mean " + (f"{f['mean']:.4f}" if "mean" in f else "n/a")
            elif f["kind"] == "test":
                val = "reject " + _cell(f, "rejection")
            else:
                val = "cover  " + _cell(f, "coverage") + (
                    f"  width {f['mean_width']:.3f}" if f.get("mean_width") is not None else "")
            note = "" if f["target"] else "   (shown, expected to miss)"
            if f["absent"] and not f["stores"]:
                note += "   (not computed on this build)"
            lines.append(f"  {label:<66} truth {f['truth']:<8.4g}{val}{note}")
        lines.append(f"  cpu s {r['cpu_s']:.1f}")
    return "\n".join(lines)


def verdict(results: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(misses of the targets of docs/concepts/statistics.md, figures this build does not compute). A miss is `clear` when it lies more than
    two Monte Carlo standard errors beyond the goal, or is a zero-width proportion interval (never noise)."""
    misses: list[dict[str, Any]] = []
    absent: list[str] = []
    for r in results:
        for label, f in r["figures"].items():
            if f["absent"] and not f["stores"]:
                absent.append(f"{r['scenario']}: {label}")
            if not f["target"] or f.get("ok") is not False:
                continue
            n = f["stores"]
            if f["kind"] == "refused":
                value, clear = n / max(1, n + f["undefined"]), True
            elif "rejection" in f:
                value, clear = f["rejection"], f["rejection"] > ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / n)
            else:
                value = f["coverage"]
                clear = value < GOAL - 2 * math.sqrt(GOAL * (1 - GOAL) / n) or f.get("zero_width", 0) > 0
            misses.append({"scenario": r["scenario"], "figure": label, "value": value,
                           "zero_width": f.get("zero_width", 0.0), "clear": bool(clear),
                           "refused": f["kind"] == "refused"})
    return misses, absent


def grouped(misses: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per figure: in how many scenarios it misses (clearly), the worst, how often with zero width."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for m in misses:
        by.setdefault(m["figure"], []).append(m)
    lines = []
    for figure, ms in by.items():
        rate = "rejection" if figure.endswith("_p") else "coverage"
        worst = max(ms, key=lambda m: m["value"]) if rate == "rejection" else min(ms, key=lambda m: m["value"])
        zero = sum(1 for m in ms if m["zero_width"])
        lines.append(f"  {figure}: {len(ms)} scenario(s), {sum(m['clear'] for m in ms)} clearly; worst {rate} "
                     f"{100 * worst['value']:.1f} % ({worst['scenario']})"
                     + (f"; zero-width intervals in {zero}" if zero else ""))
    return lines


def _chunks(s: Scenario, stores: int) -> Iterator[tuple[int, int]]:
    size = 20 if s.kind == "single" else 10
    for start in range(0, stores, size):
        yield start, min(stores, start + size)


@click.command("coverage")
@click.option("--stores", default=2000, show_default=True, type=click.IntRange(min=1),
              help="Simulated stores per scenario.")
@click.option("--quick", is_flag=True, help="200 stores, B = 1000 and p in {0.02, 0.1, 0.5, 0.9, 0.98}.")
@click.option("--replicates", default=2000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap replicates per store (the report's default).")
@click.option("--only", multiple=True, help="Run only scenarios whose name contains this text (e.g. 'null', 'n30 k3'); "
              "repeat for several.")
@click.option("--skip", multiple=True, help="Leave out scenarios whose name contains this text (e.g. 'p0.02'); repeat "
              "for several.")
@click.option("--workers", default=None, type=click.IntRange(min=1), help="Processes (default: one per core).")
@click.option("--seed", default=1, show_default=True, type=int)
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the results as JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of the tables.")
def command(stores: int, quick: bool, replicates: int, only: tuple[str, ...], skip: tuple[str, ...],
            workers: int | None, seed: int,
            out: Path | None, as_json: bool) -> None:
    """docs/concepts/statistics.md coverage: simulated stores with known truth through the report's own interval code."""
    grid: tuple[float, ...] = P_GRID
    if quick:
        stores, replicates, grid = min(stores, 200), min(replicates, 1000), QUICK_P
    todo = [s for s in scenarios(grid)
            if (not only or any(o in s.name for o in only)) and not any(x in s.name for x in skip)]
    if not todo:
        raise click.UsageError(f"--only {list(only)!r} --skip {list(skip)!r}: no scenario is left to run")
    if correction_api() is None and any(s.kind == "judge" for s in todo):
        click.echo("coverage: this build has no judge-error correction (analytics.correction, docs/concepts/statistics.md): the judge "
                   "scenarios show the uncorrected intervals only", err=True)
    workers = workers or os.cpu_count() or 1
    tallies = {s.name: _tally(figures(s)) for s in todo}
    cpu = dict.fromkeys(tallies, 0.0)
    jobs = [(s, a, b) for s in todo for a, b in _chunks(s, stores)]
    t0 = time.perf_counter()
    last = 0.0

    def progress(done: int) -> None:
        nonlocal last
        now = time.perf_counter() - t0
        if now - last >= 1.0 or done == len(jobs):
            last = now
            eta = now / done * (len(jobs) - done) if done else 0.0
            click.echo(f"coverage: {done}/{len(jobs)} chunks, {now:.0f} s, about {eta:.0f} s left", err=True)

    if workers == 1:
        for done, (s, a, b) in enumerate(jobs, start=1):
            tally, sec = run_chunk(s, a, b, seed, replicates)
            merge(tallies[s.name], tally)
            cpu[s.name] += sec
            progress(done)
    else:
        import multiprocessing

        # one BLAS thread per process (the processes already fill the cores), given to the children only
        with _one_blas_thread(), ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures: dict[Future[tuple[dict[str, dict[str, float]], float]], str] = {
                pool.submit(run_chunk, s, a, b, seed, replicates): s.name for s, a, b in jobs}
            for done, fut in enumerate(as_completed(futures), start=1):
                tally, sec = fut.result()
                merge(tallies[futures[fut]], tally)
                cpu[futures[fut]] += sec
                progress(done)
    wall = time.perf_counter() - t0
    results = [summary(s, tallies[s.name], cpu[s.name], stores) for s in todo]
    misses, absent = verdict(results)
    doc = {"stores": stores, "replicates": replicates, "seed": seed, "goal": GOAL, "alpha": ALPHA,
           "wall_s": round(wall, 1), "workers": workers, "misses": misses, "absent": absent, "scenarios": results}
    if out is not None:
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(render(results))
    se = math.sqrt(0.95 * 0.05 / stores)
    click.echo(f"\n{stores} stores per scenario (coverage standard error near 95 %: {100 * se:.1f} points), B = "
               f"{replicates}, {len(todo)} scenarios, {wall:.0f} s on {workers} processes")
    if absent:
        click.echo("not computed on this build: " + ", ".join(sorted({a.split(': ', 1)[1] for a in absent})))
    clear = sum(m["clear"] for m in misses)
    click.echo(f"docs/concepts/statistics.md targets missed: {len(misses)} ({clear} clearly: beyond two standard errors, or a "
               "zero-width proportion interval)")
    for line in grouped(misses):
        click.echo(line)
    sys.stdout.flush()
    failed = failures(misses)
    for line in failed:
        click.echo(f"coverage FAILED: {line}", err=True)
    if failed:
        sys.exit(1)


def failures(misses: Sequence[Mapping[str, Any]]) -> list[str]:
    """What makes the command fail: an interval below the goal or of zero width, a correction given where it must
    refuse, a test clearly above its level (named: scenario, figure, value)."""
    out = []
    for m in misses:
        if m["figure"].endswith("_p") and not m["clear"]:
            continue  # a test's rejection within two standard errors of 5 %: noise
        what = ("zero-width intervals" if m["zero_width"] else
                "rejects" if m["figure"].endswith("_p") else "given in" if m.get("refused") else "covers")
        out.append(f"{m['scenario']}: {m['figure']} {what} {100 * m['value']:.1f} %")
    return out
