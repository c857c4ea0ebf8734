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
from fractions import Fraction
from typing import Any

import msgspec

from searchtrace.analytics._items import ITEMS_SQL
from searchtrace.analytics._rules import TRAJECTORIES_CTE, first_verdicts, surface_support
from searchtrace.store import Citation, Cursor

SHARES = {"citation_supports_answer": "cited_items_judged", "citation_supports_gold": "cited_items_judged",
          "uncited_support": "final_answers"}
"""Each citation share and the count it divides by (the report names it in `denominators`)."""

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


def citation_metrics(con: Cursor, judge_run_id: str | None) -> dict[str, dict[str, Any]]:
    """{arm: citation keys} (run inside analytics._sources.reading); empty when no answer cites."""
    rows = con.execute(CITED_SQL, {"run": judge_run_id}).fetchall()
    if not any(r[3] for r in rows):
        return {}
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
        hits = {"citation_supports_answer": len(judged_cited & set(answer or [])),
                "citation_supports_gold": len(judged_cited & set(gold or [])),
                "uncited_support": int(bool(set(gold or []) - cited))}
        for key, y in hits.items():
            c[key + "_count"] += y
            cell = per_q[arm][key][qid]
            cell[0] += y
            cell[1] += len(judged_cited) if SHARES[key] == "cited_items_judged" else 1
    out: dict[str, dict[str, Any]] = {}
    for arm, c in counts.items():
        block: dict[str, Any] = {"final_answers": c["final_answers"], "citations": c["citations"], "cited_items": c["cited_items"],
                                 "cited_items_judged": c["cited_items_judged"],
                                 "citations_per_answer": float(Fraction(c["citations"], c["final_answers"]))}
        for key, den in SHARES.items():
            cells = [v for v in per_q[arm][key].values() if v[1]]
            total = c[den]
            block[key] = None if total == 0 else float(Fraction(c[key + "_count"], total))
            block[key + "_count"] = c[key + "_count"]
            interval, _ = proportion_interval([y for y, _ in cells], [m for _, m in cells]) if cells else (None, None)
            block[key + "_ci"] = interval
        out[arm] = block
    return out
