"""Dollar cost per provider (SPEC §13, §18), only from prices the user gives (`report --prices FILE` or `[prices]`).

What is billed, per question (every epoch of it, current trajectories only), then summed per provider:
- search: `search.completed` calls with status `ok` (providers bill successful requests) x USD per 1,000 requests,
  priced by the provider's name in the run, else by its kind;
- fetch: tokens of fetched content (`fetch.completed` n_tokens, status `ok`) x USD per 1M tokens of the run's fetch
  backend (`jina` when the store does not say). Cache hits are billed too (SPEC §18: the cost a user without our
  fetch cache pays); analytics._latency counts them (`fetch_cache_hits`);
- agent model: `model.responded` usage of the run's agent model: (input - cached) x input + cached x cached_input
  (input when no cached price) + output x output, per 1M tokens (output as the endpoint reports it, reasoning
  included there, never added twice);
- judge model: the usage of every `judge.verdict` of the chosen judge run on the question's items, at the judge
  run's model price, cached input tokens at `cached_input` like the agent's.
A component whose price is missing (or whose model the store does not name) is null, never zero, and its name goes
into `unpriced` (the report prints one warning line); `usd_total`, `usd_per_trajectory` and `usd_per_correct` are
null when any component is. A component with nothing to bill is 0. Sums are exact fractions, so the same events
and prices give the same bytes, and a provider's figures are exactly the sum of its questions' (`question_costs`,
the unit the usd-per-correct interval resamples).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import msgspec

from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.engine import Prices, fetched_usd, load_prices, model_usd, parse_prices, searches_usd
from searchtrace.store import Cursor

__all__ = ["Prices", "load_prices", "parse_prices", "provider_costs", "question_costs", "recorded_prices",
           "warning_line"]

DEFAULT_BACKEND = "jina"


def recorded_prices(con: Cursor) -> Prices | None:
    """The `[prices]` table of the latest run.started that has one (a run config's own prices), else None."""
    row = con.execute(
        "SELECT run_id, json_extract(payload, '$.config.prices') FROM events WHERE type = 'run.started' "
        "AND json_extract(payload, '$.config.prices') IS NOT NULL ORDER BY position DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return parse_prices(msgspec.json.decode(str(row[1])), f"run {row[0]}: [prices]")


_RUNS_SQL = """
SELECT run_id, json_extract_string(payload, '$.config.agent.model'),
       json_extract_string(payload, '$.config.fetch.backend'), json_extract(payload, '$.config.providers')
FROM events WHERE type = 'run.started' ORDER BY position
"""

# One row per (kind, provider, qid, run): what that question's trajectories of that run used. `question` rows name
# every question, so one with nothing to bill is there at 0.
_USAGE_SQL = f"""
WITH {TRAJECTORIES_CTE},
runs AS (SELECT stream_id, any_value(run_id) AS run_id FROM events WHERE type = 'trajectory.started' GROUP BY 1),
t AS (SELECT tr.stream_id, tr.trajectory_id, tr.provider, tr.qid, runs.run_id FROM tr JOIN runs USING (stream_id))
SELECT 'question' AS kind, t.provider, t.qid, NULL AS run_id, 0 AS a, 0 AS b, 0 AS c FROM t GROUP BY 2, 3
UNION ALL
SELECT 'search', t.provider, t.qid, t.run_id, count(*), 0, 0
FROM search_completions s JOIN t USING (stream_id) WHERE s.status = 'ok' GROUP BY 2, 3, 4
UNION ALL
SELECT 'fetch', t.provider, t.qid, t.run_id, coalesce(sum(f.n_tokens), 0), 0, 0
FROM fetch_completions f JOIN t USING (stream_id) WHERE f.status = 'ok' GROUP BY 2, 3, 4
UNION ALL
SELECT 'agent', t.provider, t.qid, t.run_id, coalesce(sum(m.input_tokens), 0), coalesce(sum(m.cached_tokens), 0),
       coalesce(sum(m.output_tokens), 0)
FROM model_responses m JOIN t USING (stream_id) GROUP BY 2, 3, 4
UNION ALL
SELECT 'judge', t.provider, t.qid, NULL, coalesce(sum(v.input_tokens), 0), coalesce(sum(v.cached_tokens), 0),
       coalesce(sum(v.output_tokens), 0)
FROM verdicts v JOIN t ON t.trajectory_id = v.trajectory_id WHERE v.judge_run_id = $run GROUP BY 2, 3
"""

COMPONENTS = ("search_usd", "fetch_usd", "agent_model_usd", "judge_model_usd")

Components = dict[str, Fraction | None]  # COMPONENTS -> USD, None when unpriced


def _sum(values: Iterable[Fraction | None]) -> Fraction | None:
    """Exact sum; None when any term is (an unpriced part is never counted as zero)."""
    total = Fraction(0)
    for v in values:
        if v is None:
            return None
        total += v
    return total


def _question_components(
    con: Cursor, prices: Prices, judge_run_id: str | None
) -> tuple[dict[str, dict[str, Components]], set[str]]:
    """({provider: {qid: USD components}}, names of what had no price): the one pricing rule, per question."""
    runs: dict[str, tuple[str | None, str, dict[str, str]]] = {}
    for run_id, model, backend, providers in con.execute(_RUNS_SQL).fetchall():
        kinds = {n: str(c.get("kind") or n) for n, c in (msgspec.json.decode(providers) if providers else {}).items()}
        runs[str(run_id)] = (model, backend or DEFAULT_BACKEND, kinds)
    judge_model = None
    if judge_run_id is not None:
        row = con.execute("SELECT model FROM judge_runs WHERE judge_run_id = ? ORDER BY position LIMIT 1",
                          [judge_run_id]).fetchone()
        judge_model = None if row is None else row[0]
    usd: dict[str, dict[str, Components]] = defaultdict(dict)
    unpriced: set[str] = set()

    def add(provider: str, qid: str, comp: str, value: Fraction | None, missing: str) -> None:
        if value is None:
            unpriced.add(missing)
        block = usd[provider].setdefault(qid, dict.fromkeys(COMPONENTS, Fraction(0)))
        block[comp] = _sum((block[comp], value))

    for kind, provider, qid, run_id, a, b, c in con.execute(_USAGE_SQL, {"run": judge_run_id}).fetchall():
        provider, qid, a, b, c = str(provider), str(qid), int(a), int(b), int(c)
        model, backend, kinds = runs.get(str(run_id), (None, DEFAULT_BACKEND, {}))
        if kind == "question":  # a question with nothing to bill is there at 0
            usd[provider].setdefault(qid, dict.fromkeys(COMPONENTS, Fraction(0)))
        elif kind == "search":
            price = prices.search.get(provider, prices.search.get(kinds.get(provider, provider)))
            add(provider, qid, "search_usd", None if price is None else searches_usd(price, a), f"search {provider}")
        elif kind == "fetch":
            price = prices.fetch.get(backend)
            add(provider, qid, "fetch_usd", None if price is None else fetched_usd(price, a), f"fetch {backend}")
        elif kind == "agent":
            mp = prices.models.get(model) if model else None
            value = Fraction(0) if a + c == 0 else (None if mp is None else model_usd(mp, a, b, c))
            add(provider, qid, "agent_model_usd", value,
                f"model {model or '(not named in run ' + str(run_id) + ')'}")
        else:
            mp = prices.models.get(judge_model) if judge_model else None
            value = Fraction(0) if a + c == 0 else (None if mp is None else model_usd(mp, a, b, c))
            add(provider, qid, "judge_model_usd", value, f"judge model {judge_model or '(not named)'}")
    return usd, unpriced


def question_costs(con: Cursor, prices: Prices, judge_run_id: str | None) -> dict[str, dict[str, Fraction] | None]:
    """{provider: {qid: USD of that question's trajectories, every epoch}}, a provider None when any of its costs
    had no price: the resampling unit of `usd_per_correct`'s interval. Needs the relations on the search path."""
    per, _ = _question_components(con, prices, judge_run_id)
    out: dict[str, dict[str, Fraction] | None] = {}
    for provider, questions in sorted(per.items()):
        totals = {qid: _sum(comps.values()) for qid, comps in sorted(questions.items())}
        out[provider] = None if any(v is None for v in totals.values()) else {
            qid: v for qid, v in totals.items() if v is not None}
    return out


def provider_costs(
    con: Cursor, prices: Prices, judge_run_id: str | None, correct: dict[str, tuple[int, int]]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """({provider: USD components, total, per trajectory, per correct}, sorted names of what had no price): the sums
    over the provider's questions of `question_costs`' components (exact, so the totals agree to the last bit).

    `correct`: {provider: (trajectories, correct answers)} from the report. Needs the relations on the search path."""
    per, unpriced = _question_components(con, prices, judge_run_id)
    out: dict[str, dict[str, Any]] = {}
    for provider, (n, right) in correct.items():
        questions = per.get(provider, {}).values()
        comps = {k: _sum(q[k] for q in questions) for k in COMPONENTS}
        total = _sum(comps.values())
        out[provider] = {
            **{k: None if v is None else float(v) for k, v in comps.items()},
            "usd_total": None if total is None else float(total),
            "usd_per_trajectory": None if total is None or n == 0 else float(total / n),
            "usd_per_correct": None if total is None or right == 0 else float(total / right),
        }
    return out, sorted(unpriced)


def warning_line(unpriced: list[str]) -> str | None:
    """The one line the report prints when something had no price (its cost is null, not zero)."""
    if not unpriced:
        return None
    return f"prices: no price for {', '.join(unpriced)}; those costs are null (never counted as zero)"
