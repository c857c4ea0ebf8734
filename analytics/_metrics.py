"""Every metric of docs/concepts/metrics.md as a deterministic function of events: SQL over typed relations, exact integer sums.

Heavy work (items, verdict join, per-trajectory counts, URL overlaps) runs in DuckDB and returns integers
only (latencies are summed as integer microseconds), so no floating-point aggregate depends on thread
scheduling; Python then forms each ratio with one division of exact integers or Fractions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from fractions import Fraction
from itertools import combinations
from typing import Any

import msgspec

from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._model import (
    PARTITION,
    ArmMetrics,
    Complementarity,
    Denominators,
    Partition,
    QueryOutcome,
)
from searchtrace.analytics._rules import (
    ANSWERS_CTE,
    AUDIT_CTE,
    TRAJECTORIES_CTE,
    decode_aliases,
    first_verdicts,
    partition_cell,
    surface_support,
)
from searchtrace.analytics._textnorm import alias_scores
from searchtrace.store import Cursor


class TrajectoryStats(msgspec.Struct, kw_only=True):
    """One trajectory's integer facts for one judge run (the unit every per-trajectory mean averages over)."""

    stream_id: str
    trajectory_id: str
    provider: str
    qid: str
    epoch: int
    gold_answer: str
    final_answer: str | None
    semantic_match: bool | None
    searches: int
    fetches: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    page_tokens: int
    latency_us: int
    domains: int
    items: int
    valid: int
    invalid: int
    snippet_only: int
    page_visible: int
    smart: int
    missed: int
    blind: int
    noop: int
    unobserved: int = 0  # docs/how-to/hosted.md: valid items whose caller received no snippet (the fifth cell)
    discovered: int
    supported: int  # valid items with S
    contradicted: int  # valid items with snippet.contradicts_gold
    supported_appearances: int
    supported_rank1: int
    run_id: str = ""
    arm: str = ""  # docs/how-to/compare.md: what the report groups by (analytics._rules.ARM_SQL; the provider by default)
    gold_aliases: list[str] = []  # docs/how-to/compare.md: every accepted answer when the dataset gave several (else empty)

    @property
    def answers(self) -> list[str]:
        """Every accepted answer: the aliases, or just the gold answer."""
        return self.gold_aliases or [self.gold_answer]

    @property
    def partition(self) -> Partition:
        """Its valid items per cell of the support partition, each cell's count read from its own field."""
        return Partition(smart=self.smart, missed=self.missed, blind=self.blind, noop=self.noop,
                         unobserved=self.unobserved)


def _lat(col: str) -> str:
    return f"sum(CAST(round(coalesce({col}, 0) * 1000) AS BIGINT))"


_CELL_COUNTS = ",\n    ".join(f"count(*) FILTER (WHERE ok AND cell = '{c.name}') AS {f}"
                               for f, c in zip(Partition.__struct_fields__, PARTITION, strict=True))
"""SQL: the valid items per partition cell, each named as its Partition field (and TrajectoryStats')."""

