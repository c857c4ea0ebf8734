"""The typed read model: everything the product shows (the report and its blocks, the judge comparison, the
explorer's rows and pages) as msgspec Structs, and the support partition's vocabulary, defined here once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

# -- the support partition's vocabulary (docs/concepts/metrics.md) ----------------------------------------------------


class Cell(msgspec.Struct, frozen=True, kw_only=True):
    """One cell of the support partition, as every view names, explains and colours it."""

    name: str
    """The cell's name, as the report's `partition` keys and SQL spell it."""
    meaning: str
    """What the cell means, in a few words (legends and tooltips)."""
    colour: str
    """Its colour in the HTML report and the explorer (CSS hex)."""


PARTITION: tuple[Cell, ...] = (
    Cell(name="SMART", meaning="surface supports gold, fetched", colour="#2e7d32"),
    Cell(name="MISSED", meaning="surface supports gold, not fetched", colour="#f9a825"),
    Cell(name="BLIND", meaning="no surface support, fetched", colour="#c62828"),
    Cell(name="NO-OP", meaning="no surface support, not fetched", colour="#9e9e9e"),
    Cell(name="UNOBSERVED", meaning="no snippet reached the caller: snippet support unobservable", colour="#5c6bc0"),
)
"""The cells in the report's order; UNOBSERVED (docs/how-to/hosted.md) is never merged into NO-OP."""


# -- the report (analytics.report and its consumers) ------------------------------------------------------------------
# docs/reference/report.md. The JSON of `report --json` is these Structs as plain values with keys sorted; a field
# whose value is UNSET is not in the JSON at all (what the options did not ask for), a None is `null`.

SUPPORTED_CELLS: tuple[Cell, ...] = PARTITION[:2]
"""The cells whose surface supports gold (S): SMART and MISSED."""
OBSERVED_CELLS: tuple[Cell, ...] = PARTITION[:4]
"""The four cells of a snippet the caller received (every cell but UNOBSERVED), as tables of a store without hosted
layers show them."""

Interval = list[float | None]
"""A 95 % interval [low, high]; a null upper end is unbounded (docs/concepts/statistics.md)."""

Number = int | float | None
"""A custom metric's value."""

_UNSET = msgspec.UNSET


class Partition(msgspec.Struct, kw_only=True, rename=dict(zip(
        ("smart", "missed", "blind", "noop", "unobserved"), (c.name for c in PARTITION), strict=True))):
    """Valid judge items per cell of the support partition (the JSON keys are the cells' names, PARTITION)."""

    smart: int = 0
    """Surface supports gold, fetched."""
    missed: int = 0
    """Surface supports gold, not fetched."""
    blind: int = 0
    """No surface support, fetched."""
    noop: int = 0
    """No surface support, not fetched (`NO-OP`)."""
    unobserved: int = 0
    """No snippet reached the caller (docs/how-to/hosted.md): never merged into NO-OP."""

    @classmethod
    def from_counts(cls, counts: dict[str, int]) -> Partition:
        """The partition from {cell name: count}, as SQL names the cells (analytics._rules.partition_cell)."""
        return cls(**{f: counts.get(c.name, 0) for f, c in zip(cls.__struct_fields__, PARTITION, strict=True)})

    def cells(self) -> list[tuple[Cell, int]]:
        """Every cell with its count, in PARTITION order."""
        return list(zip(PARTITION, msgspec.structs.astuple(self), strict=True))

    def count(self, cell: Cell) -> int:
        """One cell's count."""
        return int(dict(zip((c.name for c in PARTITION), msgspec.structs.astuple(self), strict=True))[cell.name])


class OutcomeCounts(msgspec.Struct, kw_only=True):
    """Trajectories by their audited answer."""

    correct: int = 0
    """Audited correct."""
    incorrect: int = 0
    """Audited incorrect."""
    unaudited: int = 0
    """Not audited."""


