"""Domain rules every reader applies, each defined once, in SQL for the relations and in Python for event streams.

- Latest attempt: a cell whose trajectory ended in `error` is recorded again by the next `record`
  (engine/_record.py); the new `trajectory.started` names the errored one in `supersedes`. Events are never
  updated or deleted, so every reader that counts trajectories keeps only attempts no later start supersedes
  (defined in Python by engine.Attempts, which record uses too; `not_superseded` below is its SQL twin).
- A trajectory is its stream's first `trajectory.started`; its question and gold answer fall back to the latest
  `dataset.question` of its qid; its final answer is the stream's last `answer.final`.
- The deciding audit: an imported or human audit wins over a proposal (an LLM grader, `searchtrace grade`);
  within the same rank the latest wins.
- A trajectory's arm (docs/how-to/compare.md, ARM_SQL): what `report --by` compares, its provider by default; else its run, the
  run's agent model, prompt sha256 or a key of the run config (the first run.started of its run). analytics._arms
  sets the axis and refuses arms that would merge runs.
- The default judge run: the latest judge run (by its last `judge.started`, else its first verdict) that has at
  least one valid verdict; a run that produced nothing is never chosen silently.
- Latest means by recorded time (docs/how-to/scale.md), then position: a store merged from segments (`searchtrace merge`)
  holds each segment's events in their own order but the segments one after another, so "latest" between facts
  of different writers is their `recorded_at`, which travels with the event; within one writer's transaction
  (one recorded_at) position still decides, and a merge keeps that order.

The SQL reads the typed relations by their bare names (`trajectories`, `answers`, ...): the caller's
search_path (analytics._sources) says whether they are the `proj` tables or views over the raw events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import msgspec

from searchtrace.analytics._model import PARTITION
from searchtrace.engine import Attempts
from searchtrace.store import (
    AnswerFinal,
    BadInput,
    Cursor,
    DatasetQuestion,
    Payload,
    TrajectoryStarted,
    shown,
)

# -- the deciding audit --------------------------------------------------------------------------------------
AUDIT_RANK = (
    "[CASE WHEN a.source LIKE 'llm%' OR a.source LIKE 'grader%' THEN 0 ELSE 1 END, a.recorded_us, a.position]"
)
"""The deciding audit's key (arg_max): a proposal (an LLM's or a grader's) below any other source, then recorded
time, then position; the one rule (export's audit.tsv reads it through AUDIT_CTE too)."""


RECORDED_ORDER = "recorded_at, position"
"""ORDER BY of facts several writers may have appended (audit labels and designs, run configs): oldest first."""


# -- the latest attempt, its question, gold and final answer (SQL) ---------------------------------------------
def surface_chars_sql(alias: str) -> str:
    """A search result's surface size: its recorded `surface_chars`, else (recorded before docs/how-to/providers.md, or imported)
    the length of its snippet, which is the same rule (store.surface_chars)."""
    return f"coalesce({alias}.surface_chars, length({alias}.snippet))"


def not_superseded(alias: str, starts: str = "trajectories") -> str:
    """SQL condition: the trajectory.started row `alias` is the latest attempt of its cell (no later one supersedes
    it), the twin of engine.Attempts; `starts` is the relation of every start (trajectory_id, supersedes, position)."""
    return (
        f"NOT EXISTS (SELECT 1 FROM {starts} sup WHERE sup.supersedes = {alias}.trajectory_id "
        f"AND sup.position > {alias}.position)"
    )


SUPERSEDED_IDS = f"SELECT s.trajectory_id FROM trajectories s WHERE NOT {not_superseded('s')}"
"""SELECT of the trajectory ids that a later attempt of the same cell supersedes (for rows keyed by trajectory_id)."""

RUNS_VARIABLE = "searchtrace_runs"  # a connection's DuckDB variable: the runs `tr` keeps (unset: every run)
ARM_VARIABLE = "searchtrace_arm"  # a connection's DuckDB variable: the axis of `tr.arm` (unset: provider)

# -- the arm of a trajectory (docs/how-to/compare.md) -------------------------------------------------------------------------
ARM_AXES = ("provider", "run", "model", "prompt")  # and config:<dotted.key>
CONFIG_AXIS = "config:"
_KEY_PART = re.compile(r"[A-Za-z0-9_-]+")


def arm_axis(by: str) -> str:
    """The value `ARM_VARIABLE` holds for `report --by by`: the axis name, or for `config:<dotted.key>` the JSON path
    of the key in a run's config; BadInput for anything else."""
    if by in ARM_AXES:
        return by
    if by.startswith(CONFIG_AXIS):
        parts = by[len(CONFIG_AXIS):].split(".")
        if all(_KEY_PART.fullmatch(p) for p in parts):
            return "$." + ".".join(f'"{p}"' for p in parts)
    raise BadInput(f"--by {shown(by, quoted=False)}: choose provider, run, model, prompt or config:<dotted.key> "
                   "(a key of the run config, e.g. config:limits.max_iterations)")


ARM_SQL = f"""CASE coalesce(getvariable('{ARM_VARIABLE}'), 'provider')
           WHEN 'provider' THEN t.provider WHEN 'run' THEN t.run_id WHEN 'model' THEN coalesce(rc.model, tm.model)
           WHEN 'prompt' THEN rc.prompt_sha256 ELSE json_extract_string(rc.config, getvariable('{ARM_VARIABLE}')) END"""
"""A trajectory's arm, the one definition: its provider, run, the run's agent model (else the model its turns
name), the run's prompt sha256, or
the text of a key of the run's config (JSON text for a list or table), by `ARM_VARIABLE` (analytics._arms sets
it); NULL when the run's config does not name it."""

TRAJECTORIES_CTE = f"""
tr AS (
  SELECT t.stream_id, t.trajectory_id, t.provider, t.qid, t.epoch, t.position, t.attempt, t.supersedes,
         coalesce(nullif(t.question, ''), q.question, '') AS question,
         coalesce(nullif(t.gold_answer, ''), q.gold_answer, '') AS gold_answer,
         CASE WHEN coalesce(nullif(t.gold_answer, ''), q.gold_answer) = json_extract_string(q.gold_aliases, '$[0]')
              THEN q.gold_aliases END AS gold_aliases,
         t.run_id, coalesce(rc.model, tm.model) AS model, rc.prompt_sha256, {ARM_SQL} AS arm
  FROM (SELECT * FROM trajectories QUALIFY row_number() OVER (PARTITION BY stream_id ORDER BY position) = 1) t
  -- the model its turns name (a proxied, imported or collected run's config names none)
  LEFT JOIN (SELECT stream_id, arg_min(model, position) AS model FROM model_responses WHERE model IS NOT NULL
             GROUP BY stream_id) tm ON tm.stream_id = t.stream_id
  LEFT JOIN (SELECT qid, arg_max(question, [recorded_us, position]) AS question,
                    arg_max(gold_answer, [recorded_us, position]) AS gold_answer,
                    -- the latest that has aliases (NULLs skipped)
                    arg_max(gold_aliases, [recorded_us, position]) AS gold_aliases
             FROM questions GROUP BY qid) q ON q.qid = t.qid
  LEFT JOIN (SELECT run_id, arg_min(model, position) AS model, arg_min(prompt_sha256, position) AS prompt_sha256,
                    arg_min(config, position) AS config
             FROM run_configs GROUP BY run_id) rc ON rc.run_id = t.run_id
  WHERE {not_superseded("t")} AND (getvariable('{RUNS_VARIABLE}') IS NULL OR list_contains(getvariable('{RUNS_VARIABLE}'), t.run_id))
)"""
"""`tr`: one row per current trajectory stream (its first trajectory.started, not superseded), gold answer falling
back to the dataset, and the aliases (docs/how-to/compare.md, a JSON array or NULL) of the latest dataset.question of its qid that
has any, when their first is that gold answer (a trace import restating the question without aliases keeps them);
its run with the run's agent model and prompt (its first run.started) and its arm (ARM_SQL);
only the runs `only_runs` names, when it names any."""

def decode_aliases(raw: str | None) -> list[str]:
    """`tr.gold_aliases` (a JSON array, or NULL when the dataset gave one answer) as a list; empty for NULL."""
    return msgspec.json.decode(raw, type=list[str]) if raw else []


AUDIT_ONE_EPOCH = f"""
aud_one_epoch AS (
  SELECT DISTINCT c.stream_id FROM trajectories c WHERE {not_superseded("c")}
  QUALIFY count(DISTINCT c.epoch) OVER (PARTITION BY c.run_id, c.provider, c.qid) = 1
)"""
"""`aud_one_epoch`: the streams of current trajectories whose (run, provider, qid) cell has one epoch, the only cells
an audit row naming neither a trajectory nor an epoch decides (docs/concepts/statistics.md)."""

AUDIT_CTE = f"""{AUDIT_ONE_EPOCH},
aud_match AS (
  SELECT t.stream_id, a.semantic_match, a.source, {AUDIT_RANK} AS k
  FROM tr t JOIN audits a ON a.trajectory_id = t.trajectory_id
  UNION ALL
  SELECT t.stream_id, a.semantic_match, a.source, {AUDIT_RANK} AS k
  FROM tr t JOIN audits a ON a.trajectory_id IS NULL AND a.provider = t.provider AND a.qid = t.qid
                          AND a.epoch = t.epoch
  UNION ALL
  SELECT t.stream_id, a.semantic_match, a.source, {AUDIT_RANK} AS k
  FROM tr t JOIN aud_one_epoch USING (stream_id)
  JOIN audits a ON a.trajectory_id IS NULL AND a.epoch IS NULL AND a.provider = t.provider AND a.qid = t.qid
),
aud AS (
  SELECT stream_id, arg_max(semantic_match, k) AS semantic_match, arg_max(source, k) AS audit_source
  FROM aud_match GROUP BY stream_id
)"""
"""`aud`: the deciding audit.answer of each trajectory: by trajectory_id, else by (provider, qid, epoch), else by
(provider, qid) when its cell has one epoch (docs/concepts/statistics.md). Needs `tr`."""

UNAPPLIED_AUDITS_SQL = f"""
WITH {TRAJECTORIES_CTE}, {AUDIT_ONE_EPOCH}
SELECT count(DISTINCT a.position) FROM audits a JOIN tr t
  ON a.trajectory_id IS NULL AND a.epoch IS NULL AND a.provider = t.provider AND a.qid = t.qid
WHERE t.stream_id NOT IN (SELECT stream_id FROM aud_one_epoch)"""
"""How many audit rows name only (provider, qid) of a reported cell recorded in several epochs: rows of a store
written before docs/concepts/statistics.md, which `aud` does not apply (they do not say which epoch's answer they judged)."""


def unapplied_audits_note(con: Cursor) -> str | None:
    """The report's note on audit rows `aud` leaves out (None when there are none); run inside `only_runs`."""
    row = con.execute(UNAPPLIED_AUDITS_SQL).fetchone()
    n = int(row[0]) if row else 0
    if not n:
        return None
    return (f"{n} audit row{'s' if n != 1 else ''} naming only provider and qid of a cell recorded in several "
            f"epochs {'are' if n != 1 else 'is'} not applied; import them again with an epoch or trajectory_id column")


ANSWERS_CTE = """
fa AS (SELECT stream_id, arg_max(text, position) AS final_answer FROM answers GROUP BY stream_id)"""
"""`fa`: the last answer.final text of each stream (no row when the trajectory gave none)."""


# -- which run ------------------------------------------------------------------------------------------------
RUNS_SQL = "SELECT run_id FROM trajectories GROUP BY run_id ORDER BY min(position)"
"""The runs that recorded (or imported) trajectories, oldest first."""


STARTED_RUNS_SQL = "SELECT run_id FROM run_configs GROUP BY run_id ORDER BY min(position)"
"""The runs a `run.started` names: a run is known from its start, before its first trajectory is committed."""


def resolve_runs(con: Cursor, run_ids: Sequence[str]) -> list[str] | None:
    """The runs to report: the given ones (BadInput for an unknown one: neither started nor with trajectories), else
    None (every run) when the store holds one run; several runs and none given is BadInput naming them, so runs are
    never merged silently."""
    known = [str(r[0]) for r in con.execute(RUNS_SQL).fetchall()]
    if any(run not in known for run in run_ids):
        started = [str(r[0]) for r in con.execute(STARTED_RUNS_SQL).fetchall()]
        every = list(dict.fromkeys([*known, *started]))
        for run in run_ids:
            if run not in every:
                raise BadInput(f"run {shown(run)} not found in the database (known: {', '.join(every) or 'none'})")
    if run_ids:
        return list(dict.fromkeys(run_ids))
    if len(known) > 1:
        raise BadInput(
            f"this store holds {len(known)} runs ({', '.join(known)}); choose one with --run-id "
            "(repeat it to report several together)"
        )
    return None


@contextmanager
def only_runs(con: Cursor, runs: Sequence[str] | None) -> Iterator[None]:
    """Keep only trajectories of `runs` in `tr` on `con` for the block (None: every run)."""
    if runs is None:
        yield
        return
    con.execute(f"SET VARIABLE {RUNS_VARIABLE} = ?::VARCHAR[]", [list(runs)])
    try:
        yield
    finally:
        con.execute(f"RESET VARIABLE {RUNS_VARIABLE}")


@contextmanager
def arm_variable(con: Cursor, by: str) -> Iterator[None]:
    """Give `tr.arm` the axis `by` (provider, run, model, prompt or config:<dotted.key>; BadInput for another) on
    `con` for the block; provider, the default, sets nothing."""
    axis = arm_axis(by)
    if axis == "provider":
        yield
        return
    con.execute(f"SET VARIABLE {ARM_VARIABLE} = ?::VARCHAR", [axis])
    try:
        yield
    finally:
        con.execute(f"RESET VARIABLE {ARM_VARIABLE}")


# -- the same rules over a stream of events (Python) -----------------------------------------------------------
class Cells:
    """The Python twin of TRAJECTORIES_CTE + ANSWERS_CTE for readers that fold events in position order.

    Feed it `dataset.question`, `trajectory.started` and `answer.final` events with `add`; `current()` then gives
    the same trajectories as `tr`, and `final`, `question`, `gold` the same values as `fa` and `tr`.
    """

    def __init__(self) -> None:
        self.started: dict[str, TrajectoryStarted] = {}  # stream -> its first trajectory.started
        self.questions: dict[str, DatasetQuestion] = {}  # qid -> latest dataset.question
        self.aliased: dict[str, list[str]] = {}  # qid -> aliases of its latest dataset.question that has several
        self.finals: dict[str, str] = {}  # stream -> text of its last answer.final
        self.attempts = Attempts()

    def add(self, stream_id: str, p: Payload) -> None:
        """Take one event (others are ignored); events must come in position order."""
        if isinstance(p, DatasetQuestion):
            self.questions[p.qid] = p
            if isinstance(p.gold_aliases, list):
                self.aliased[p.qid] = p.gold_aliases
        elif isinstance(p, TrajectoryStarted):
            self.started.setdefault(stream_id, p)
            self.attempts.add(p.trajectory_id, p.supersedes)
        elif isinstance(p, AnswerFinal):
            self.finals[stream_id] = p.text

    @property
    def superseded(self) -> set[str]:
        """Trajectory ids a later start supersedes."""
        return self.attempts.superseded

    def is_current(self, t: TrajectoryStarted) -> bool:
        return self.attempts.is_latest(t.trajectory_id)

    def current(self) -> Iterator[tuple[str, TrajectoryStarted]]:
        """(stream, first trajectory.started) of every current trajectory, in order of first appearance."""
        return ((s, t) for s, t in self.started.items() if self.is_current(t))

    def final(self, stream_id: str) -> str | None:
        return self.finals.get(stream_id)

    def question(self, t: TrajectoryStarted) -> str:
        q = self.questions.get(t.qid)
        return t.question or (q.question if q else "")

    def gold(self, t: TrajectoryStarted) -> str:
        q = self.questions.get(t.qid)
        return t.gold_answer or (q.gold_answer if q else "")

    def aliases(self, t: TrajectoryStarted) -> list[str]:
        """Every accepted answer (docs/how-to/compare.md): the latest aliases of its qid when their first is the gold answer, as `tr`."""
        gold = self.gold(t)
        aliases = self.aliased.get(t.qid)
        return list(aliases) if aliases and aliases[0] == gold else [gold]


CELL_EVENT_TYPES = ("dataset.question", "trajectory.started", "answer.final")


# -- which judge run (docs/how-to/judge-runs.md) ------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeRun:
    """One judge run as the report sees it: when it began and last started, and how many valid verdicts it gave."""

    judge_run_id: str
    first_position: int  # its first judge.started or verdict
    latest_position: int  # its last judge.started (a resume starts again), else its last verdict
    valid_verdicts: int
    latest_us: int = 0  # recorded_at (µs) of its last judge.started, else of its last verdict (docs/how-to/scale.md)
    first_valid_position: int | None = None  # its first valid verdict: the order in which judge runs became usable
    first_valid_us: int | None = None  # recorded_at (µs) of that verdict: the order across merged segments

    @property
    def latest(self) -> tuple[int, int]:
        """The order of judge runs: recorded time of their latest start, then position."""
        return (self.latest_us, self.latest_position)


JUDGE_RUNS_SQL = """
SELECT judge_run_id, min(position) AS first_position,
       coalesce(max(position) FILTER (WHERE started), max(position)) AS latest_position,
       count(*) FILTER (WHERE valid) AS valid_verdicts,
       coalesce(max(recorded_us) FILTER (WHERE started), max(recorded_us)) AS latest_us,
       min(position) FILTER (WHERE valid) AS first_valid_position,
       min(recorded_us) FILTER (WHERE valid) AS first_valid_us
FROM (SELECT judge_run_id, position, recorded_us, true AS started, NULL::BOOLEAN AS valid FROM judge_runs
      UNION ALL SELECT judge_run_id, position, recorded_us, false, valid FROM verdicts)
WHERE judge_run_id IS NOT NULL
GROUP BY judge_run_id ORDER BY first_position"""
"""Every judge run, oldest first (a judge.started or a verdict names it)."""

MADE_DEFAULT_SQL = """
SELECT judge_run_id FROM judge_defaults WHERE judge_run_id IS NOT NULL
ORDER BY recorded_us DESC, position DESC LIMIT 1"""
"""The judge run the latest `judge --default` named (none in a store that never had one)."""

GIVEN, MADE_DEFAULT, FIRST = "given", "judge --default", "first"  # how a judge run was chosen (report JSON)
HOW_TO_CHOOSE = ("choose another with --judge-run-id ID, or make one the default with "
                 "`searchtrace judge --default --judge-run-id ID`")


def judge_runs(con: Cursor) -> list[JudgeRun]:
    """Every judge run, oldest first (run inside analytics._sources.reading)."""
    return [JudgeRun(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4] or 0),
                     None if r[5] is None else int(r[5]), None if r[6] is None else int(r[6]))
            for r in con.execute(JUDGE_RUNS_SQL).fetchall()]