TRAJECTORY_SQL = f"""
WITH {TRAJECTORIES_CTE}, {AUDIT_CTE}, {ANSWERS_CTE},
sc AS (SELECT stream_id, count(*) AS n FROM search_calls GROUP BY stream_id),
sl AS (SELECT stream_id, {_lat("latency_ms")} AS lat FROM search_completions GROUP BY stream_id),
fc AS (SELECT stream_id, count(*) AS n FROM fetch_calls GROUP BY stream_id),
fl AS (SELECT stream_id, sum(coalesce(n_tokens, 0)) AS page_tokens, {_lat("latency_ms")} AS lat
       FROM fetch_completions GROUP BY stream_id),
mu AS (SELECT stream_id, sum(coalesce(input_tokens, 0)) AS i, sum(coalesce(output_tokens, 0)) AS o,
              sum(coalesce(reasoning_tokens, 0)) AS r, {_lat("latency_ms")} AS lat
       FROM model_responses GROUP BY stream_id),
dm AS (SELECT stream_id, count(DISTINCT domain) AS n FROM search_results GROUP BY stream_id),
it AS ({ITEMS_SQL}),
v AS ({first_verdicts("$run")}),
iv AS (
  SELECT it.stream_id, it.fetched, it.n_appearances, it.n_rank1, v.valid, it.snippet_observed,
         coalesce(v.valid, false) AS ok,
         {surface_support("v", "it")} AS s,
         (coalesce(v.snippet_contradicts_gold, false) AND it.snippet_shown) AS c,
         coalesce(v.has_page, false) AS pg,
         coalesce(v.page_supports_gold, false) AS ps,
         {partition_cell(surface_support("v", "it"), "it.fetched", "it.snippet_observed")} AS cell
  FROM it LEFT JOIN v ON v.trajectory_id = it.trajectory_id AND v.url_normalized = it.url_normalized
),
ist AS (
  SELECT stream_id, count(*) AS items,
    count(*) FILTER (WHERE ok) AS valid,
    count(*) FILTER (WHERE valid = false) AS invalid,
    count(*) FILTER (WHERE ok AND NOT pg) AS snippet_only,
    count(*) FILTER (WHERE ok AND pg) AS page_visible,
    {_CELL_COUNTS},
    count(*) FILTER (WHERE ok AND fetched AND NOT s AND ps) AS discovered,
    count(*) FILTER (WHERE ok AND s) AS supported,
    count(*) FILTER (WHERE ok AND c) AS contradicted,
    coalesce(sum(n_appearances) FILTER (WHERE ok AND s), 0) AS supported_appearances,
    coalesce(sum(n_rank1) FILTER (WHERE ok AND s), 0) AS supported_rank1
  FROM iv GROUP BY stream_id
)
SELECT tr.stream_id, tr.trajectory_id, tr.provider, tr.qid, tr.epoch, tr.gold_answer, fa.final_answer, aud.semantic_match,
  coalesce(sc.n, 0) AS searches, coalesce(fc.n, 0) AS fetches,
  coalesce(mu.i, 0) AS input_tokens, coalesce(mu.o, 0) AS output_tokens, coalesce(mu.r, 0) AS reasoning_tokens,
  coalesce(fl.page_tokens, 0) AS page_tokens,
  coalesce(mu.lat, 0) + coalesce(sl.lat, 0) + coalesce(fl.lat, 0) AS latency_us,
  coalesce(dm.n, 0) AS domains,
  coalesce(ist.items, 0) AS items, coalesce(ist.valid, 0) AS valid, coalesce(ist.invalid, 0) AS invalid,
  coalesce(ist.snippet_only, 0) AS snippet_only, coalesce(ist.page_visible, 0) AS page_visible,
  coalesce(ist.smart, 0) AS smart, coalesce(ist.missed, 0) AS missed, coalesce(ist.blind, 0) AS blind,
  coalesce(ist.noop, 0) AS noop, coalesce(ist.unobserved, 0) AS unobserved, coalesce(ist.discovered, 0) AS discovered,
  coalesce(ist.supported, 0) AS supported, coalesce(ist.contradicted, 0) AS contradicted,
  coalesce(ist.supported_appearances, 0) AS supported_appearances,
  coalesce(ist.supported_rank1, 0) AS supported_rank1, tr.gold_aliases, tr.run_id, tr.arm
FROM tr
LEFT JOIN aud USING (stream_id) LEFT JOIN fa USING (stream_id) LEFT JOIN sc USING (stream_id)
LEFT JOIN sl USING (stream_id) LEFT JOIN fc USING (stream_id) LEFT JOIN fl USING (stream_id)
LEFT JOIN mu USING (stream_id) LEFT JOIN dm USING (stream_id) LEFT JOIN ist USING (stream_id)
ORDER BY tr.position
"""
"""Per trajectory stream: counts, token sums, audit, answer and the item partition for judge run `$run`."""


OVERLAP_SQL = f"""
WITH {TRAJECTORIES_CTE},
u AS (SELECT DISTINCT tr.arm, tr.qid, tr.epoch, r.url_normalized
      FROM search_results r JOIN tr USING (stream_id)),
x AS (SELECT a.arm AS pa, b.arm AS pb, a.qid, a.epoch, count(*) AS n
      FROM u a JOIN u b ON a.qid = b.qid AND a.epoch = b.epoch AND a.url_normalized = b.url_normalized
                        AND a.arm < b.arm
      GROUP BY a.arm, b.arm, a.qid, a.epoch)
SELECT 'n' AS kind, arm AS pa, NULL AS pb, qid, epoch, count(*) AS n FROM u GROUP BY arm, qid, epoch
UNION ALL SELECT 'x', pa, pb, qid, epoch, n FROM x
"""
"""Per (arm, qid, epoch): distinct result URLs; per arm pair and (qid, epoch): shared URLs (an arm is the provider
unless the report names another axis)."""


def trajectory_stats(con: Cursor, judge_run_id: str | None) -> list[TrajectoryStats]:
    """One row per current trajectory (run inside analytics._sources.reading)."""
    cur = con.execute(TRAJECTORY_SQL, {"run": judge_run_id})
    names = [d[0] for d in cur.description or ()]
    out: list[TrajectoryStats] = []
    for row in cur.fetchall():
        rec: dict[str, Any] = {
            k: (int(v) if isinstance(v, int) and not isinstance(v, bool) else v) for k, v in zip(names, row, strict=True)
        }
        rec["gold_aliases"] = decode_aliases(rec["gold_aliases"])
        out.append(TrajectoryStats(**rec))
    return out