class QueryOutcome(msgspec.Struct, kw_only=True):
    """Trajectories whose surface could answer them (a valid item whose surface supports gold), or not, by outcome."""

    answerable: OutcomeCounts = msgspec.field(default_factory=OutcomeCounts)
    """Surface-answerable trajectories."""
    not_answerable: OutcomeCounts = msgspec.field(default_factory=OutcomeCounts)
    """The others."""


class Denominators(msgspec.Struct, kw_only=True):
    """What each rate of the arm block divides by (docs/how-to/hosted.md: a hosted arm's items may have no snippet)."""

    accuracy: str = "audited"
    """accuracy: correct / audited trajectories."""
    exact_match: str = "trajectories"
    """exact_match: per trajectory."""
    token_f1: str = "trajectories"
    """token_f1: per trajectory."""
    partition: str = "valid_items"
    """partition: the valid items."""
    surface_support_rate: str = "snippet_observed_items"
    """surface_support_rate: valid items whose snippet reached the caller."""
    gold_rank1_share: str = "appearances of surface-supported items"
    """gold_rank1_share: appearances of surface-supported items."""
    contradiction_gold_ratio: str = "surface_supported_items"
    """contradiction_gold_ratio: surface-supported items."""
    citations_per_answer: str | msgspec.UnsetType = _UNSET
    """With citations: final answers."""
    citation_supports_answer: str | msgspec.UnsetType = _UNSET
    """With citations: cited items with a valid verdict."""
    citation_supports_gold: str | msgspec.UnsetType = _UNSET
    """With citations: cited items with a valid verdict."""
    uncited_support: str | msgspec.UnsetType = _UNSET
    """With citations: final answers."""


