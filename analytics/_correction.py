"""docs/concepts/statistics.md judge-error correction: snippet support and contradiction rates corrected by the human audit labels.

The per-URL oracle is an LLM, and its errors may differ by provider. `audit sample` draws a stratified random sample
of judge cases (strata: provider × surface × label × judge value, `audit.design`); with their human labels, each rate
is corrected by the stratified difference (prediction-powered) estimator. Per provider and snippet label, over the
provider's N valid items: `<rate>_corrected` = judge rate + Σₕ (Nₕ/N)·meanₕ(human − judge), the strata h being
the judge's two values of that label and Nₕ the provider's cases in each (an item with no snippet labels counts as
judge 0 with nothing to correct; "unclear" labels are excluded and counted). Since the judge is constant within a
stratum, this is Σₕ (Nₕ/N)·p̂ₕ with p̂ₕ the human "true" share of the stratum's clear audited cases (PPI++ at any
λ: the judge term cancels within a stratum). The correction refuses to guess (docs/concepts/paired-and-audits.md):
while a stratum with items has fewer than `min_labels` clear labels (2 unless the audit design says otherwise),
the corrected rate, its interval, `judge_tpr` / `judge_tnr` and the pair's corrected difference and p-value are
null, and `corrected_missing_strata` names those strata (`corrected_unaudited_strata` counts the ones without any
label). `judge_tpr` / `judge_tnr` are the judge's sensitivity and specificity against the human labels, weighted to
the population the same way (a stratified sample's raw agreement over-weights the rare judge value).

Intervals (`_ci`, 95 %), per replicate of the question bootstrap: N and the Nₕ are resampled with their questions
(analytics._uncertainty.weight_chunks: the same draws as the report's other intervals, so a pair's difference is
paired by question), and each audited stratum's share p̂ₕ is drawn from the Clopper–Pearson confidence distribution
of its clear labels (an even mixture of Beta(s, n − s + 1) and Beta(s + 1, n − s)) at their Korn–Graubard effective
size (labels clustered on a few questions count for less). The audit sample is drawn apart from the questions, and
a plain resample of a few labels that all agree with the judge has no spread at all. Measured with a judge whose
false positives grow with surface length (30 or 100 questions of 8 clustered items, true rate 0.02 to 0.98, k = 5 or
20 labels per stratum, 200–500 stores each): resampling the labels with their questions covered 51–94 %, a Jeffreys
posterior of the labels 88–96 %, this 93–100 % (k = 60 labels on 30 strongly clustered questions: 91 %), the judge's
own rate 0–92 %. Interval: the central share of the defined replicates at the expanded level of the report's other
question bootstraps (analytics._uncertainty.expanded_level for the questions resampled: 96.2 % at n = 30; the plain
95 % covered 91.0–91.9 % in `bench coverage`'s length-biased judge at n = 30); `_ci_undefined` counts replicates
with a zero denominator. A pair "A|B" (names in code-point order) over the questions with valid items on both
sides (the uncorrected difference's questions, so the corrected difference is the same estimand corrected):
`surface_support_rate_corrected_diff` (A − B) and `_labels` ([A's, B's] clear supports_gold labels), its `_ci`, and
`_p`, the two-sided bootstrap p-value 2·min(share ≤ 0, share ≥ 0) (one added to each count, never 0).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations
from typing import Literal

import msgspec
import numpy as np
import numpy.typing as npt

from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._lookups import current_labels
from searchtrace.analytics._metrics import TrajectoryStats
from searchtrace.analytics._model import ArmMetrics, Interval, Pair, field_key
from searchtrace.analytics._rules import TRAJECTORIES_CTE, first_verdicts
from searchtrace.analytics._uncertainty import percentile_interval, seeded_rng, weight_chunks
from searchtrace.store import AuditDesign, Cursor, decode_payload

Floats = npt.NDArray[np.float64]
SnippetLabel = Literal["supports_gold", "contradicts_gold"]
LABELS: tuple[SnippetLabel, ...] = ("supports_gold", "contradicts_gold")
LABELS_OF: dict[SnippetLabel, str] = {
    "supports_gold": field_key(ArmMetrics, lambda m: m.surface_support_rate_corrected_labels),
    "contradicts_gold": field_key(ArmMetrics, lambda m: m.surface_contradiction_rate_corrected_labels)}
"""Per snippet label, the report field counting the clear human labels its corrected rate rests on."""
METHOD = "stratified_difference_cp_ess"  # the interval method, for the report's `uncertainty.methods`
MIN_LABELS = 2  # clear labels every stratum with cases needs before a corrected figure is given (audit.design)
TEST = "bootstrap_two_sided"  # the pair difference's p-value: 2·min(share <= 0, share >= 0) of its replicates


class JudgedCase(msgspec.Struct, frozen=True, kw_only=True):
    """One snippet label of one valid judge item, with the human's value when the item is in the audit sample."""

    provider: str  # the item's arm in a report over another axis than providers (docs/how-to/compare.md)
    qid: str
    label: SnippetLabel  # snippet labels only
    judge_value: bool
    human_value: bool | Literal["unclear"] | None = None  # None: not in the audit sample
    trajectory_id: str = ""  # the item's trajectory and URL (where the report read it; the counts need neither)
    url_normalized: str = ""