def _ratio(num: int | Fraction, den: int) -> float | None:
    return None if den == 0 else float(Fraction(num) / den)


Scores = list[tuple[int, Fraction]]


def answer_scores(rows: Iterable[TrajectoryStats]) -> Scores:
    """(exact match, token F1) of each trajectory's final answer against its gold answer (docs/concepts/metrics.md), each the
    maximum over the question's aliases when it has several (docs/how-to/compare.md)."""
    return [alias_scores(r.final_answer, r.answers) for r in rows]


def provider_metrics(rows: list[TrajectoryStats], scores: Scores | None = None) -> ArmMetrics:
    """The §8 provider block (plus a few extra keys) from one provider's trajectories (`scores`: their
    answer_scores, when the caller already has them); the surface size, latency and shown figures at their
    defaults (analytics._report fills them)."""
    n = len(rows)
    scores = answer_scores(rows) if scores is None else scores

    def total(get: Callable[[TrajectoryStats], int]) -> int:
        return sum(map(get, rows))

    audited = sum(1 for r in rows if r.semantic_match is not None)
    correct = sum(1 for r in rows if r.semantic_match)
    em = sum(s[0] for s in scores)
    f1 = sum((s[1] for s in scores), Fraction(0))
    valid, supported = total(lambda r: r.valid), total(lambda r: r.supported)
    observed = valid - total(lambda r: r.unobserved)  # docs/how-to/hosted.md: valid items whose snippet reached the caller
    outcome = QueryOutcome()
    for r in rows:
        side = outcome.answerable if surface_answerable(r) else outcome.not_answerable
        if r.semantic_match is None:
            side.unaudited += 1
        elif r.semantic_match:
            side.correct += 1
        else:
            side.incorrect += 1
    block = ArmMetrics(
        trajectories=n,
        audited=audited,
        correct=correct,
        accuracy=_ratio(correct, audited),
        exact_match=_ratio(em, n) or 0.0,
        token_f1=_ratio(f1, n) or 0.0,
        searches_per_trajectory=_ratio(total(lambda r: r.searches), n) or 0.0,
        fetches_per_trajectory=_ratio(total(lambda r: r.fetches), n) or 0.0,
        input_tokens_per_trajectory=_ratio(total(lambda r: r.input_tokens), n) or 0.0,
        output_tokens_per_trajectory=_ratio(total(lambda r: r.output_tokens), n) or 0.0,
        reasoning_tokens_per_trajectory=_ratio(total(lambda r: r.reasoning_tokens), n) or 0.0,
        page_tokens_per_trajectory=_ratio(total(lambda r: r.page_tokens), n) or 0.0,
        latency_ms_per_trajectory=_ratio(Fraction(total(lambda r: r.latency_us), 1000), n) or 0.0,
        distinct_domains_per_trajectory=_ratio(total(lambda r: r.domains), n) or 0.0,
        tokens_per_correct=_ratio(total(lambda r: r.input_tokens) + total(lambda r: r.output_tokens), correct),
        items=total(lambda r: r.items),
        valid_items=valid,
        invalid_items=total(lambda r: r.invalid),
        snippet_only_items=total(lambda r: r.snippet_only),
        page_visible_items=total(lambda r: r.page_visible),
        partition=Partition(smart=total(lambda r: r.smart), missed=total(lambda r: r.missed),
                            blind=total(lambda r: r.blind), noop=total(lambda r: r.noop),
                            unobserved=total(lambda r: r.unobserved)),
        snippet_observed_items=observed,
        unobserved_items=total(lambda r: r.unobserved),
        denominators=Denominators(),
        discovered_support=total(lambda r: r.discovered),
        surface_supported_items=supported,
        surface_contradicted_items=total(lambda r: r.contradicted),
        surface_support_rate=_ratio(supported, observed),
        surface_answerable_queries=sum(1 for r in rows if surface_answerable(r)),
        gold_rank1_share=_ratio(total(lambda r: r.supported_rank1), total(lambda r: r.supported_appearances)),
        contradiction_gold_ratio=_ratio(total(lambda r: r.contradicted), supported),
        query_outcome=outcome,
    )
    if (spread := epoch_spread(rows)) is not None:
        block.accuracy_epoch_sd, block.accuracy_epoch_sd_questions = spread
    return block