class ArmMetrics(msgspec.Struct, kw_only=True):
    """One provider's block of the report (or one arm's, docs/how-to/compare.md); docs/concepts/metrics.md defines each
    metric. Fields without a default are always there; UNSET ones appear with the option or data that makes them."""

    trajectories: int
    """Current trajectories (every epoch)."""
    audited: int
    """Trajectories with an audited answer."""
    correct: int
    """Audited correct."""
    accuracy: float | None
    """correct / audited; null without an audited answer."""
    exact_match: float
    """Mean exact match of the final answer against gold (the best alias)."""
    token_f1: float
    """Mean token F1 of the final answer against gold (the best alias)."""
    searches_per_trajectory: float
    """Search calls per trajectory."""
    fetches_per_trajectory: float
    """Fetch calls per trajectory."""
    input_tokens_per_trajectory: float
    """Agent model input tokens per trajectory."""
    output_tokens_per_trajectory: float
    """Agent model output tokens per trajectory."""
    reasoning_tokens_per_trajectory: float
    """Agent model reasoning tokens per trajectory."""
    page_tokens_per_trajectory: float
    """Tokens of fetched pages per trajectory."""
    latency_ms_per_trajectory: float
    """Model + search + fetch latency per trajectory (wall time, our own queueing and backoff included)."""
    distinct_domains_per_trajectory: float
    """Distinct result domains per trajectory."""
    tokens_per_correct: float | None
    """(input + output tokens) / correct answers; null without a correct answer."""
    items: int
    """Judge items (distinct normalised URLs per trajectory)."""
    valid_items: int
    """Items with a valid verdict."""
    invalid_items: int
    """Items whose verdict is invalid (excluded, counted)."""
    snippet_only_items: int
    """Valid items judged on the snippet only."""
    page_visible_items: int
    """Valid items judged with their page."""
    partition: Partition
    """The support partition of the valid items."""
    snippet_observed_items: int
    """Valid items whose snippet reached the caller (the surface support rate's denominator)."""
    unobserved_items: int
    """Valid items whose caller received no snippet (docs/how-to/hosted.md)."""
    denominators: Denominators
    """What each rate divides by."""
    discovered_support: int
    """Fetched items whose page, not their surface, supports gold."""
    surface_supported_items: int
    """Valid items whose surface supports gold (S): the support rate's numerator."""
    surface_contradicted_items: int
    """Valid items whose shown snippet contradicts gold."""
    surface_support_rate: float | None
    """surface_supported_items / snippet_observed_items."""
    surface_answerable_queries: int
    """Trajectories with a valid item whose surface supports gold."""
    gold_rank1_share: float | None
    """Appearances at rank 1 / appearances of surface-supported items."""
    contradiction_gold_ratio: float | None
    """surface_contradicted_items / surface_supported_items."""
    query_outcome: QueryOutcome
    """Trajectories by surface-answerable and audited outcome."""
    accuracy_epoch_sd: float | None | msgspec.UnsetType = _UNSET
    """With k >= 2 epochs: the sample sd over epochs of accuracy on the questions audited in every epoch."""
    accuracy_epoch_sd_questions: int | msgspec.UnsetType = _UNSET
    """With k >= 2 epochs: the questions that sd rests on."""

    # -- surface size (docs/how-to/providers.md), provider latency (docs/reference/prices.md), shown (docs/concepts/shown.md)
    surface_chars_mean: float | None = None
    """Mean characters of surface per search result."""
    surface_chars_median: float | None = None
    """Median characters of surface per search result."""
    search_provider_ms_median: float | None = None
    """Median provider time of successful search calls."""
    search_provider_ms_p90: float | None = None
    """90th percentile provider time of successful search calls."""
    fetch_provider_ms_median: float | None = None
    """Median provider time of successful fetches."""
    fetch_provider_ms_p90: float | None = None
    """90th percentile provider time of successful fetches."""
    search_failed_calls: int = 0
    """Search calls whose status is not ok (left out of the latency figures)."""
    fetch_failed_calls: int = 0
    """Fetches whose status is not ok."""
    fetch_cache_hits: int = 0
    """Fetches answered from the cache (priced as fetches)."""
    results_returned: int = 0
    """Search results returned."""
    results_shown: int = 0
    """Search results a later model request contained."""
    shown_share: float | None = None
    """results_shown / results_returned."""

    # -- docs/how-to/compare.md: a report by another axis than providers
    runs: list[str] | msgspec.UnsetType = _UNSET
    """The runs the arm holds."""
    search_providers: list[str] | msgspec.UnsetType = _UNSET
    """The search providers the arm holds."""

    # -- citations (docs/how-to/hosted.md): when some answer in the store cites
    final_answers: int | msgspec.UnsetType = _UNSET
    """Trajectories with an answer."""
    citations: int | msgspec.UnsetType = _UNSET
    """Citations of those answers."""
    cited_items: int | msgspec.UnsetType = _UNSET
    """Distinct cited items per answer, summed."""
    cited_items_judged: int | msgspec.UnsetType = _UNSET
    """Of those, items with a valid verdict."""
    citations_per_answer: float | msgspec.UnsetType = _UNSET
    """citations / final_answers."""
    citation_supports_answer: float | None | msgspec.UnsetType = _UNSET
    """Cited judged items whose evidence supports the final answer / cited judged items."""
    citation_supports_answer_count: int | msgspec.UnsetType = _UNSET
    """Its numerator."""
    citation_supports_answer_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval (proportion, clustered by question)."""
    citation_supports_gold: float | None | msgspec.UnsetType = _UNSET
    """Cited judged items whose evidence supports gold / cited judged items."""
    citation_supports_gold_count: int | msgspec.UnsetType = _UNSET
    """Its numerator."""
    citation_supports_gold_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    uncited_support: float | None | msgspec.UnsetType = _UNSET
    """Answers that left a gold-supporting valid item uncited / answers."""
    uncited_support_count: int | msgspec.UnsetType = _UNSET
    """Its numerator."""
    uncited_support_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""

    # -- costs (docs/reference/prices.md): with prices; a component without a price is null, never zero
    search_usd: float | None | msgspec.UnsetType = _UNSET
    """Successful search calls."""
    fetch_usd: float | None | msgspec.UnsetType = _UNSET
    """Tokens of fetched content."""
    agent_model_usd: float | None | msgspec.UnsetType = _UNSET
    """The agent model's usage."""
    judge_model_usd: float | None | msgspec.UnsetType = _UNSET
    """The judge run's usage on these items."""
    judge_model_batch_usd: float | None | msgspec.UnsetType = _UNSET
    """The part of judge_model_usd from model batches (within it, not beside it)."""
    usd_total: float | None | msgspec.UnsetType = _UNSET
    """The four components; null when any is."""
    usd_per_trajectory: float | None | msgspec.UnsetType = _UNSET
    """usd_total / trajectories."""
    usd_per_correct: float | None | msgspec.UnsetType = _UNSET
    """usd_total / correct answers."""

    # -- intervals (docs/concepts/statistics.md): with --bootstrap B > 0
    accuracy_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Wilson at the effective sample size."""
    accuracy_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size (Korn–Graubard)."""
    accuracy_wilson: Interval | None | msgspec.UnsetType = _UNSET
    """The same interval as accuracy_ci (an older name)."""
    exact_match_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Wilson at the effective sample size."""
    exact_match_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size."""
    token_f1_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Wilson at the effective sample size."""
    token_f1_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size."""
    surface_support_rate_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Hull of Wilson and the beta-binomial profile interval (clustered by question)."""
    surface_support_rate_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size."""
    gold_rank1_share_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Hull of Wilson and the beta-binomial profile interval."""
    gold_rank1_share_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size."""
    accuracy_epoch_sd_ci: Interval | None | msgspec.UnsetType = _UNSET
    """With k >= 2 epochs: chi-square interval of the epoch sd."""
    accuracy_epoch_sd_ci_reason: str | msgspec.UnsetType = _UNSET
    """Why that interval is null."""
    searches_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap (expanded percentile)."""
    searches_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator (left out)."""
    fetches_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap."""
    fetches_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    input_tokens_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap."""
    input_tokens_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    output_tokens_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap."""
    output_tokens_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    reasoning_tokens_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap."""
    reasoning_tokens_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    page_tokens_per_trajectory_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Question bootstrap."""
    page_tokens_per_trajectory_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    contradiction_gold_ratio_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Ratio of two 97.5 % proportion intervals, ends divided crosswise (Bonferroni)."""
    tokens_per_correct_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Mean per trajectory over the correct share, Bonferroni."""
    tokens_per_correct_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    usd_per_correct_ci: Interval | None | msgspec.UnsetType = _UNSET
    """With prices: as tokens_per_correct_ci."""
    usd_per_correct_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""

    # -- judge-error correction (docs/concepts/statistics.md): when the judge run has human snippet labels
    surface_support_rate_corrected: float | None | msgspec.UnsetType = _UNSET
    """The support rate corrected by the human labels (stratified difference); null while a stratum lacks labels."""
    surface_support_rate_corrected_labels: int | msgspec.UnsetType = _UNSET
    """The clear human supports_gold labels it rests on."""
    surface_support_rate_corrected_ci: Interval | None | msgspec.UnsetType = _UNSET
    """With a bootstrap: its interval."""
    surface_support_rate_corrected_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    judge_tpr: float | None | msgspec.UnsetType = _UNSET
    """The judge's sensitivity on supports_gold against the human labels, weighted to the population."""
    judge_tpr_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    judge_tpr_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    judge_tnr: float | None | msgspec.UnsetType = _UNSET
    """The judge's specificity on supports_gold."""
    judge_tnr_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    judge_tnr_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    surface_contradiction_rate: float | None | msgspec.UnsetType = _UNSET
    """The judge's contradicts_gold rate over the valid items."""
    surface_contradiction_rate_corrected: float | None | msgspec.UnsetType = _UNSET
    """That rate corrected by the human labels."""
    surface_contradiction_rate_corrected_labels: int | msgspec.UnsetType = _UNSET
    """The clear human contradicts_gold labels it rests on."""
    surface_contradiction_rate_corrected_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    surface_contradiction_rate_corrected_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    judge_tpr_contradicts: float | None | msgspec.UnsetType = _UNSET
    """The judge's sensitivity on contradicts_gold."""
    judge_tpr_contradicts_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    judge_tpr_contradicts_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    judge_tnr_contradicts: float | None | msgspec.UnsetType = _UNSET
    """The judge's specificity on contradicts_gold."""
    judge_tnr_contradicts_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval."""
    judge_tnr_contradicts_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    corrected_labels: int | msgspec.UnsetType = _UNSET
    """Clear human labels, both labels."""
    corrected_unclear: int | msgspec.UnsetType = _UNSET
    """Unclear human labels (excluded)."""
    corrected_unaudited_strata: int | msgspec.UnsetType = _UNSET
    """Strata with cases and no label."""
    corrected_missing_strata: list[str] | msgspec.UnsetType = _UNSET
    """Strata with too few clear labels (provider|snippet|label|judge value): the correction refuses to guess."""


class Discordant(msgspec.Struct, kw_only=True):
    """McNemar's discordant questions."""

    a_only_correct: int
    """Questions A answered correctly and B did not."""
    b_only_correct: int
    """Questions B answered correctly and A did not."""