def counted_in(c: JudgedCase) -> tuple[str, ...]:
    """The report's counts of the correction this case is one of: a clear human label is one of its rate's
    `_corrected_labels` and of `corrected_labels`, an unclear one of `corrected_unclear` (excluded), an unaudited
    case of none."""
    if c.human_value is None:
        return ()
    if c.human_value == "unclear":
        return (LABEL_COUNTS[-1],)
    return (LABELS_OF[c.label], _ALL_LABELS)


_ALL_LABELS = field_key(ArmMetrics, lambda m: m.corrected_labels)
LABEL_COUNTS = (*LABELS_OF.values(), _ALL_LABELS, field_key(ArmMetrics, lambda m: m.corrected_unclear))
"""Every report field `counted_in` names."""


class _Table:
    """One provider's counts per question (rows: sorted qids): valid items, and per (label, judge value) the cases
    (Nₕ), the clear audited cases (nₕ) and the human "true" among them (sₕ); `unclear` per label."""

    def __init__(self, qids: tuple[str, ...], valid: Floats, cases: Floats, audited: Floats, human: Floats,
                 unclear: dict[str, int]):
        self.qids = qids
        self.valid = valid  # (n,)
        self.cases = cases  # (n, 2 labels, 2 judge values: [False, True])
        self.audited = audited
        self.human = human
        self.unclear = unclear

    def subset(self, qids: tuple[str, ...]) -> _Table:
        where = {q: i for i, q in enumerate(self.qids)}
        idx = np.array([where[q] for q in qids], dtype=np.int64)
        # unclear labels are counted per provider, not per question: a subset keeps the provider's count
        return _Table(qids, self.valid[idx], self.cases[idx], self.audited[idx], self.human[idx], self.unclear)


def _tables(cases: Sequence[JudgedCase], valid: Mapping[tuple[str, str], int]) -> dict[str, _Table]:
    qids: dict[str, set[str]] = defaultdict(set)
    for (provider, qid) in valid:
        qids[provider].add(qid)
    for c in cases:
        if (c.provider, c.qid) not in valid:
            raise ValueError(f"judged case of ({c.provider}, {c.qid}) has no valid-item count")
    out: dict[str, _Table] = {}
    for provider, qs in qids.items():
        order = tuple(sorted(qs))
        n = len(order)
        out[provider] = _Table(
            order, np.array([float(valid[(provider, q)]) for q in order], dtype=np.float64),
            np.zeros((n, 2, 2)), np.zeros((n, 2, 2)), np.zeros((n, 2, 2)), {label: 0 for label in LABELS},
        )
    where = {p: {q: i for i, q in enumerate(t.qids)} for p, t in out.items()}
    for c in cases:
        t = out[c.provider]
        i, li, v = where[c.provider][c.qid], LABELS.index(c.label), int(c.judge_value)
        t.cases[i, li, v] += 1
        counted = counted_in(c)
        if "corrected_unclear" in counted:
            t.unclear[c.label] += 1
        elif counted:
            t.audited[i, li, v] += 1
            t.human[i, li, v] += bool(c.human_value)
    for provider, t in out.items():
        over = np.flatnonzero(t.cases.sum(axis=2).max(axis=1) > t.valid)
        if over.size:
            raise ValueError(f"{provider}, {t.qids[over[0]]}: more cases of one label than valid items")
    return out


