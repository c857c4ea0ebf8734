"""Citation metrics per arm (docs/how-to/hosted.md), from the citations `answer.final` records and the judge's verdicts.

A citation links to the judge item with its normalised URL (recorded as `item`). Over the current trajectories with
an answer, per arm:

- `citations_per_answer`: citations / answers;
- `citation_supports_answer`: cited items (distinct per answer) with a valid verdict whose evidence supports the final
  answer / such cited items;
- `citation_supports_gold`: cited items with a valid verdict whose evidence supports the gold answer (the snippet
  where the caller received one, or the page) / such cited items;
- `uncited_support`: answers whose trajectory had a valid item supporting gold that the answer did not cite / answers.

The three shares carry intervals (`_ci`, the proportion interval clustered by question). The keys are added only when
some answer in the store cites, so a store without citations reports as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction

import msgspec

from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._model import ArmMetrics, Interval
from searchtrace.analytics._rules import TRAJECTORIES_CTE, first_verdicts, surface_support
from searchtrace.store import Citation, Cursor

CITED_SQL = f"""
WITH {TRAJECTORIES_CTE},
ca AS (SELECT stream_id, arg_max(citations, position) AS citations FROM answers GROUP BY stream_id),
it AS ({ITEMS_SQL}),
v AS ({first_verdicts("$run")})
SELECT tr.arm, tr.qid, tr.stream_id, ca.citations,
       list(it.url_normalized) FILTER (WHERE v.valid AND coalesce(v.supports_final_answer, false)) AS supports_answer,
       list(it.url_normalized) FILTER (WHERE v.valid AND ({surface_support("v", "it")}
                                                          OR coalesce(v.page_supports_gold, false))) AS supports_gold,
       list(it.url_normalized) FILTER (WHERE v.valid) AS judged
FROM tr JOIN ca USING (stream_id)
LEFT JOIN it ON it.stream_id = tr.stream_id
LEFT JOIN v ON v.trajectory_id = it.trajectory_id AND v.url_normalized = it.url_normalized
GROUP BY tr.arm, tr.qid, tr.stream_id, ca.citations, tr.position ORDER BY tr.position
"""
"""Per current trajectory with an answer: its arm, question, the answer's citations (JSON) and its valid items that
support the answer, support gold, and all valid items (normalised URLs)."""

_citations = msgspec.json.Decoder(list[Citation])


def citation_metrics(con: Cursor, judge_run_id: str | None, blocks: Mapping[str, ArmMetrics]) -> None:
    """Each block's citation keys, and their denominators in `denominators`, when some answer in the store cites
    (run inside analytics._sources.reading); nothing otherwise."""
    rows = con.execute(CITED_SQL, {"run": judge_run_id}).fetchall()
    if not any(r[3] for r in rows):
        return
    from searchtrace.analytics._uncertainty import proportion_interval

    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_q: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
    for arm, qid, _, raw, answer, gold, judged in rows:
        cites = _citations.decode(raw) if raw else []
        cited = {c.item for c in cites if c.item}
        judged_cited = cited & set(judged or [])
        c = counts[arm]
        c["final_answers"] += 1
        c["citations"] += len(cites)
        c["cited_items"] += len(cited)
        c["cited_items_judged"] += len(judged_cited)
        hits = {"supports_answer": len(judged_cited & set(answer or [])),
                "supports_gold": len(judged_cited & set(gold or [])),
                "uncited": int(bool(set(gold or []) - cited))}
        for key, y in hits.items():
            c[key] += y
            cell = per_q[arm][key][qid]
            cell[0] += y
            cell[1] += len(judged_cited) if key != "uncited" else 1

    def share(arm: str, key: str, den: str) -> tuple[float | None, int, Interval | None]:
        """(share, its count, its interval clustered by question) of one citation share of `arm`."""
        cells = [v for v in per_q[arm][key].values() if v[1]]
        total, hit = counts[arm][den], counts[arm][key]
        interval, _ = proportion_interval([y for y, _ in cells], [m for _, m in cells]) if cells else (None, None)
        return None if total == 0 else float(Fraction(hit, total)), hit, None if interval is None else list(interval)

    for arm, block in blocks.items():
        block.denominators.citations_per_answer = "final_answers"
        block.denominators.citation_supports_answer = block.denominators.citation_supports_gold = "cited_items_judged"
        block.denominators.uncited_support = "final_answers"
        if arm not in counts:
            continue
        c = counts[arm]
        block.final_answers, block.citations = c["final_answers"], c["citations"]
        block.cited_items, block.cited_items_judged = c["cited_items"], c["cited_items_judged"]
        block.citations_per_answer = float(Fraction(c["citations"], c["final_answers"]))
        (block.citation_supports_answer, block.citation_supports_answer_count,
         block.citation_supports_answer_ci) = share(arm, "supports_answer", "cited_items_judged")
        (block.citation_supports_gold, block.citation_supports_gold_count,
         block.citation_supports_gold_ci) = share(arm, "supports_gold", "cited_items_judged")
        block.uncited_support, block.uncited_support_count, block.uncited_support_ci = share(arm, "uncited",
                                                                                            "final_answers")