def made_default(con: Cursor) -> str | None:
    """The judge run the latest `judge --default` named, if any (run inside analytics._sources.reading)."""
    row = con.execute(MADE_DEFAULT_SQL).fetchone()
    return None if row is None else str(row[0])


def default_judge_run(runs: list[JudgeRun], marked: str | None = None) -> tuple[JudgeRun | None, str | None]:
    """(the default judge run, how it became so): the one `judge --default` named last, else the store's first
    judge run to give a valid verdict (a later run never takes its place by itself); (None, None) when none has one."""
    if marked is not None:
        for r in runs:
            if r.judge_run_id == marked:
                return r, MADE_DEFAULT
    useful = [r for r in runs if r.first_valid_position is not None]
    if not useful:
        return None, None
    # first by the recorded time of its first valid verdict (a merge may append an older segment later), then position
    return min(useful, key=lambda r: (r.first_valid_us or 0, r.first_valid_position or 0)), FIRST


@dataclass(frozen=True)
class JudgeChoice:
    """Which judge run a reader uses and why: `how` is GIVEN, MADE_DEFAULT or FIRST (None: no judge run); `notes`
    are the one-line remarks for stderr (which run, the others, how to choose; runs without a valid verdict)."""

    judge_run_id: str | None
    how: str | None
    others: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def choose_judge_run(con: Cursor, judge_run_id: str | None) -> JudgeChoice:
    """The judge run to use (docs/how-to/judge-runs.md); BadInput for an unknown run id. A given run is used as it
    is; else the default (`default_judge_run`), and when the store holds several judge runs a note names the one
    used, the others and how to choose, so which verdicts a report counts is never a surprise."""
    runs = judge_runs(con)
    if judge_run_id is not None:
        if judge_run_id not in {r.judge_run_id for r in runs}:
            known = ", ".join(r.judge_run_id for r in runs) or "none"
            raise BadInput(f"judge run {shown(judge_run_id)} not found in the database (known: {known})")
        others = tuple(r.judge_run_id for r in runs if r.judge_run_id != judge_run_id)
        return JudgeChoice(judge_run_id, GIVEN, others)
    chosen, how = default_judge_run(runs, made_default(con))
    others = tuple(r.judge_run_id for r in runs if chosen is None or r.judge_run_id != chosen.judge_run_id)
    notes = [
        f"judge run {r.judge_run_id} has no valid verdict; "
        + (f"using judge run {chosen.judge_run_id}" if chosen else "the report uses no judge run")
        for r in runs
        if r.valid_verdicts == 0 and (chosen is None or r.judge_run_id != chosen.judge_run_id)
    ]
    if chosen is not None and others:
        why = ("made the default with `judge --default`" if how == MADE_DEFAULT
               else "the store's first judge run with a valid verdict")
        shown_others = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        notes.append(f"judge run {chosen.judge_run_id} used ({why}); also in this store: {shown_others}; "
                     f"{HOW_TO_CHOOSE}")
    return JudgeChoice(None if chosen is None else chosen.judge_run_id, how, others, tuple(notes))


