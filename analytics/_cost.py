"""Dollar cost per arm (docs/reference/prices.md; §19: an arm is the provider unless the report names another axis), only from
prices the user gives (`report --prices FILE` or `[prices]`).

What is billed, per question (every epoch of it, current trajectories only), then summed per arm:
- search: `search.completed` calls with status `ok` (providers bill successful requests) x USD per 1,000 requests,
  priced by the provider's name in the run, else by its kind (whatever the arm); a hosted search layer's searches
  (docs/how-to/hosted.md) are its per-call fee, and its page reads are not billed as fetches (they are its tokens);
- fetch: tokens of fetched content (`fetch.completed` n_tokens, status `ok`) x USD per 1M tokens of the run's fetch
  backend (`jina` when the store does not say). Cache hits are billed too (docs/concepts/statistics.md: the cost a user without our
  fetch cache pays); analytics._latency counts them (`fetch_cache_hits`);
- agent model: `model.responded` usage of the run's agent model: (input - cached) x input + cached x cached_input
  (input when no cached price) + output x output, per 1M tokens (output as the endpoint reports it, reasoning
  included there, never added twice);
- judge model: the usage of every `judge.verdict` of the chosen judge run on the question's items, at the judge
  run's model price, cached input tokens at `cached_input` like the agent's; a verdict from a model batch (its
  `batch_id`, docs/how-to/batch.md) at `batch_discount` of that price, and that part also as `judge_model_batch_usd`
  (within judge_model_usd, never added to the total twice).
A component whose price is missing (or whose model the store does not name) is null, never zero, and its name goes
into `unpriced` (the report prints one warning line); `usd_total`, `usd_per_trajectory` and `usd_per_correct` are
null when any component is. A component with nothing to bill is 0. Sums are exact fractions, so the same events
and prices give the same bytes, and an arm's figures are exactly the sum of its questions' (`question_costs`,
the unit the usd-per-correct interval resamples).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from fractions import Fraction

import msgspec

from searchtrace.adapters import HOSTED_LAYERS
from searchtrace.analytics._model import ArmMetrics
from searchtrace.analytics._rules import TRAJECTORIES_CTE
from searchtrace.engine import Prices, fetched_usd, load_prices, model_usd, parse_prices, searches_usd
from searchtrace.store import Cursor

__all__ = ["Prices", "load_prices", "parse_prices", "question_costs", "recorded_prices", "report_costs",
           "warning_line"]

DEFAULT_BACKEND = "jina"


def recorded_prices(con: Cursor) -> Prices | None:
    """The `[prices]` table of the latest run.started that has one (a run config's own prices), else None."""
    row = con.execute(
        "SELECT run_id, json_extract(payload, '$.config.prices') FROM events WHERE type = 'run.started' "
        "AND json_extract(payload, '$.config.prices') IS NOT NULL ORDER BY recorded_at DESC, position DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return parse_prices(msgspec.json.decode(str(row[1])), f"run {row[0]}: [prices]")


_RUNS_SQL = """
SELECT run_id, json_extract_string(payload, '$.config.agent.model'),
       json_extract_string(payload, '$.config.fetch.backend'), json_extract(payload, '$.config.providers')
FROM events WHERE type = 'run.started' ORDER BY position
"""

# One row per (kind, arm, provider, qid, run): what that question's trajectories of that run used. `question` rows
# name every question of an arm, so one with nothing to bill is there at 0. The arm (analytics._rules.ARM_SQL) is
# the provider unless the report names another axis; pricing always uses the provider's own name.
_HOSTED = ", ".join(f"'{name}'" for name in HOSTED_LAYERS)  # their page reads are the model API's, billed as its tokens
_USAGE_SQL = f"""
WITH {TRAJECTORIES_CTE},
t AS (SELECT tr.stream_id, tr.trajectory_id, tr.arm, tr.provider, tr.qid, tr.run_id, tr.model FROM tr)
SELECT 'question' AS kind, t.arm, NULL AS provider, t.qid, NULL AS run_id, 0 AS a, 0 AS b, 0 AS c, NULL AS model
FROM t GROUP BY 2, 4
UNION ALL
SELECT 'search', t.arm, t.provider, t.qid, t.run_id, count(*), 0, 0, NULL
FROM search_completions s JOIN t USING (stream_id) WHERE s.status = 'ok' GROUP BY 2, 3, 4, 5
UNION ALL
SELECT 'fetch', t.arm, t.provider, t.qid, t.run_id, coalesce(sum(f.n_tokens), 0), 0, 0, NULL
FROM fetch_completions f JOIN t USING (stream_id) WHERE f.status = 'ok' AND t.provider NOT IN ({_HOSTED})
GROUP BY 2, 3, 4, 5
UNION ALL
SELECT 'agent', t.arm, t.provider, t.qid, t.run_id, coalesce(sum(m.input_tokens), 0), coalesce(sum(m.cached_tokens), 0),
       coalesce(sum(m.output_tokens), 0), t.model
FROM model_responses m JOIN t USING (stream_id) GROUP BY 2, 3, 4, 5, 9
UNION ALL
SELECT CASE WHEN v.batch_id IS NULL THEN 'judge' ELSE 'judge_batch' END, t.arm, t.provider, t.qid, NULL,
       coalesce(sum(v.input_tokens), 0), coalesce(sum(v.cached_tokens), 0), coalesce(sum(v.output_tokens), 0), NULL
FROM verdicts v JOIN t ON t.trajectory_id = v.trajectory_id WHERE v.judge_run_id = $run GROUP BY 1, 2, 3, 4
"""

COMPONENTS = ("search_usd", "fetch_usd", "agent_model_usd", "judge_model_usd")
# docs/how-to/batch.md: the part of judge_model_usd whose verdicts came from model batches (in it, not beside it)
BATCHED = "judge_model_batch_usd"

Rates = tuple[Fraction, Fraction, Fraction]  # USD of one unit of each of a usage row's counts (a, b, c)


def _sum(values: Iterable[int | None]) -> int | None:
    """Exact sum; None when any term is (an unpriced part is never counted as zero)."""
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


class _Priced(msgspec.Struct, frozen=True):
    """Every question's USD components as integer numerators over one denominator (None: unpriced), so sums over
    questions are exact integer sums, and the names of what had no price."""

    numerators: dict[str, dict[str, dict[str, int | None]]]  # arm -> qid -> component -> numerator
    denominator: int
    unpriced: frozenset[str]


def _priced(con: Cursor, prices: Prices, judge_run_id: str | None) -> _Priced:
    """The one pricing rule, per question. The engine's prices are linear in the counts, so a row's USD is each
    count times the USD of one unit of it (searches_usd(p, 1), model_usd(p, 0, 1, 0) for a cached token, ...):
    exactly the engine's figure, at integer speed over every question of a large store."""
    runs: dict[str, tuple[str | None, str, dict[str, str]]] = {}
    for run_id, model, backend, providers in con.execute(_RUNS_SQL).fetchall():
        kinds = {n: str(c.get("kind") or n) for n, c in (msgspec.json.decode(providers) if providers else {}).items()}
        runs[str(run_id)] = (model, backend or DEFAULT_BACKEND, kinds)
    judge_model = None
    if judge_run_id is not None:
        row = con.execute("SELECT model FROM judge_runs WHERE judge_run_id = ? ORDER BY position LIMIT 1",
                          [judge_run_id]).fetchone()
        judge_model = None if row is None else row[0]
    zero = Fraction(0)

    def unit_usd(kind: str, name: str | None) -> Rates | None:
        """USD of one unit of each count under price `name` of `kind` (search, fetch, model, a model's batch tokens
        at `batch_discount` of its price); None: no price."""
        if kind in ("model", "batch"):
            mp = prices.models.get(name) if name else None
            off = Fraction(1) if kind == "model" else Fraction(prices.batch_discount)
            return None if mp is None else (model_usd(mp, 1, 0, 0) * off, model_usd(mp, 0, 1, 0) * off,
                                            model_usd(mp, 0, 0, 1) * off)
        price = (prices.search if kind == "search" else prices.fetch).get(name or "")
        return None if price is None else ((searches_usd if kind == "search" else fetched_usd)(price, 1), zero, zero)

    rates: dict[tuple[str, str | None], Rates | None] = {}  # (kind, price name) -> unit_usd, once per price
    billed: list[tuple[str, str, str, tuple[int, int, int], tuple[str, str | None]]] = []
    questions: dict[str, list[str]] = defaultdict(list)
    unpriced: set[str] = set()
    for kind, arm, provider, qid, run_id, a, b, c, answered in con.execute(_USAGE_SQL, {"run": judge_run_id}).fetchall():
        arm, provider, qid, counts = str(arm), str(provider), str(qid), (int(a), int(b), int(c))
        model, backend, kinds = runs.get(str(run_id), (None, DEFAULT_BACKEND, {}))
        model = model or answered  # a proxied, imported or collected run: the model its turns name
        key: tuple[str, str | None] | None
        if kind == "question":  # every question, so one with nothing to bill is there at 0
            questions[arm].append(qid)
            continue
        if kind == "search":
            comp, missing = "search_usd", f"search {provider}"
            key = ("search", provider if provider in prices.search else kinds.get(provider, provider))
        elif kind == "fetch":
            comp, missing, key = "fetch_usd", f"fetch {backend}", ("fetch", backend)
        elif kind == "agent":
            comp, missing = "agent_model_usd", f"model {model or '(not named in run ' + str(run_id) + ')'}"
            key = None if counts[0] + counts[2] == 0 else ("model", model)
        else:
            comp, missing = "judge_model_usd", f"judge model {judge_model or '(not named)'}"
            key = None if counts[0] + counts[2] == 0 else ("model" if kind == "judge" else "batch", judge_model)
        if key is None:  # no model tokens: nothing to bill, priced or not
            continue
        if key not in rates:
            rates[key] = unit_usd(*key)
        if rates[key] is None:
            unpriced.add(missing)
        billed.append((arm, qid, comp, counts, key))
    denominator = math.lcm(1, *{r.denominator for unit in rates.values() if unit for r in unit})
    weights = {key: None if unit is None else tuple(r.numerator * (denominator // r.denominator) for r in unit)
               for key, unit in rates.items()}
    numerators: dict[str, dict[str, dict[str, int | None]]] = {
        arm: {qid: dict.fromkeys((*COMPONENTS, BATCHED), 0) for qid in qids} for arm, qids in questions.items()}
    for arm, qid, comp, (a, b, c), key in billed:
        block = numerators[arm][qid]
        w = weights[key]
        for part in (comp, BATCHED) if key[0] == "batch" else (comp,):
            old = block[part]
            block[part] = None if w is None or old is None else old + a * w[0] + b * w[1] + c * w[2]
    return _Priced(numerators=numerators, denominator=denominator, unpriced=frozenset(unpriced))


def question_costs(con: Cursor, prices: Prices, judge_run_id: str | None) -> dict[str, dict[str, Fraction] | None]:
    """{arm: {qid: USD of that question's trajectories, every epoch}}, an arm None when any of its costs
    had no price: the resampling unit of `usd_per_correct`'s interval. Needs the relations on the search path."""
    return _per_question(_priced(con, prices, judge_run_id))


def _per_question(priced: _Priced) -> dict[str, dict[str, Fraction] | None]:
    out: dict[str, dict[str, Fraction] | None] = {}
    for provider, questions in sorted(priced.numerators.items()):
        totals = {qid: _sum(comps[k] for k in COMPONENTS) for qid, comps in sorted(questions.items())}
        out[provider] = None if any(v is None for v in totals.values()) else {
            qid: Fraction(v, priced.denominator) for qid, v in totals.items() if v is not None}
    return out


def report_costs(
    con: Cursor, prices: Prices, judge_run_id: str | None, blocks: Mapping[str, ArmMetrics], *, per_question: bool
) -> tuple[list[str], dict[str, dict[str, Fraction]] | None]:
    """Each block's USD components, total, per trajectory and per correct answer (over its `trajectories` and
    `correct`); returns the sorted names of what had no price and, with `per_question`, the priced arms'
    `question_costs`, from one pass over the usage; the arms' sums are over their questions' components (exact, so
    the totals agree to the last bit). Needs the relations on the search path."""
    priced = _priced(con, prices, judge_run_id)
    for arm, block in blocks.items():
        _price_arm(priced, arm, block)
    usd = {a: q for a, q in _per_question(priced).items() if q is not None} if per_question else None
    return sorted(priced.unpriced), usd


def _price_arm(priced: _Priced, arm: str, block: ArmMetrics) -> None:
    questions = priced.numerators.get(arm, {}).values()
    comps = {k: _sum(q[k] for q in questions) for k in (*COMPONENTS, BATCHED)}
    usd = {k: None if v is None else float(Fraction(v, priced.denominator)) for k, v in comps.items()}
    num = _sum(comps[k] for k in COMPONENTS)
    total = None if num is None else Fraction(num, priced.denominator)
    block.search_usd, block.fetch_usd = usd["search_usd"], usd["fetch_usd"]
    block.agent_model_usd, block.judge_model_usd = usd["agent_model_usd"], usd["judge_model_usd"]
    block.judge_model_batch_usd = usd[BATCHED]
    block.usd_total = None if total is None else float(total)
    block.usd_per_trajectory = None if total is None or block.trajectories == 0 else float(total / block.trajectories)
    block.usd_per_correct = None if total is None or block.correct == 0 else float(total / block.correct)


def warning_line(unpriced: list[str]) -> str | None:
    """The one line the report prints when something had no price (its cost is null, not zero)."""
    if not unpriced:
        return None
    return f"prices: no price for {', '.join(unpriced)}; those costs are null (never counted as zero)"
