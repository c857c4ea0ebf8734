"""The typed read model: everything the product shows (the report and its blocks, the judge comparison, the
explorer's rows and pages) as msgspec Structs, and the support partition's vocabulary, defined here once."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

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
    backfill_supports_gold: str | msgspec.UnsetType = _UNSET
    """With backfilled pages: backfilled items with a valid verdict."""


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

    # -- backfill (docs/how-to/hosted.md): when the judge run backfilled some item's page (`judge --backfill-pages`);
    # never part of the partition or of any rate of what the caller saw
    backfill_items: int | msgspec.UnsetType = _UNSET
    """Items whose page was fetched and judged because the caller received no text of them."""
    backfill_judged: int | msgspec.UnsetType = _UNSET
    """Of those, with a valid verdict on the fetched page."""
    backfill_supports_gold: float | None | msgspec.UnsetType = _UNSET
    """Judged backfilled items whose fetched page supports gold / backfill_judged."""
    backfill_supports_gold_count: int | msgspec.UnsetType = _UNSET
    """Its numerator."""
    backfill_supports_gold_ci: Interval | None | msgspec.UnsetType = _UNSET
    """Its interval (proportion, clustered by question)."""

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


@functools.cache
def _fields(struct: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    """A Struct's fields by name, resolved once: resolving the annotations is most of a command's start-up otherwise
    (every `field_key` of the model's tables, about 0.4 s of CPU)."""
    return {f.name: f for f in msgspec.structs.fields(struct)}


class _KeyOf:
    """Stands in for a Struct and records the JSON keys a getter reads (`field_key`)."""

    def __init__(self, struct: type[msgspec.Struct], keys: tuple[str, ...] = ()) -> None:
        self._struct, self._keys = struct, keys

    def __getattr__(self, name: str) -> _KeyOf:
        info = _fields(self._struct)[name]
        nested = info.type if isinstance(info.type, type) and issubclass(info.type, msgspec.Struct) else msgspec.Struct
        return _KeyOf(nested, (*self._keys, info.encode_name))


def field_key(struct: type[msgspec.Struct], get: Callable[[Any], object]) -> str:
    """The JSON key (dotted into nested Structs) of the field a getter such as `lambda m: m.partition.smart`
    reads: what the explorer looks up in the report's JSON, spelled once, as the attribute."""
    got = get(_KeyOf(struct))
    assert isinstance(got, _KeyOf), "a getter reads one field"
    return ".".join(got._keys)


def arm_key(get: Callable[[ArmMetrics], object]) -> str:
    """The report key of the arm block's field `get` reads, typed (mypy checks the field exists)."""
    return field_key(ArmMetrics, get)


def pair_key(get: Callable[[Pair], object]) -> str:
    """The report key of the pair block's field `get` reads, typed."""
    return field_key(Pair, get)


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


class ComparisonSummary(msgspec.Struct, kw_only=True):
    """`judge compare A B` without its item list (docs/concepts/statistics.md): agreement, kappa and partitions."""

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


class JudgeComparison(ComparisonSummary, kw_only=True):
    """`judge compare A B` (docs/concepts/statistics.md): two judge runs over the items both judged validly."""

    disagreements: list[Disagreement]
    """Every disagreeing item."""

    def summary(self) -> ComparisonSummary:
        """The comparison without its item list (the explorer pages the items itself)."""
        return ComparisonSummary(**{f: getattr(self, f) for f in ComparisonSummary.__struct_fields__})


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
# Every shape `searchtrace view`'s JSON API answers (docs/how-to/explorer.md), in the order of its JSON keys: the
# explorer's page reads these keys. A field that is UNSET is not in the JSON at all (a row that lacks it).

class CountTexts(msgspec.Struct, frozen=True, kw_only=True):
    """What the rows behind each count of the report are called: one field per `label=` of GET /api/items (but
    `partition`, named by its cell), its text the items page's title."""

    trajectories: str = "trajectories"
    """Every trajectory of the arm."""
    audited: str = "audited trajectories"
    """Trajectories whose final answer has an audit."""
    correct: str = "correct trajectories"
    """Audited trajectories whose answer matches gold."""
    incorrect: str = "incorrect trajectories"
    """Audited trajectories whose answer does not."""
    exact_matches: str = "trajectories with an exact match"
    """Trajectories whose final answer matches an accepted answer exactly."""
    surface_answerable_queries: str = "surface-answerable trajectories"
    """Trajectories with an item whose surface supports gold."""
    items: str = "judge items"
    """Every judge item, with a verdict or not."""
    valid_items: str = "items with a valid verdict"
    """Items the partition counts."""
    invalid_items: str = "items with an invalid verdict"
    """Items left out of every rate."""
    snippet_only_items: str = "snippet-only items"
    """Valid items judged on the snippet alone."""
    page_visible_items: str = "page-visible items"
    """Valid items judged with their fetched page."""
    discovered_support: str = "items with discovered support"
    """Items whose page supports gold where the snippet did not."""
    surface_supported_items: str = "items whose surface supports gold"
    """S: the SMART and MISSED items (the support rate's numerator)."""
    surface_contradicted_items: str = "items whose surface contradicts gold"
    """Shown items whose snippet contradicts gold."""
    fetched_items: str = "fetched items"
    """Items the agent fetched."""
    results_returned: str = "search results returned"
    """Every search result appearance."""
    results_shown: str = "search results shown to the model"
    """The appearances the model saw."""
    fetch_cache_hits: str = "fetches answered from the cache"
    """Fetch calls the cache answered."""
    cells: str = "(qid, epoch) cells both arms ran"
    """An arm pair's cells (complementarity)."""
    paired_questions: str = "questions of the paired tests (audited on both sides)"
    """What an arm pair's paired accuracy test rests on."""
    common_questions: str = "questions both arms ran"
    """What the corrected support-rate difference rests on."""
    surface_support_rate_corrected_labels: str = "human labels of snippet support (clear)"
    """The human labels the corrected support rate rests on."""
    surface_contradiction_rate_corrected_labels: str = "human labels of snippet contradiction (clear)"
    """The human labels the corrected contradiction rate rests on."""
    corrected_labels: str = "human snippet labels (clear)"
    """Every clear human snippet label."""
    corrected_unclear: str = "human snippet labels marked unclear"
    """The human labels left out as unclear."""


class ClassTexts(msgspec.Struct, frozen=True, kw_only=True):
    """What each complementarity class of a (qid, epoch) cell both arms ran is called."""

    a_only: str = "answerable by A only"
    """Surface-answerable in arm A, not in B."""
    b_only: str = "answerable by B only"
    """Surface-answerable in arm B, not in A."""
    both: str = "answerable by both"
    """Surface-answerable in both arms."""
    neither: str = "answerable by neither"
    """Surface-answerable in neither arm."""


class AuditLabelTexts(msgspec.Struct, frozen=True, kw_only=True):
    """What each human audit label of a snippet (the judge-error correction's) is called."""

    supports_gold: str = "supports gold"
    """The snippet supports the gold answer."""
    contradicts_gold: str = "contradicts gold"
    """The snippet contradicts the gold answer."""


class VerdictTexts(msgspec.Struct, frozen=True, kw_only=True):
    """The chip an item's verdict shows for each of its labels that holds (the keys of VERDICT_KEYS)."""

    snippet_supports_gold: str = "snippet supports gold"
    """The snippet supports the gold answer."""
    snippet_contradicts_gold: str = "snippet contradicts gold"
    """The snippet contradicts it."""
    snippet_relevant: str = "relevant"
    """The snippet is relevant to the question."""
    page_supports_gold: str = "page supports gold"
    """The fetched page supports the gold answer."""
    page_contradicts_gold: str = "page contradicts gold"
    """The fetched page contradicts it."""
    supports_final_answer: str = "supports final answer"
    """The item supports the agent's final answer."""
    discovered: str = "discovered support"
    """Support found only after fetching (the page supports gold, the snippet did not)."""


class ExtraRowTexts(msgspec.Struct, frozen=True, kw_only=True):
    """The explorer's report rows after the table's own, in order: report keys the terminal table leaves out."""

    surface_supported_items: str = "items whose surface supports gold (S)"
    """The support rate's numerator."""
    surface_contradicted_items: str = "items whose surface contradicts gold"
    """The contradiction ratio's numerator."""
    results_returned: str = "search results returned"
    """Search result appearances."""
    results_shown: str = "search results shown to the model"
    """The appearances the model saw."""
    shown_share: str = "shown share"
    """Shown over returned."""
    fetch_cache_hits: str = "fetch cache hits"
    """Fetch calls the cache answered."""


class Vocabulary(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/vocabulary: the words and colours the explorer's page draws with, defined here once."""

    partition: tuple[Cell, ...] = PARTITION
    """The support partition's cells in the report's order (names, meanings, colours)."""
    counts: CountTexts = msgspec.field(default_factory=CountTexts)
    """The title of the rows behind each count (the items page)."""
    classes: ClassTexts = msgspec.field(default_factory=ClassTexts)
    """The complementarity classes' names."""
    audit_labels: AuditLabelTexts = msgspec.field(default_factory=AuditLabelTexts)
    """The human audit labels' names."""
    verdict: VerdictTexts = msgspec.field(default_factory=VerdictTexts)
    """An item verdict's label chips."""
    extra_rows: ExtraRowTexts = msgspec.field(default_factory=ExtraRowTexts)
    """The report view's rows after the table's."""


class ApiError(msgspec.Struct, kw_only=True):
    """Any failed API request: one line saying why."""

    error: str
    """The first line of the reason, bounded."""
    columns: list[str] | msgspec.UnsetType = msgspec.UNSET
    """POST /api/sql only: no columns (the statement was refused or failed)."""
    rows: list[list[Any]] | msgspec.UnsetType = msgspec.UNSET
    """POST /api/sql only: no rows."""


class RunRow(msgspec.Struct, kw_only=True):
    """GET /api/runs: one run of the store."""

    run_id: str
    """The run's id (`import` for imported traces)."""
    events: int
    """Events the run wrote."""
    trajectories: int
    """Its `trajectory.started` events."""
    verdicts: int
    """Its `judge.verdict` events."""
    first_position: int
    """Log position of its first event."""
    last_position: int
    """Log position of its last event."""
    started_at: str | None
    """When its first event was recorded (UTC, as DuckDB prints a timestamp)."""
    last_at: str | None
    """When its last event was recorded."""


class JudgeRunRow(msgspec.Struct, kw_only=True):
    """GET /api/judge-runs: one judge run, newest first."""

    judge_run_id: str
    """The judge run's id."""
    model: str | None
    """The judge model of its latest `judge.run` event."""
    prompt_version: str | None
    """The judge prompt's version."""
    verdicts: int
    """Verdicts recorded in it."""
    valid: int
    """Its valid verdicts."""
    invalid: int
    """Its invalid verdicts."""
    default: bool
    """The report's default judge run (docs/how-to/judge-runs.md)."""
    chosen_by: str | None
    """Why it is the default ("first" or "judge --default"); None on every other row."""


class TrajectoryRow(msgspec.Struct, kw_only=True):
    """One row of the trajectory list (GET /api/trajectories), and a row of /api/items when a count counts
    trajectories: the per-trajectory integers the report averages."""

    trajectory_id: str
    """The trajectory's id."""
    stream_id: str
    """Its event stream."""
    provider: str
    """The search provider (the default arm)."""
    qid: str
    """The question's id."""
    question: str
    """The question's text."""
    run_id: str | None
    """The run that recorded it."""
    epoch: int
    """Its epoch (a repeat of the same question)."""
    position: int
    """Log position of its `trajectory.started` event (the list's order, newest first)."""
    finish_reason: str | None
    """Why it ended, when it ended without an answer."""
    final_answer: str | None
    """Its final answer (None while running or when it gave none)."""
    gold_answer: str
    """The gold answer."""
    correct: bool | None
    """The deciding audit's semantic match; None when unaudited."""
    searches: int
    """Search calls."""
    fetches: int
    """Fetch calls."""
    input_tokens: int
    """Model input tokens."""
    output_tokens: int
    """Model output tokens."""
    items: int
    """Judge items (distinct URLs it saw)."""
    valid_items: int
    """Items with a valid verdict."""
    supported: int
    """Items whose surface supports gold (SMART or MISSED)."""
    answerable: bool
    """Surface-answerable: some item's surface supports gold."""
    exact_match: int
    """1 when the final answer matches an accepted answer exactly (normalised), else 0."""
    partition: dict[str, int]
    """Its valid items per partition cell, keyed by the cells of PARTITION in their order."""


class ListCounts(msgspec.Struct, kw_only=True):
    """Counts over every trajectory a list filter matches (the filter bar's chips)."""

    providers: dict[str, int]
    """Matching trajectories per provider."""
    runs: dict[str, int]
    """Matching trajectories per run id."""
    correct: dict[str, int]
    """Matching trajectories per audit state ("true", "false", "unaudited")."""
    partition: dict[str, int]
    """Their items per partition cell, every cell of PARTITION."""


class Facets(msgspec.Struct, kw_only=True):
    """The filter bar's choices over every trajectory of the store."""

    providers: list[str]
    """Every provider, sorted."""
    runs: list[str]
    """Every run id that recorded a trajectory, sorted."""
    epochs: list[int]
    """Every epoch, sorted."""


class TrajectoryListPage(msgspec.Struct, kw_only=True):
    """GET /api/trajectories: one page of the matching trajectories, newest first."""

    total: int
    """Trajectories the filter matches."""
    offset: int
    """Rows skipped before this page."""
    limit: int
    """Rows per page."""
    trajectories: list[TrajectoryRow]
    """This page's rows."""
    counts: ListCounts
    """Counts over every match."""
    facets: Facets
    """The filter choices."""
    judge_run_id: str | None
    """The judge run the verdicts come from."""


class Step(msgspec.Struct, kw_only=True):
    """One event of a trajectory's timeline, as recorded."""

    position: int
    """Its log position."""
    stream_seq: int
    """Its place in the trajectory's stream."""
    type: str
    """The event type (`model.responded`, `search.completed`, ...)."""
    run_id: str
    """The run that wrote it."""
    recorded_at: str
    """When it was recorded."""
    payload: Any
    """The payload as recorded (its JSON; docs/reference/events.md)."""


class ItemEvidence(msgspec.Struct, kw_only=True):
    """One judge item of a trajectory with the verdict it counts with in the judge run and its partition cell
    (analytics.item_evidence; the items of GET /api/trajectories/{id} and the cells of the question page)."""

    stream_id: str
    """The trajectory's stream."""
    trajectory_id: str
    """The trajectory."""
    url_normalized: str
    """The item's key: its normalised URL."""
    first_position: int
    """Log position of its first search result (its surface)."""
    rank: int
    """Rank of that first result."""
    title: str | None
    """Its result's title."""
    url: str
    """Its result's URL as returned."""
    domain: str | None
    """Its result's domain."""
    n_appearances: int
    """Search results that returned it."""
    n_rank1: int
    """Of those, results at rank 1."""
    snippet_shown: bool
    """A later model request contained its snippet (docs/concepts/shown.md)."""
    n_fetches: int
    """Fetches of it."""
    fetched: bool
    """Fetched at least once."""
    page_visible: bool
    """A fetched page of it reached the model."""
    page_digest: str | None
    """The fetched page's blob digest."""
    valid: bool | None
    """The verdict is valid; None without a verdict."""
    surface: str | None
    """What the judge saw: snippet or page."""
    invalid_reason: str | None
    """Why an invalid verdict is invalid."""
    snippet_supports_gold: bool | None
    """Label: the snippet supports the gold answer."""
    snippet_contradicts_gold: bool | None
    """Label: the snippet contradicts the gold answer."""
    snippet_relevant: bool | None
    """Label: the snippet is relevant."""
    has_page: bool | None
    """The verdict judged a fetched page too."""
    page_supports_gold: bool | None
    """Label: the page supports gold."""
    page_contradicts_gold: bool | None
    """Label: the page contradicts gold."""
    page_relevant: bool | None
    """Label: the page is relevant."""
    supports_final_answer: bool | None
    """Label: it supports the final answer."""
    verdict_position: int | None
    """Log position of the verdict."""
    part: str | None
    """Its partition cell (a name of PARTITION); None unless the verdict is valid."""
    discovered: bool
    """Discovered support: gold found only on the fetched page."""
    rationale: str | None = None
    """The judge's rationale."""
    cited: bool | msgspec.UnsetType = msgspec.UNSET
    """The final answer cites it (docs/how-to/hosted.md); only when the answer cites any item."""


class FetchedPage(msgspec.Struct, kw_only=True):
    """A fetched page as text for the view (the blob keeps every byte)."""

    text: str | None
    """Its text, cut for the view; None when the blob is not stored."""
    n_bytes: int
    """Its size in bytes."""
    truncated: bool
    """The text is cut."""


class AnswerBlock(msgspec.Struct, kw_only=True):
    """A trajectory's answer scored as the report scores it, and its audit."""

    final: str | None
    """The final answer."""
    gold: str
    """The gold answer."""
    aliases: list[str]
    """Every accepted answer."""
    exact_match: int
    """1 on an exact match with an accepted answer, else 0."""
    token_f1: float
    """Token F1 against the best accepted answer."""
    semantic_match: bool | None
    """The deciding audit's verdict; None when unaudited."""
    audit_source: str | None
    """Who decided it (judge or human)."""


class TrajectoryPage(msgspec.Struct, kw_only=True):
    """GET /api/trajectories/{id}: the trajectory's events in order, its items, pages, requests and answer."""

    trajectory_id: str
    """The trajectory."""
    provider: str | None
    """Its provider (None when its start event is missing)."""
    qid: str | None
    """Its question's id."""
    question: str
    """The question's text."""
    run_id: str
    """The run that recorded it."""
    judge_run_id: str | None
    """The judge run of the verdicts."""
    current: bool
    """It is a current trajectory (not superseded by a later attempt)."""
    steps: list[Step]
    """Its events in order."""
    items: list[ItemEvidence]
    """Its judge items with verdicts."""
    partition: dict[str, int]
    """Items per partition cell, every cell of PARTITION."""
    pages: dict[str, FetchedPage]
    """Fetched pages by content digest."""
    messages: dict[str, Any]
    """Request messages by blob digest, decoded (provider JSON, open by nature; None when not stored)."""
    tools: dict[str, Any]
    """Tool lists by blob digest, decoded likewise."""
    answer: AnswerBlock
    """Its answer and audit."""


class SearchResultRow(msgspec.Struct, kw_only=True):
    """One search result of a question page's search, with its item's state."""

    stream_id: str
    """The trajectory's stream."""
    call_id: str
    """The search call."""
    rank: int
    """Its rank."""
    title: str | None
    """Title."""
    url: str
    """URL as returned."""
    url_normalized: str
    """Normalised URL (the item key)."""
    domain: str | None
    """Domain."""
    snippet: str | None
    """Snippet."""
    fetched: bool | None = None
    """Its item was fetched; None when it is no item."""
    part: str | None = None
    """Its item's partition cell."""


class SearchRow(msgspec.Struct, kw_only=True):
    """One search call of a trajectory on the question page."""

    stream_id: str
    """The trajectory's stream."""
    call_id: str
    """The call's id."""
    iteration: int | None
    """The model turn that asked for it."""
    query: str | None
    """The query."""
    status: str | None
    """How it completed (None while pending)."""
    n_results: int | None
    """Results returned."""
    results: list[SearchResultRow] = []
    """Its results in order."""


class QuestionTrajectory(msgspec.Struct, kw_only=True):
    """One trajectory of the question page."""

    stream_id: str
    """Its stream."""
    trajectory_id: str
    """The trajectory."""
    provider: str
    """Its provider."""
    epoch: int
    """Its epoch."""
    question: str
    """The question."""
    gold_answer: str
    """The gold answer."""
    final_answer: str | None
    """Its final answer."""
    semantic_match: bool | None
    """The deciding audit's verdict."""
    searches: list[SearchRow] = []
    """Its searches with results."""
    n_items: int = 0
    """Its judge items."""


class AlignedCell(msgspec.Struct, kw_only=True):
    """One trajectory's view of one URL on the question page: its best rank and its item's verdict; `item` false
    (and no verdict keys) when the URL is none of its judge items."""

    rank: int
    """Its best rank for the URL."""
    appearances: int
    """Results of it that returned the URL."""
    valid: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    invalid_reason: str | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    snippet_supports_gold: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    snippet_contradicts_gold: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    snippet_relevant: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    has_page: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    page_supports_gold: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    page_contradicts_gold: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    supports_final_answer: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    part: str | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    fetched: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    discovered: bool | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    rationale: str | None | msgspec.UnsetType = msgspec.UNSET
    """See ItemEvidence."""
    item: bool | msgspec.UnsetType = msgspec.UNSET
    """False: the URL is none of this trajectory's items."""


VERDICT_KEYS = tuple(f for f in AlignedCell.__struct_fields__ if f not in ("rank", "appearances", "item"))
"""The keys of an item's verdict an AlignedCell carries."""


class AlignedRow(msgspec.Struct, kw_only=True):
    """One URL any trajectory of the question returned, across the trajectories."""

    url_normalized: str
    """The URL's item key."""
    url: str
    """The URL as first returned."""
    title: str | None
    """Its title."""
    domain: str | None
    """Its domain."""
    cells: dict[str, AlignedCell]
    """Per trajectory id that returned it."""


class QuestionPage(msgspec.Struct, kw_only=True):
    """GET /api/questions/{qid}: every provider's current trajectories of one question, aligned by URL."""

    qid: str
    """The question's id."""
    question: str
    """The question."""
    gold_answer: str
    """The gold answer."""
    judge_run_id: str | None
    """The judge run of the verdicts."""
    trajectories: list[QuestionTrajectory]
    """Its trajectories (by epoch, provider, position)."""
    shared_urls: dict[str, list[str]]
    """Item URLs several providers share, to the providers."""
    aligned: list[AlignedRow]
    """Every URL returned, the most shared first."""


class ChooseRun(msgspec.Struct, kw_only=True):
    """GET /api/report on a store of several runs with none chosen: the runs to choose from (never merged)."""

    choose_run: bool = True
    """Always true: choose runs."""
    runs: list[str]
    """The store's runs."""


class ReportNotes(msgspec.Struct, kw_only=True):
    """GET /api/report-notes: the lines `report` prints to stderr for the same report."""

    notes: list[str]
    """Audits not applied, partial judge coverage, ..."""


class Link(msgspec.Struct, kw_only=True):
    """The /api/items query of the rows behind one count of the report."""

    label: str
    """The `label=` of the items query."""
    partition: str | msgspec.UnsetType = msgspec.UNSET
    """`partition=`: the cell a partition count counts."""
    rank: str | msgspec.UnsetType = msgspec.UNSET
    """`rank=`: the search rank a rank count counts."""
    cell: str | msgspec.UnsetType = msgspec.UNSET
    """`cell=`: the complementarity class of an arm pair's count."""


Shown = Literal["count", "difference", "interval", "p-value", "test"]  # how a paired table's cell is drawn


class PairColumn(msgspec.Struct, kw_only=True, frozen=True):
    """One column of the explorer's paired tables: which key of a pair block, under which header, shown how."""

    key: str
    """The pair block's key."""
    header: str
    """The column's header."""
    shown: Shown
    """How its value is shown: a count links to its rows, a test is named by its label."""
    holm: bool = False
    """Shown only when the report adjusted its p-values (Holm's step-down)."""


class ReportLinks(msgspec.Struct, kw_only=True):
    """GET /api/report-links: what the report page links each key to, and the labels the CLI's table gives it."""

    links: dict[str, Link]
    """Report key (an arm's count or rate) to its rows."""
    counts: list[str]
    """The keys that are counts (the rest are rates: their link is to the numerator)."""
    pair_links: dict[str, Link]
    """An arm pair's count to its rows (with `pair=`)."""
    rows: tuple[tuple[str, str], ...]
    """The table's rows: key and label."""
    corrected: tuple[tuple[str, str], ...]
    """The corrected rates' rows."""
    corrected_marker: str
    """The arm key whose presence means the arm's rates were corrected (the corrected table lists those arms)."""
    tests: dict[str, str]
    """A paired test's name to its label."""
    paired: tuple[PairColumn, ...]
    """The paired differences' table, column by column (its first difference decides which pairs it lists)."""
    corrected_paired: tuple[PairColumn, ...]
    """The corrected support-rate difference's table, column by column."""


class Appearance(msgspec.Struct, kw_only=True):
    """Which appearance at a rank an items row stands for (a rank count counts appearances)."""

    rank: int
    """The rank asked for."""
    index: int
    """This appearance's number, from 1."""
    of: int
    """The item's appearances at that rank."""
    query: str | None
    """The query of that search."""


class ItemRow(msgspec.Struct, kw_only=True):
    """One judge item of GET /api/items (kinds `items`, `appearances`, `labels`): its surface result, the
    trajectory, the verdict's labels and cell. The surface keys are absent when its result is not found."""

    position: int | msgspec.UnsetType = msgspec.UNSET
    """Log position of its surface result."""
    rank: int | msgspec.UnsetType = msgspec.UNSET
    """Its surface result's rank."""
    title: str | None | msgspec.UnsetType = msgspec.UNSET
    """Title."""
    url: str | msgspec.UnsetType = msgspec.UNSET
    """URL as returned."""
    domain: str | None | msgspec.UnsetType = msgspec.UNSET
    """Domain."""
    snippet: str | None | msgspec.UnsetType = msgspec.UNSET
    """Snippet."""
    url_normalized: str
    """The item key."""
    trajectory_id: str
    """Its trajectory."""
    provider: str
    """The trajectory's provider."""
    run_id: str | None
    """The trajectory's run."""
    qid: str
    """The question's id."""
    epoch: int
    """The trajectory's epoch."""
    question: str | msgspec.UnsetType = msgspec.UNSET
    """The question (absent on a label row whose item the index lacks)."""
    valid: bool | None | msgspec.UnsetType = msgspec.UNSET
    """The verdict is valid; None without one."""
    part: str | None | msgspec.UnsetType = msgspec.UNSET
    """Its partition cell."""
    n_rank1: int | msgspec.UnsetType = msgspec.UNSET
    """Its results at rank 1."""
    rationale: str | None | msgspec.UnsetType = msgspec.UNSET
    """The judge's rationale."""
    has_page: bool | msgspec.UnsetType = msgspec.UNSET
    """The verdict judged a page too."""
    discovered: bool | msgspec.UnsetType = msgspec.UNSET
    """Discovered support."""
    snippet_contradicts_gold: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    snippet_shown: bool | msgspec.UnsetType = msgspec.UNSET
    """Its snippet reached the model."""
    fetched: bool | msgspec.UnsetType = msgspec.UNSET
    """Fetched."""
    snippet_supports_gold: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    snippet_relevant: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    page_supports_gold: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    page_contradicts_gold: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    supports_final_answer: bool | msgspec.UnsetType = msgspec.UNSET
    """Label."""
    page_visible: bool | msgspec.UnsetType = msgspec.UNSET
    """Its page reached the model."""
    appearance: Appearance | msgspec.UnsetType = msgspec.UNSET
    """With `rank=`: which appearance at the rank this row is."""
    audit_label: str | msgspec.UnsetType = msgspec.UNSET
    """Kind `labels`: the human audit label counted."""
    judge_value: bool | msgspec.UnsetType = msgspec.UNSET
    """Kind `labels`: the judge's value of that label."""
    human_value: bool | str | None | msgspec.UnsetType = msgspec.UNSET
    """Kind `labels`: the human's value (true, false or "unclear")."""


class FetchRow(msgspec.Struct, kw_only=True):
    """One fetch call of GET /api/items (kind `fetches`)."""

    stream_id: str
    """The trajectory's stream."""
    position: int
    """Log position of the completion."""
    call_id: str
    """The fetch call."""
    doc_id: str | None
    """The document fetched."""
    status: str
    """How it completed."""
    cache_hit: bool | None
    """Answered from the cache."""
    n_tokens: int | None
    """Page tokens."""
    url: str | None
    """The URL fetched."""
    trajectory_id: str
    """Its trajectory."""
    provider: str
    """The trajectory's provider."""
    run_id: str | None
    """The trajectory's run."""
    qid: str
    """The question's id."""
    epoch: int
    """The trajectory's epoch."""


class ResultRow(msgspec.Struct, kw_only=True):
    """One search result of GET /api/items (kind `results`), shown to the model or not."""

    stream_id: str
    """The trajectory's stream."""
    position: int
    """Its log position."""
    rank: int
    """Its rank."""
    title: str | None
    """Title."""
    url: str
    """URL as returned."""
    url_normalized: str
    """Item key."""
    domain: str | None
    """Domain."""
    shown: bool
    """A later model request contained it (docs/concepts/shown.md)."""
    shown_by: str | None
    """How that was decided."""
    query: str | None
    """The search's query."""
    trajectory_id: str
    """Its trajectory."""
    provider: str
    """The trajectory's provider."""
    run_id: str | None
    """The trajectory's run."""
    qid: str
    """The question's id."""
    epoch: int
    """The trajectory's epoch."""


class PairTrajectory(msgspec.Struct, kw_only=True):
    """One trajectory on one side of an arm pair's row."""

    trajectory_id: str
    """The trajectory."""
    provider: str
    """Its provider."""
    run_id: str | None
    """Its run."""
    epoch: int
    """Its epoch."""
    correct: bool | None
    """Its audit."""
    supported: int
    """Its surface-supported items."""
    answerable: bool
    """Surface-answerable."""


class CellSide(msgspec.Struct, kw_only=True):
    """One arm of a (qid, epoch) cell."""

    arm: str
    """The arm."""
    answerable: bool
    """The cell is surface-answerable in this arm."""
    trajectories: list[PairTrajectory]
    """Its trajectories there."""


class CellRow(msgspec.Struct, kw_only=True):
    """A (qid, epoch) cell both arms ran (label `cells`), with its complementarity class."""

    qid: str
    """The question's id."""
    epoch: int
    """The epoch."""
    question: str
    """The question."""
    kind: str = msgspec.field(name="class")
    """Its class (a_only, b_only, both, neither)."""
    a: CellSide
    """Arm A."""
    b: CellSide
    """Arm B."""


class QuestionSide(msgspec.Struct, kw_only=True):
    """One arm of a paired question."""

    arm: str
    """The arm."""
    audited: int
    """Its audited trajectories of the question."""
    correct: int
    """Of those, correct."""
    trajectories: list[PairTrajectory]
    """Its trajectories of the question."""


class QuestionRow(msgspec.Struct, kw_only=True):
    """A question of an arm pair's paired test (labels `paired_questions`, `common_questions`)."""

    qid: str
    """The question's id."""
    question: str
    """The question."""
    a: QuestionSide
    """Arm A."""
    b: QuestionSide
    """Arm B."""


ItemsRow = TypeVar("ItemsRow", bound=msgspec.Struct)
"""What a row of GET /api/items is, by its `kind`: TrajectoryRow (trajectories); ItemRow (items, appearances,
labels); FetchRow (fetches); ResultRow (results)."""
PairRow = TypeVar("PairRow", bound=msgspec.Struct)
"""What a row of GET /api/items with `pair=` is, by its `kind`: cells or questions."""


class ItemsPage(msgspec.Struct, Generic[ItemsRow], kw_only=True):
    """GET /api/items: the rows one count of the report counts, `total` equal to that count, one page of them
    (`ItemsPage[ItemRow]`, ... by kind)."""

    label: str
    """The count asked for (a key of the report)."""
    arm: str | None
    """The arm, or every arm."""
    by: str
    """The arms' axis."""
    judge_run_id: str | None
    """The judge run."""
    offset: int
    """Rows skipped."""
    limit: int
    """Rows per page."""
    partition: str | None
    """The cell asked for."""
    rank: int | None
    """The rank asked for."""
    shown: bool | None
    """Shown to the model or not, or both."""
    kind: str
    """What a row is: trajectories, items, appearances, labels, results or fetches."""
    total: int
    """The count."""
    rows: list[ItemsRow]
    """This page's rows."""


class PairItemsPage(msgspec.Struct, Generic[PairRow], kw_only=True):
    """GET /api/items with `pair=`: the cells or questions one count of an arm pair counts (`PairItemsPage[CellRow]`
    or `PairItemsPage[QuestionRow]`)."""

    label: str
    """cells, paired_questions or common_questions."""
    pair: str
    """The report's pair key "<A>|<B>"."""
    a: str
    """Arm A."""
    b: str
    """Arm B."""
    by: str
    """The arms' axis."""
    judge_run_id: str | None
    """The judge run."""
    cell: str | None
    """The complementarity class asked for."""
    offset: int
    """Rows skipped."""
    limit: int
    """Rows per page."""
    kind: str
    """cells or questions."""
    total: int
    """The count."""
    rows: list[PairRow]
    """This page's rows."""


class CompareRow(msgspec.Struct, kw_only=True):
    """One item of GET /api/judge-compare with both judge runs' labels."""

    trajectory_id: str
    """Its trajectory."""
    url_normalized: str
    """The item key."""
    url: str
    """The URL as first returned."""
    provider: str | None
    """The trajectory's provider (None: not a current trajectory)."""
    qid: str | None
    """The question's id."""
    status: str
    """disagree, agree, only in A/B, invalid in A/B or not current."""
    differs: list[str]
    """The labels the runs disagree on."""
    a: dict[str, bool | None] | None
    """Run A's labels by name ("snippet.supports_gold", ...); None without a valid verdict."""
    b: dict[str, bool | None] | None
    """Run B's labels likewise."""
    a_rationale: str | None
    """Run A's rationale."""
    b_rationale: str | None
    """Run B's rationale."""


class ComparePage(msgspec.Struct, kw_only=True):
    """GET /api/judge-compare: two judge runs item by item, disagreements first, one page."""

    a: str
    """Judge run A."""
    b: str
    """Judge run B."""
    items: int
    """Items with a verdict in either run."""
    valid_in_both: int
    """Items valid in both."""
    disagreeing: int
    """Items the runs disagree on."""
    offset: int
    """Rows skipped."""
    limit: int
    """Rows per page."""
    rows: list[CompareRow]
    """This page's rows."""
    comparison: ComparisonSummary
    """`judge compare`'s agreement, kappa and partitions, without its item list."""


class SqlResult(msgspec.Struct, kw_only=True):
    """POST /api/sql: the rows of a read-only query."""

    columns: list[str]
    """The query's column names."""
    rows: list[list[Any]]
    """Its rows (values as the query returns them: open by nature)."""
    truncated: bool
    """More rows exist than were returned."""