class Pair(msgspec.Struct, kw_only=True):
    """A paired comparison of two arms "A|B" (names in code-point order) over the questions both ran
    (docs/concepts/paired-and-audits.md): the tests with a bootstrap, the corrected difference with human labels."""

    paired_questions: int | msgspec.UnsetType = _UNSET
    """Questions audited on both sides (the accuracy difference's)."""
    surface_support_rate_paired_questions: int | msgspec.UnsetType = _UNSET
    """Questions with valid items on both sides (the support rate difference's)."""
    accuracy_diff: float | None | msgspec.UnsetType = _UNSET
    """Mean over those questions of A's accuracy − B's."""
    accuracy_diff_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Tango's score interval at the effective sample size."""
    accuracy_diff_n_eff: float | None | msgspec.UnsetType = _UNSET
    """Its effective sample size."""
    accuracy_diff_p: float | None | msgspec.UnsetType = _UNSET
    """McNemar exact, or the exact sign-flip test."""
    accuracy_test: str | None | msgspec.UnsetType = _UNSET
    """Which test gave accuracy_diff_p."""
    discordant: Discordant | msgspec.UnsetType = _UNSET
    """With McNemar: the discordant questions."""
    surface_support_rate_diff: float | None | msgspec.UnsetType = _UNSET
    """R_A − R_B over the questions with valid items on both sides."""
    surface_support_rate_diff_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Newcombe's hybrid of each side's clustered interval."""
    surface_support_rate_diff_p: float | None | msgspec.UnsetType = _UNSET
    """The level at which that interval reaches 0."""
    surface_support_rate_test: str | None | msgspec.UnsetType = _UNSET
    """Which test gave surface_support_rate_diff_p."""
    p_holm: float | None | msgspec.UnsetType = _UNSET
    """With several pairs: accuracy_diff_p adjusted by Holm over the pairs."""
    surface_support_rate_diff_p_holm: float | None | msgspec.UnsetType = _UNSET
    """With several pairs: surface_support_rate_diff_p adjusted by Holm."""
    surface_support_rate_corrected_diff_questions: int | msgspec.UnsetType = _UNSET
    """With human labels: the questions of the corrected difference."""
    surface_support_rate_corrected_diff: float | None | msgspec.UnsetType = _UNSET
    """A's corrected support rate − B's."""
    surface_support_rate_corrected_diff_labels: list[int] | msgspec.UnsetType = _UNSET
    """[A's, B's] clear supports_gold labels."""
    surface_support_rate_corrected_diff_missing_strata: list[str] | msgspec.UnsetType = _UNSET
    """Strata of either side with too few clear labels."""
    surface_support_rate_corrected_diff_ci: Interval | None | msgspec.UnsetType = _UNSET
    """With a bootstrap: its interval."""
    surface_support_rate_corrected_diff_ci_undefined: int | msgspec.UnsetType = _UNSET
    """Replicates with a zero denominator."""
    surface_support_rate_corrected_diff_p: float | None | msgspec.UnsetType = _UNSET
    """Bootstrap two-sided p-value of a zero difference."""


class Complementarity(msgspec.Struct, kw_only=True):
    """Two arms "A|B" over the (question, epoch) cells both ran (docs/concepts/metrics.md)."""

    a_only: int
    """Cells only A's surface could answer."""
    b_only: int
    """Cells only B's surface could answer."""
    both: int
    """Cells both could answer."""
    neither: int
    """Cells neither could answer."""
    url_jaccard: float | None
    """Mean Jaccard of the two arms' result URLs per cell; null without a common cell."""