def stratum_name(provider: str, label: str, judge_value: int | bool) -> str:
    """A stratum as `audit agreement` and `corrected_missing_strata` name it: provider|snippet|label|judge value."""
    return f"{provider}|snippet|{label}|{str(bool(judge_value)).lower()}"


class _Point(msgspec.Struct, kw_only=True):
    """One label's exact point estimates over one table (None where undefined or refused)."""

    rate: Fraction | None  # the judge's rate over the valid items
    corrected: Fraction | None
    labels: int  # clear human labels
    tpr: Fraction | None
    tnr: Fraction | None
    unaudited: int  # strata with cases and no label
    missing: list[str]  # strata with cases and fewer than min_labels clear labels


def _points(t: _Table, provider: str, min_labels: int) -> tuple[_Point, _Point]:
    """Exact point estimates per label (LABELS order); None where undefined, and None where a stratum with cases
    has fewer than `min_labels` clear labels (named in `missing`: the correction refuses to guess it)."""
    out: list[_Point] = []
    valid = int(t.valid.sum())
    for li, label in enumerate(LABELS):
        big = [int(t.cases[:, li, v].sum()) for v in (0, 1)]
        n = [int(t.audited[:, li, v].sum()) for v in (0, 1)]
        s = [int(t.human[:, li, v].sum()) for v in (0, 1)]
        missing = [stratum_name(provider, label, v) for v in (0, 1) if big[v] and n[v] < min_labels]
        p = [Fraction(s[v], n[v]) if n[v] else Fraction(v) for v in (0, 1)]  # each stratum's human "true" share
        pos, neg = big[1] * p[1] + big[0] * p[0], big[0] * (1 - p[0]) + big[1] * (1 - p[1])
        out.append(_Point(
            rate=None if valid == 0 else Fraction(big[1], valid),
            corrected=None if valid == 0 or missing or not sum(n) else Fraction(big[0] * p[0] + big[1] * p[1]) / valid,
            labels=sum(n),
            tpr=None if missing or pos == 0 else big[1] * p[1] / pos,
            tnr=None if missing or neg == 0 else big[0] * (1 - p[0]) / neg,
            unaudited=sum(1 for v in (0, 1) if big[v] and not n[v]),
            missing=missing))
    return out[0], out[1]


def _effective(m_q: Floats, s_q: Floats) -> tuple[float, float]:
    """(successes, trials) of one stratum's clear labels at their Korn–Graubard effective size (docs/concepts/statistics.md formula
    over the questions holding them: n_eff = p̂(1−p̂)/v̂, capped at n, n when v̂ = 0), so that several labels on
    one question count as the information they carry."""
    n, s = float(m_q.sum()), float(s_q.sum())
    p = s / n
    holding = int(np.count_nonzero(m_q))
    v = holding / (holding - 1) * float(((s_q - p * m_q) ** 2).sum()) / n**2 if holding > 1 else 0.0
    n_eff = n if v == 0 else min(n, p * (1 - p) / v)
    return p * n_eff, n_eff


def _share_draws(successes: float, trials: float, rng: np.random.Generator, size: int) -> Floats:
    """Draws of a proportion from the Clopper–Pearson confidence distribution: an even mixture of Beta(s, n − s + 1)
    and Beta(s + 1, n − s) (a point mass at 0 when s = 0, at 1 when s = n). Its central 95 % contains the exact
    interval, so a stratum whose few labels all agree with the judge still carries its full uncertainty."""
    upper = rng.random(size) < 0.5
    a = np.where(upper, successes + 1, successes)
    b = np.where(upper, trials - successes, trials - successes + 1)
    ok = (a > 0) & (b > 0)
    draws = rng.beta(np.where(ok, a, 1.0), np.where(ok, b, 1.0))
    return np.where(a <= 0, 0.0, np.where(b <= 0, 1.0, draws))