def epoch_spread(rows: list[TrajectoryStats]) -> tuple[float | None, int] | None:
    """(`accuracy_epoch_sd`, `accuracy_epoch_sd_questions`) (docs/concepts/statistics.md) when the provider has k >= 2
    epochs: the sample standard deviation (n - 1) over epochs of per-epoch accuracy over the questions audited in every
    epoch (a question missing an epoch would move an epoch's accuracy by which questions it has, not by chance), and
    how many such questions (the sd is None when there are none); None for k = 1."""
    epochs = {r.epoch for r in rows}
    if len(epochs) < 2:
        return None
    cells: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in rows:
        if r.semantic_match is not None:
            cell = cells[r.qid][r.epoch]
            cell[0] += 1
            cell[1] += bool(r.semantic_match)
    complete = [q for q, per in cells.items() if len(per) == len(epochs)]
    if not complete:
        return None, 0
    accs = []
    for e in sorted(epochs):
        audited = sum(cells[q][e][0] for q in complete)
        accs.append(Fraction(sum(cells[q][e][1] for q in complete), audited))
    mean = sum(accs, Fraction(0)) / len(accs)
    var = sum(((a - mean) ** 2 for a in accs), Fraction(0)) / (len(accs) - 1)
    return math.sqrt(var), len(complete)


Cell = tuple[str, int]  # (qid, epoch): where two arms are paired (docs/concepts/statistics.md)
COMPLEMENTARITY = ("a_only", "b_only", "both", "neither")  # the classes of a cell both arms ran


def surface_answerable(r: TrajectoryStats) -> bool:
    """docs/concepts/metrics.md: the trajectory's surface could answer it (a valid item whose surface supports gold)."""
    return r.supported > 0


def answerable_cells(rows: Iterable[tuple[str, Cell, bool]]) -> dict[str, dict[Cell, bool]]:
    """Per arm, every (qid, epoch) cell it ran from (arm, cell, surface_answerable) of each trajectory: answerable
    when any of its trajectories in the cell is (the one rule of complementarity, for the report and the explorer)."""
    out: dict[str, dict[Cell, bool]] = defaultdict(dict)
    for arm, cell, yes in rows:
        out[arm][cell] = out[arm].get(cell, False) or yes
    return dict(out)


def pair_cells(answerable: dict[str, dict[Cell, bool]], a: str, b: str) -> list[tuple[Cell, str]]:
    """The (qid, epoch) cells both arms ran, in order, each with its class in COMPLEMENTARITY (A's view first)."""
    sa, sb = answerable.get(a, {}), answerable.get(b, {})
    return [(cell, "both" if sa[cell] and sb[cell] else "a_only" if sa[cell] else "b_only" if sb[cell] else "neither")
            for cell in sorted(set(sa) & set(sb))]


def paired_qids(a: dict[str, int], b: dict[str, int]) -> list[str]:
    """The questions a paired test of A − B rests on (docs/concepts/statistics.md), in order: both arms ran them, with a positive
    denominator (audited trajectories, valid items) on both sides; `a`, `b`: qid -> that denominator."""
    return [q for q in sorted(set(a) & set(b)) if a[q] and b[q]]


def complementarity(con: Cursor, rows: Iterable[TrajectoryStats]) -> dict[str, Complementarity]:
    """docs/concepts/metrics.md complementarity for every arm pair (names in code-point order; arms are providers unless the report
    names another axis, §19), over the (qid, epoch) cells both have (§12)."""
    answerable = answerable_cells((r.arm, (r.qid, r.epoch), surface_answerable(r)) for r in rows)
    sizes: dict[tuple[str, Cell], int] = {}
    shared: dict[tuple[str, str, Cell], int] = {}
    for kind, pa, pb, qid, epoch, n in con.execute(OVERLAP_SQL).fetchall():
        if kind == "n":
            sizes[(pa, (qid, int(epoch)))] = int(n)
        else:
            a, b = sorted((pa, pb))
            shared[(a, b, (qid, int(epoch)))] = int(n)
    out: dict[str, Complementarity] = {}
    for a, b in combinations(sorted(answerable), 2):
        common = pair_cells(answerable, a, b)
        counts = dict.fromkeys(COMPLEMENTARITY, 0)
        jac = Fraction(0)
        for cell, kind in common:
            counts[kind] += 1
            inter = shared.get((a, b, cell), 0)
            union = sizes.get((a, cell), 0) + sizes.get((b, cell), 0) - inter
            jac += Fraction(inter, union) if union else 0
        out[f"{a}|{b}"] = Complementarity(a_only=counts["a_only"], b_only=counts["b_only"], both=counts["both"],
                                          neither=counts["neither"],
                                          url_jaccard=float(jac / len(common)) if common else None)
    return out
