"""Audits sized for an answer (docs/concepts/paired-and-audits.md): how many human labels each stratum needs for a
corrected rate of a given width, from the judge's own labels (Neyman allocation), and how wide the corrected rate
and the paired corrected difference are expected to be.

Per provider and snippet label, the strata are the judge's two values h ∈ {false, true} with N_h cases
(W_h = N_h/N) and a planning share p_h of human "true" in each: the clear labels already imported when a stratum
has at least the minimum (their share, (s + ½)/(n + 1)), else `agreement` for judge-true and 1 − `agreement` for
judge-false. The corrected rate Σ W_h p̂_h then has the variance

    V = Σ_h W_h² p_h(1 − p_h)/n_h  +  (p_1 − p_0)² · v̂_J

the first term from the labels, the second from the questions (the report resamples them, so the mix W_h moves):
v̂_J is the Korn–Graubard variance of the judge's rate over the questions (analytics._uncertainty.effective_n's
v̂). Expected width: 2·z'·√V with z' the normal quantile of the report's expanded level for that many questions.
Neyman allocation minimises the first term for a total n: n_h ∝ N_h·√(p_h(1 − p_h)), at least `min_labels` and at
most N_h; a target width W needs n = (Σ W_h √(p_h(1 − p_h)))² / ((W/2z')² − (p_1 − p_0)²·v̂_J) — unreachable when the
question term alone is wider (then every case is planned, and the plan says so). A pair's corrected difference adds
both providers' label terms to the question term of the paired linearised totals over the questions both ran:
rᵢ = (p_1ᴬ − p_0ᴬ)(yᵢᴬ − Jᴬmᵢᴬ)/Mᴬ − (p_1ᴮ − p_0ᴮ)(yᵢᴮ − Jᴮmᵢᴮ)/Mᴮ, v̂ = n/(n − 1)·Σrᵢ².
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations

import msgspec

from searchtrace.analytics._model import ArmMetrics, Pair, field_key
from searchtrace.analytics._uncertainty import LEVEL, _erfinv, expanded_level

SNIPPET_LABELS = ("supports_gold", "contradicts_gold")
RATE = {"supports_gold": field_key(ArmMetrics, lambda m: m.surface_support_rate_corrected),
        "contradicts_gold": field_key(ArmMetrics, lambda m: m.surface_contradiction_rate_corrected)}
"""Per snippet label, the report field of its corrected rate (what a plan's figure names)."""
DIFF = field_key(Pair, lambda c: c.surface_support_rate_corrected_diff)  # a pair's corrected difference
AGREEMENT = 0.9  # planning share of human agreement with the judge where a stratum has no labels yet


class StratumPlan(msgspec.Struct, frozen=True, kw_only=True):
    """One stratum's planned labels: `population` N_h, `share` the planning p_h, `sample` n_h."""

    provider: str
    label: str
    judge_value: bool
    population: int
    share: float
    sample: int


class FigurePlan(msgspec.Struct, frozen=True, kw_only=True):
    """A corrected figure's expected 95 % interval width under the plan (None: not computable)."""

    where: str  # provider, or pair "A|B"
    key: str
    expected_width: float | None
    labels: int  # the labels it rests on under the plan


class AuditPlan(msgspec.Struct, frozen=True, kw_only=True):
    strata: list[StratumPlan]
    figures: list[FigurePlan]
    notes: list[str]


class Group:
    """One provider's cases of one snippet label: N_h, per-question judge-true and total counts."""

    def __init__(self) -> None:
        self.per_q: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # qid -> [judge true, cases]

    @property
    def sizes(self) -> tuple[int, int]:
        true = sum(v[0] for v in self.per_q.values())
        return sum(v[1] for v in self.per_q.values()) - true, true

    def judge_rate(self) -> float:
        n0, n1 = self.sizes
        return n1 / (n0 + n1)


def _z(questions: int) -> float:
    """The normal quantile of the report's expanded level for `questions` resampled questions."""
    return math.sqrt(2) * _erfinv(expanded_level(LEVEL, questions))


def _question_variance(residuals: Sequence[float]) -> float:
    n = len(residuals)
    return n / (n - 1) * math.fsum(r * r for r in residuals) if n > 1 else 0.0


def _residuals(g: Group, qids: Sequence[str], lift: float) -> list[float]:
    """lift·(yᵢ − J·mᵢ)/M per question: the judge rate's linearised totals, scaled by p_1 − p_0."""
    big_m = sum(g.per_q[q][1] for q in qids) or 1
    j = sum(g.per_q[q][0] for q in qids) / big_m
    return [lift * (g.per_q[q][0] - j * g.per_q[q][1]) / big_m for q in qids]


def allocate(total: int, population: Sequence[int], spread: Sequence[float], min_labels: int) -> list[int]:
    """Neyman allocation of `total` labels: n_h ∝ N_h·S_h, each at least min(min_labels, N_h), at most N_h."""
    floor = [min(min_labels, n) for n in population]
    out = list(floor)
    free = [h for h, n in enumerate(population) if n > out[h]]
    left = max(0, total - sum(out))
    while left > 0 and free:
        weight = sum(population[h] * max(spread[h], 1e-9) for h in free)
        want = {h: left * population[h] * max(spread[h], 1e-9) / weight for h in free}
        capped = [h for h in free if out[h] + want[h] >= population[h]]
        if capped:  # those take all they have; the rest is shared again among the others
            for h in capped:
                left -= population[h] - out[h]
                out[h] = population[h]
            free = [h for h in free if h not in capped]
            continue
        for h in free:
            out[h] = max(out[h], min(population[h], math.ceil(out[h] + want[h] - 1e-9)))
        break
    return out


def plan(groups: Mapping[tuple[str, str], Group], *, target_width: float | None = None, total: int | None = None,
         fixed: Mapping[tuple[str, str, bool], int] | None = None,
         labelled: Mapping[tuple[str, str, bool], tuple[int, int]] | None = None,
         agreement: float = AGREEMENT, min_labels: int = 2) -> AuditPlan:
    """The per-stratum sample for `target_width` (or `total` labels per provider and label, or the `fixed` n_h of
    a drawn sample) and every corrected figure's expected width; `labelled`: clear (human true, labels) so far."""
    labelled = labelled or {}
    strata: list[StratumPlan] = []
    figures: list[FigurePlan] = []
    notes: list[str] = []
    label_var: dict[tuple[str, str], float] = {}
    lift: dict[tuple[str, str], float] = {}
    for (provider, label), g in sorted(groups.items()):
        sizes = g.sizes
        big_n = sum(sizes)
        shares = []
        for v in (0, 1):
            s, n = labelled.get((provider, label, bool(v)), (0, 0))
            shares.append((s + 0.5) / (n + 1) if n >= min_labels else (agreement if v else 1 - agreement))
        spread = [math.sqrt(p * (1 - p)) for p in shares]
        weights = [n / big_n for n in sizes]
        lift[(provider, label)] = shares[1] - shares[0]
        q_var = _question_variance(_residuals(g, sorted(g.per_q), lift[(provider, label)]))
        z = _z(len(g.per_q))
        if fixed is not None:
            sample = [min(sizes[v], fixed.get((provider, label, bool(v)), 0)) for v in (0, 1)]
        else:
            if target_width is not None:
                budget = (target_width / (2 * z)) ** 2 - q_var
                need = sum(w * s for w, s in zip(weights, spread, strict=True)) ** 2
                if budget <= 0:
                    notes.append(f"{provider} {RATE[label]}: width {target_width:g} is not reachable with "
                                 f"{len(g.per_q)} questions (the questions alone give {2 * z * math.sqrt(q_var):.3f}); "
                                 "every case planned")
                    want = big_n
                else:
                    want = math.ceil(need / budget)
            else:
                want = total or 0
            sample = allocate(want, sizes, spread, min_labels)
        for v in (0, 1):
            strata.append(StratumPlan(provider=provider, label=label, judge_value=bool(v), population=sizes[v],
                                      share=shares[v], sample=sample[v]))
        short = any(sizes[v] and sample[v] < min_labels for v in (0, 1))
        var = math.nan if short else sum(weights[v] ** 2 * shares[v] * (1 - shares[v]) / sample[v]
                                         for v in (0, 1) if sizes[v])
        label_var[(provider, label)] = var
        width = None if short else 2 * z * math.sqrt(var + q_var)
        figures.append(FigurePlan(where=provider, key=RATE[label], expected_width=width, labels=sum(sample)))
    providers = sorted({p for p, _ in groups})
    for a, b in combinations(providers, 2):
        ga, gb = groups.get((a, "supports_gold")), groups.get((b, "supports_gold"))
        if ga is None or gb is None:
            continue
        common = sorted(q for q in set(ga.per_q) & set(gb.per_q) if ga.per_q[q][1] and gb.per_q[q][1])
        va, vb = label_var[(a, "supports_gold")], label_var[(b, "supports_gold")]
        if not common or math.isnan(va) or math.isnan(vb):
            figures.append(FigurePlan(where=f"{a}|{b}", key=DIFF,
                                      expected_width=None, labels=0))
            continue
        ra = _residuals(ga, common, lift[(a, "supports_gold")])
        rb = _residuals(gb, common, lift[(b, "supports_gold")])
        q_var = _question_variance([x - y for x, y in zip(ra, rb, strict=True)])
        labels = sum(s.sample for s in strata if s.label == "supports_gold" and s.provider in (a, b))
        figures.append(FigurePlan(where=f"{a}|{b}", key=DIFF,
                                  expected_width=2 * _z(len(common)) * math.sqrt(va + vb + q_var), labels=labels))
    return AuditPlan(strata=strata, figures=figures, notes=notes)