def _replicates(t: _Table, provider: str, seed: str, replicates: int) -> list[tuple[Floats, Floats, Floats]]:
    """Per label (LABELS order), every replicate's corrected rate, judge TPR and TNR (NaN where its denominator
    is 0)."""
    cols = [t.valid, *(t.cases[:, li, v] for li in range(2) for v in (0, 1))]
    wide = np.stack(cols, axis=1)
    sums = np.concatenate([w @ wide for w in weight_chunks(seed, t.qids, replicates)])  # exact integer sums
    valid = sums[:, 0]
    out: list[tuple[Floats, Floats, Floats]] = []
    for li, label in enumerate(LABELS):
        big = [sums[:, 1 + 2 * li + v] for v in (0, 1)]
        p: list[Floats] = []
        for v in (0, 1):
            if not t.audited[:, li, v].any():
                p.append(np.full(replicates, float(v)))  # unaudited: the point is null (refused); a placeholder
                continue
            s_eff, n_eff = _effective(t.audited[:, li, v], t.human[:, li, v])
            p.append(_share_draws(s_eff, n_eff, seeded_rng(seed, "correction", provider, label, str(v).lower()), replicates))
        num = big[0] * p[0] + big[1] * p[1]
        out.append((_div(num, valid), _div(big[1] * p[1], num),
                    _div(big[0] * (1 - p[0]), big[0] * (1 - p[0]) + big[1] * (1 - p[1]))))
    return out


