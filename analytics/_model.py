"""The typed read model: everything the product shows (the report and its blocks, the judge comparison, the
explorer's rows and pages) as msgspec Structs, and the support partition's vocabulary, defined here once."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

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


# -- the judge comparison and audit agreement ------------------------------------------------------------------------


# -- the explorer's API rows and pages (searchtrace.web) -------------------------------------------------------------
# Every shape `searchtrace view`'s JSON API answers (docs/how-to/explorer.md), in the order of its JSON keys: the
# explorer's page reads these keys. A field that is UNSET is not in the JSON at all (a row that lacks it).

class Vocabulary(msgspec.Struct, frozen=True, kw_only=True):
    """GET /api/vocabulary: the words and colours the explorer's page draws with, defined here once."""

    partition: tuple[Cell, ...] = PARTITION
    """The support partition's cells in the report's order (names, meanings, colours)."""


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
    tests: dict[str, str]
    """A paired test's name to its label."""


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
    comparison: dict[str, Any]
    """`judge compare`'s agreement, kappa and partitions, without its item list."""


class SqlResult(msgspec.Struct, kw_only=True):
    """POST /api/sql: the rows of a read-only query."""

    columns: list[str]
    """The query's column names."""
    rows: list[list[Any]]
    """Its rows (values as the query returns them: open by nature)."""
    truncated: bool
    """More rows exist than were returned."""