class Uncertainty(msgspec.Struct, kw_only=True):
    """How the intervals were drawn (docs/concepts/statistics.md): B replicates from `seed`, resampling questions."""

    bootstrap: int
    """Replicates B."""
    seed: str
    """The seed of the draws."""
    level: float
    """The intervals' level."""
    unit: str
    """What is resampled."""
    methods: dict[str, str] = {}
    """{interval or p-value field: method}: an open mapping, keyed by the fields the report holds."""


class JudgeBatches(msgspec.Struct, kw_only=True):
    """What the judge run's model batches did (docs/how-to/batch.md)."""

    batches: int = 0
    """Batches submitted."""
    live: int = 0
    """Of those, not finished yet."""
    items: int = 0
    """Items sent in at least one batch."""
    submitted: int = 0
    """Item sends (a resubmitted item counts twice)."""
    resubmitted: int = 0
    """Second sends."""
    succeeded: int = 0
    """Requests the ended batches answered."""
    errored: int = 0
    """Requests they reported as errors."""
    expired: int = 0
    """Requests that expired."""
    canceled: int = 0
    """Requests canceled."""
    online: int = 0
    """Items judged online after their batches did not answer them."""
    left: int = 0
    """Items without a verdict although every batch holding them has ended."""
    pending: int = 0
    """Items without a verdict in a batch still live."""