def _div(num: Floats, den: Floats) -> Floats:
    out = np.full(den.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _float(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def correction(cases: Sequence[JudgedCase], valid: Mapping[tuple[str, str], int], blocks: Mapping[str, ArmMetrics],
               pairs: dict[str, Pair], *, replicates: int, seed: str, min_labels: int = MIN_LABELS) -> None:
    """Each provider's block (every provider with cases must have one) gets its corrected figures, and each pair
    "A|B" of `pairs` (added when it is not there) the corrected difference. valid[(provider, qid)] = the rate's
    denominator per question.

    `cases`: every snippet supports_gold / contradicts_gold case of the judge run's valid items, with the human value
    on the audited ones. The intervals (`_ci`, `_ci_undefined`, the pair's `_ci` and `_p`) only with replicates > 0.
    The block's own `surface_support_rate` (the judge's) is left as it is."""
    tables = _tables(cases, valid)
    names = sorted(tables)
    reps: dict[str, list[tuple[Floats, Floats, Floats]]] = {}
    for name in names:
        t, block = tables[name], blocks[name]
        sup, con = _points(t, name, min_labels)
        block.surface_support_rate_corrected = _float(sup.corrected)
        block.surface_support_rate_corrected_labels = sup.labels
        block.judge_tpr, block.judge_tnr = _float(sup.tpr), _float(sup.tnr)
        block.surface_contradiction_rate = _float(con.rate)
        block.surface_contradiction_rate_corrected = _float(con.corrected)
        block.surface_contradiction_rate_corrected_labels = con.labels
        block.judge_tpr_contradicts, block.judge_tnr_contradicts = _float(con.tpr), _float(con.tnr)
        block.corrected_labels = sup.labels + con.labels
        block.corrected_unclear = sum(t.unclear.values())
        block.corrected_unaudited_strata = sup.unaudited + con.unaudited
        block.corrected_missing_strata = sorted(sup.missing + con.missing)
        if replicates > 0:
            reps[name] = r = _replicates(t, name, seed, replicates)

            def ci(point: float | None, values: Floats, units: int = len(t.qids)) -> tuple[Interval | None, int]:
                interval = None if point is None else percentile_interval(values, units=units)
                return None if interval is None else list(interval), int(np.count_nonzero(np.isnan(values)))

            (rate, tpr, tnr), (rate_c, tpr_c, tnr_c) = r
            block.surface_support_rate_corrected_ci, block.surface_support_rate_corrected_ci_undefined = ci(
                block.surface_support_rate_corrected, rate)
            block.judge_tpr_ci, block.judge_tpr_ci_undefined = ci(block.judge_tpr, tpr)
            block.judge_tnr_ci, block.judge_tnr_ci_undefined = ci(block.judge_tnr, tnr)
            block.surface_contradiction_rate_corrected_ci, block.surface_contradiction_rate_corrected_ci_undefined = ci(
                block.surface_contradiction_rate_corrected, rate_c)
            block.judge_tpr_contradicts_ci, block.judge_tpr_contradicts_ci_undefined = ci(
                block.judge_tpr_contradicts, tpr_c)
            block.judge_tnr_contradicts_ci, block.judge_tnr_contradicts_ci_undefined = ci(
                block.judge_tnr_contradicts, tnr_c)
    for a, b in combinations(names, 2):
        # the questions with valid items on both sides: the uncorrected difference's (analytics.support_difference)
        common = tuple(sorted(q for q in set(tables[a].qids) & set(tables[b].qids)
                              if valid.get((a, q), 0) > 0 and valid.get((b, q), 0) > 0))
        ta = tables[a] if common == tables[a].qids else tables[a].subset(common)
        tb = tables[b] if common == tables[b].qids else tables[b].subset(common)
        (pa, _), (pb, _) = _points(ta, a, min_labels), _points(tb, b, min_labels)
        diff = None if pa.corrected is None or pb.corrected is None else float(pa.corrected - pb.corrected)
        out = pairs.setdefault(f"{a}|{b}", Pair())
        out.surface_support_rate_corrected_diff_questions, out.surface_support_rate_corrected_diff = len(common), diff
        out.surface_support_rate_corrected_diff_labels = [int(ta.audited[:, 0].sum()), int(tb.audited[:, 0].sum())]
        out.surface_support_rate_corrected_diff_missing_strata = sorted(pa.missing + pb.missing)
        if replicates > 0:
            ra = reps[a][0][0] if ta is tables[a] else _replicates(ta, a, seed, replicates)[0][0]
            rb = reps[b][0][0] if tb is tables[b] else _replicates(tb, b, seed, replicates)[0][0]
            d = ra - rb
            interval = None if diff is None else percentile_interval(d, units=len(common))
            out.surface_support_rate_corrected_diff_ci = None if interval is None else list(interval)
            out.surface_support_rate_corrected_diff_ci_undefined = int(np.count_nonzero(np.isnan(d)))
            out.surface_support_rate_corrected_diff_p = None if diff is None else _two_sided(d)


METHODS: dict[str, str] = {
    **{field_key(ArmMetrics, get): METHOD for get in (
        lambda m: m.surface_support_rate_corrected_ci, lambda m: m.judge_tpr_ci, lambda m: m.judge_tnr_ci,
        lambda m: m.surface_contradiction_rate_corrected_ci, lambda m: m.judge_tpr_contradicts_ci,
        lambda m: m.judge_tnr_contradicts_ci)},
    field_key(Pair, lambda c: c.surface_support_rate_corrected_diff_ci): METHOD,
    field_key(Pair, lambda c: c.surface_support_rate_corrected_diff_p): TEST,
}
"""The report's `uncertainty.methods` of the corrected intervals and the pair's p-value."""


def _two_sided(d: Floats) -> float | None:
    """Bootstrap two-sided p-value of a zero difference: 2·min(share ≤ 0, share ≥ 0), one added to each count."""
    ok = d[~np.isnan(d)]
    if ok.size == 0:
        return None
    low, high = int(np.count_nonzero(ok <= 0)), int(np.count_nonzero(ok >= 0))
    return min(1.0, 2 * (1 + min(low, high)) / (1 + ok.size))


# -- the report's cases: verdicts of the judge run, the current human label per case, the recorded designs -------

CASES_SQL = f"""
WITH {TRAJECTORIES_CTE}, it AS ({ITEMS_SQL}), v AS ({first_verdicts("$run")})
SELECT tr.arm, it.qid, it.trajectory_id, it.url_normalized, v.snippet_supports_gold, v.snippet_contradicts_gold
FROM it JOIN tr USING (stream_id) JOIN v ON v.trajectory_id = it.trajectory_id AND v.url_normalized = it.url_normalized
WHERE v.valid AND it.snippet_shown AND v.snippet_supports_gold IS NOT NULL
ORDER BY tr.arm, it.qid, it.trajectory_id, it.url_normalized
"""
"""Every valid item of judge run `$run` with snippet labels the model was shown, by arm (analytics._rules.ARM_SQL:
the provider unless the report names another axis): the cases the rates count (an item fetched but never shown
has S = false whatever its labels, so it has nothing to correct)."""


class ReportCases(msgspec.Struct, kw_only=True):
    """What `correction` needs from a store, and the remarks for the report's reader."""

    cases: list[JudgedCase]
    valid: dict[tuple[str, str], int]
    notes: list[str]
    min_labels: int = MIN_LABELS  # the largest a recorded design asks for


def report_cases(con: Cursor, run: str, rows: Sequence[TrajectoryStats]) -> ReportCases | None:
    """The judged cases of `run` over the report's trajectories `rows` (inside analytics._sources.reading and
    _rules.only_runs), None when the run has no human snippet label on them.

    With `audit.design` events for the run, only labels of cases a design drew are used (a hand-picked label is
    not a random sample of its stratum; the others are counted in a note); without one, every label is used as if
    drawn at random within its stratum, and a note says so."""
    tids = {r.trajectory_id for r in rows}
    wanted = {k: v for k, v in _snippet_labels(con, run).items() if k[0] in tids}
    if not wanted:
        return None
    designs = _designs(con, run)
    wanted, notes = _drawn(designs, run, wanted)
    valid: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        valid[(r.arm, r.qid)] += r.valid
    return ReportCases(cases=_cases(con, run, wanted), valid=dict(valid), notes=notes,
                       min_labels=max((d.min_labels for d in designs), default=MIN_LABELS))


def labelled_cases(con: Cursor, run: str) -> list[JudgedCase]:
    """The cases of `run` the report's correction counts a human label of (`counted_in`), with their trajectory and
    URL: what its label counts are made of (inside analytics._sources.reading and _rules.only_runs, as the report)."""
    wanted, _ = _drawn(_designs(con, run), run, _snippet_labels(con, run))
    return [c for c in _cases(con, run, wanted) if counted_in(c)] if wanted else []


Key = tuple[str, str, str]  # (trajectory_id, url_normalized, label)


def _snippet_labels(con: Cursor, run: str) -> dict[Key, bool | Literal["unclear"]]:
    """The current human snippet label of each (trajectory, URL, label) of `run`."""
    return {(a.item.trajectory_id, a.item.url_normalized, a.label): a.human_value
            for history in current_labels(con, run).values() for a in history[-1:]
            if a.surface == "snippet" and a.label in LABELS}


def _designs(con: Cursor, run: str) -> list[AuditDesign]:
    """The recorded audit designs of judge run `run`, in log order."""
    return [d for (payload,) in con.execute(
        "SELECT payload FROM events WHERE type = 'audit.design' "
        "AND json_extract_string(payload, '$.judge_run_id') = ? ORDER BY position", [run]).fetchall()
        if isinstance(d := decode_payload(payload), AuditDesign)]


def _drawn(designs: Sequence[AuditDesign], run: str, wanted: dict[Key, bool | Literal["unclear"]]
           ) -> tuple[dict[Key, bool | Literal["unclear"]], list[str]]:
    """The labels the correction may use (those a recorded audit design drew, when the run has one) and the notes."""
    notes: list[str] = []
    if designs:
        drawn = {(c.trajectory_id, c.url_normalized, c.label) for d in designs for c in d.cases
                 if c.surface == "snippet"}
        outside = sorted(set(wanted) - drawn)
        if outside:
            notes.append(f"judge-error correction: {len(outside)} human snippet labels of judge run {run} are not in "
                         "a recorded audit sample (audit.design) and are not used")
        wanted = {k: v for k, v in wanted.items() if k in drawn}
    elif wanted:
        notes.append(f"judge-error correction: judge run {run} has no recorded audit design (audit.design); its "
                     f"{len(wanted)} human snippet labels are taken as a random sample within their strata")
    return wanted, notes


def _cases(con: Cursor, run: str, wanted: Mapping[Key, bool | Literal["unclear"]]) -> list[JudgedCase]:
    """Every case of `run` the rates count (CASES_SQL), with the human value `wanted` gives it."""
    cases: list[JudgedCase] = []
    for arm, qid, tid, url_n, supports, contradicts in con.execute(CASES_SQL, {"run": run}).fetchall():
        for label, value in zip(LABELS, (supports, contradicts), strict=True):
            cases.append(JudgedCase(provider=arm, qid=qid, label=label, judge_value=bool(value),
                                    human_value=wanted.get((tid, url_n, label)), trajectory_id=tid,
                                    url_normalized=url_n))
    return cases