def resolve_judge_run(con: Cursor, judge_run_id: str | None) -> tuple[str | None, list[str]]:
    """(the judge run to use, its one-line notes), as `choose_judge_run` chooses it."""
    choice = choose_judge_run(con, judge_run_id)
    return choice.judge_run_id, list(choice.notes)


# -- the item's cell of the support partition (docs/concepts/metrics.md) --------------------------------------------------------
def partition_cell(s: str, f: str, observed: str = "true") -> str:
    """SQL of an item's cell from pre-fetch surface support `s`, the fetch decision `f` and whether its snippet reached
    the caller `observed` (SQL booleans): UNOBSERVED = ¬observed, else SMART = S∧F, MISSED = S∧¬F, BLIND = ¬S∧F,
    NO-OP = ¬S∧¬F. The metrics count these cells, the explorer shows them."""
    smart, missed, blind, noop, unobserved = (f"'{c.name}'" for c in PARTITION)
    return (f"(CASE WHEN NOT coalesce({observed}, true) THEN {unobserved} WHEN {s} AND {f} THEN {smart} "
            f"WHEN {s} THEN {missed} WHEN {f} THEN {blind} ELSE {noop} END)")


def surface_support(verdict: str, item: str) -> str:
    """SQL of an item's pre-fetch surface support S from its verdict row `verdict` and item row `item`: the snippet
    supports the gold answer and the model was shown it (docs/concepts/shown.md: a URL fetched but never shown has no snippet;
    docs/how-to/hosted.md: nor has a hosted result whose caller received none)."""
    return f"(coalesce({verdict}.snippet_supports_gold, false) AND {item}.snippet_shown AND {item}.snippet_observed)"


def first_verdicts(run: str) -> str:
    """SELECT of the verdict each item counts with in judge run `run` (a SQL expression, e.g. `$run`): its first."""
    return (
        f"SELECT * FROM verdicts WHERE judge_run_id = {run} "
        "QUALIFY row_number() OVER (PARTITION BY trajectory_id, url_normalized ORDER BY position) = 1"
    )