class _KeyOf:
    """Stands in for a Struct and records the JSON keys a getter reads (`field_key`)."""

    def __init__(self, struct: type[msgspec.Struct], keys: tuple[str, ...] = ()) -> None:
        self._struct, self._keys = struct, keys

    def __getattr__(self, name: str) -> _KeyOf:
        info = {f.name: f for f in msgspec.structs.fields(self._struct)}[name]
        nested = info.type if isinstance(info.type, type) and issubclass(info.type, msgspec.Struct) else msgspec.Struct
        return _KeyOf(nested, (*self._keys, info.encode_name))


def field_key(struct: type[msgspec.Struct], get: Callable[[Any], object]) -> str:
    """The JSON key (dotted into nested Structs) of the field a getter such as `lambda m: m.partition.smart`
    reads: what the explorer looks up in the report's JSON, spelled once, as the attribute."""
    got = get(_KeyOf(struct))
    assert isinstance(got, _KeyOf), "a getter reads one field"
    return ".".join(got._keys)


class Report(msgspec.Struct, kw_only=True):
    """The report (`searchtrace.report/1`): which judge run, every provider's (or arm's) block, their pairs."""

    schema: str = "searchtrace.report/1"
    """The report format and its version."""
    judge_run_id: str | None = None
    """The judge run the verdicts come from (null: none)."""
    providers: dict[str, ArmMetrics] = {}
    """Per provider (empty in a report by another axis)."""
    complementarity: dict[str, Complementarity] = {}
    """Per arm pair "A|B"."""
    prices_as_of: str | msgspec.UnsetType = _UNSET
    """With prices: their date."""
    prices_unpriced: list[str] | msgspec.UnsetType = _UNSET
    """With prices: what had no price."""
    paired: dict[str, Pair] | msgspec.UnsetType = _UNSET
    """With a bootstrap or human labels: per arm pair "A|B", keyed like complementarity."""
    uncertainty: Uncertainty | msgspec.UnsetType = _UNSET
    """With a bootstrap: how the intervals were drawn."""
    custom: dict[str, dict[str, Number]] | msgspec.UnsetType = _UNSET
    """With --metric: {metric file stem: {provider: value}}, an open mapping (user files name the metrics)."""
    by: str | msgspec.UnsetType = _UNSET
    """docs/how-to/compare.md: the arm axis, when not provider."""
    arms: dict[str, ArmMetrics] | msgspec.UnsetType = _UNSET
    """With `by`: every arm's block, keyed by arm value."""
    judge_run_chosen_by: str | None | msgspec.UnsetType = _UNSET
    """docs/how-to/judge-runs.md: "given", "judge --default", "first" or null (no judge run)."""
    judge_batches: JudgeBatches | None | msgspec.UnsetType = _UNSET
    """docs/how-to/batch.md: the judge run's model batches; null when it submitted none."""

    @property
    def axis(self) -> str:
        """What the blocks compare: `provider`, or the `by` of docs/how-to/compare.md."""
        return "provider" if isinstance(self.by, msgspec.UnsetType) else self.by

    @property
    def blocks(self) -> dict[str, ArmMetrics]:
        """Every compared block by name: `arms` in a report by another axis than providers, else `providers`."""
        return self.providers if isinstance(self.arms, msgspec.UnsetType) else self.arms

    @property
    def pairs(self) -> dict[str, Pair]:
        """`paired`, empty when the report has none."""
        return {} if isinstance(self.paired, msgspec.UnsetType) else self.paired

    def to_builtins(self) -> dict[str, Any]:
        """The report as plain JSON values (what `to_json` writes)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


# -- the judge comparison and audit agreement ------------------------------------------------------------------------


# Key order of these Structs is the order `judge compare --json` and `audit agreement --json` had before them.


class Table2x2(msgspec.Struct, kw_only=True):
    """A 2x2 table of two label sources, A's value first."""

    a_true_b_true: int
    """Both true."""
    a_true_b_false: int
    """A true, B false."""
    a_false_b_true: int
    """A false, B true."""
    a_false_b_false: int
    """Both false."""


class LabelAgreement(msgspec.Struct, kw_only=True):
    """Agreement of two judge runs on one label over the items valid in both."""

    n: int
    """Items where both runs have the label."""
    agreement: float | None
    """Share of those where they agree."""
    kappa: float | None
    """Cohen's kappa; null without a case or when chance agreement is 1."""
    table: Table2x2
    """The 2x2 table."""


class SideRates(msgspec.Struct, kw_only=True):
    """One provider under one judge run, over the items valid in both runs."""

    partition: Partition
    """The support partition."""
    surface_support_rate: float | None
    """Surface-supported items / those items."""


class ProviderComparison(msgspec.Struct, kw_only=True):
    """One provider's partition and support rate under A and under B over the same items."""

    items_valid_in_both: int
    """The provider's items with a valid verdict in both runs."""
    a: SideRates
    """Under judge run A."""
    b: SideRates
    """Under judge run B."""


class LabelValues(msgspec.Struct, kw_only=True):
    """A verdict's three labels of one surface."""

    supports_gold: bool
    """The evidence supports the gold answer."""
    contradicts_gold: bool
    """It asserts an incompatible answer."""
    relevant: bool
    """It is about the question."""


class VerdictLabels(msgspec.Struct, kw_only=True):
    """A verdict's labels: the snippet's, and the page's where it was judged with its page."""

    snippet: LabelValues | None
    """The snippet's labels."""
    page: LabelValues | None
    """The page's labels (null: snippet only)."""


class Disagreement(msgspec.Struct, kw_only=True):
    """One item the two judge runs label differently."""

    trajectory_id: str
    """Its trajectory."""
    url: str
    """Its normalised URL."""
    provider: str
    """Its trajectory's provider."""
    differs: list[str]
    """The labels that differ, as `surface.label`."""
    a: VerdictLabels
    """Run A's labels."""
    b: VerdictLabels
    """Run B's labels."""
    a_rationale: str | None
    """Run A's rationale."""
    b_rationale: str | None
    """Run B's rationale."""


class JudgeComparison(msgspec.Struct, kw_only=True):
    """`judge compare A B` (docs/concepts/statistics.md): two judge runs over the items both judged validly."""

    a: str
    """Judge run A."""
    b: str
    """Judge run B."""
    items_valid_in_both: int
    """Items with a valid verdict in both."""
    labels: dict[str, LabelAgreement]
    """Per label, keyed `surface.label` (the labels analytics._agreement.COMPARED names; page labels only where both
    verdicts have them)."""
    providers: dict[str, ProviderComparison]
    """Per provider."""
    disagreements: list[Disagreement]
    """Every disagreeing item."""

    # Transitional: the explorer's judge-compare page (searchtrace.web._data.judge_compare) still reads the JSON form
    # by key; these two go when it reads attributes.
    def __getitem__(self, key: str) -> Any:
        """A key of the JSON form (plain values)."""
        return msgspec.to_builtins(self)[key]

    def items(self) -> Any:
        """The JSON form's items (plain values)."""
        return msgspec.to_builtins(self).items()


class Tally(msgspec.Struct, kw_only=True):
    """Human audit labels against the judge: how many, how many agree."""

    labelled: int = 0
    """Labels."""
    unclear: int = 0
    """Of those, unclear (excluded)."""
    clear: int = 0
    """labelled − unclear."""
    agree: int = 0
    """Clear labels equal to the judge's value."""
    agreement: float | None = None
    """agree / clear; null without a clear label."""


class LeafTally(Tally, kw_only=True):
    """One stratum's (leaf's) tally, with its population when a recorded design has it."""

    population: int | msgspec.UnsetType = _UNSET
    """The stratum's size N_h in the judge run (from the latest design that has it)."""


class LabelTally(Tally, kw_only=True):
    """One label's tally across leaves, with Cohen's kappa (judge vs human)."""

    kappa: float | None = None
    """Kappa, weighted to the judge run by the design (unweighted without one)."""
    agreement_weighted: float | None = None
    """Agreement weighted by the design; null without one."""
    population: float | None = None
    """The population the weighted table sums to; null without a design."""
    weighted: bool = False
    """Whether a recorded design weighted kappa."""
    kappa_unweighted: float | None = None
    """Kappa over the clear labels as drawn."""


class AuditAgreement(msgspec.Struct, kw_only=True):
    """`audit agreement` (docs/how-to/audit.md): the judge against the human labels, overall, per leaf, per label."""

    judge_run_id: str
    """The judge run."""
    designs: int
    """Recorded audit designs."""
    overall: Tally
    """Every current label."""
    leaves: dict[str, LeafTally]
    """Per leaf (provider|surface|label|judge value)."""
    labels: dict[str, LabelTally]
    """Per label (`surface.label`)."""
    notes: list[str]
    """One-line remarks (no design, leaves outside every design)."""


# -- the explorer's API rows and pages (searchtrace.web) -------------------------------------------------------------
