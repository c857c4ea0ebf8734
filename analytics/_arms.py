"""docs/how-to/compare.md arms: the runs a report over an axis reads, the refusals that keep runs apart, each trajectory's arm.

The arm itself is one SQL expression, `tr.arm` (analytics._rules.ARM_SQL). `arms(con, by, run_ids)` points it at
an axis for a block, after the checks every reader of arms shares:
- with `--by provider` (the default) several runs are read only when named (`--run-id`, analytics._rules.resolve_runs);
  with another axis every run is read unless some are named, since the arms keep them apart;
- a run whose config does not name the axis (a proxied or imported run has no agent model or prompt of ours, a
  config key may be absent) is refused, never put in an arm of its own;
- two runs with trajectories of one (arm, provider, qid, epoch) cell are refused, never merged into one arm (with
  `--by provider`: two runs of the same provider over the same questions);
- an arm value holding `|` is refused (the pair keys are "<A>|<B>").
Each refusal is one line naming the runs. `trajectory_arms` gives the explorer the same mapping the report groups by.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import searchtrace.analytics._sources as sources
from searchtrace.analytics._rules import (
    CONFIG_AXIS,
    TRAJECTORIES_CTE,
    arm_axis,
    arm_variable,
    only_runs,
    resolve_runs,
)
from searchtrace.store import BadInput, Cursor

CHECK_SQL = f"""WITH {TRAJECTORIES_CTE}
SELECT arm, provider, qid, epoch, list(DISTINCT run_id ORDER BY run_id) AS runs
FROM tr GROUP BY arm, provider, qid, epoch
HAVING arm IS NULL OR contains(arm, '|') OR count(DISTINCT run_id) > 1
ORDER BY arm NULLS FIRST, provider, qid, epoch"""
"""The (arm, provider, qid, epoch) cells no arm may hold: without an arm value, with `|` in it, or of several runs."""

_NAMED = {"model": "agent model (agent.model, nor a model on their turns)", "prompt": "prompt (prompt.sha256)"}


def _runs(names: Sequence[str]) -> str:
    return ("runs " if len(names) > 1 else "run ") + ", ".join(names)


def check_arms(con: Cursor, by: str) -> None:
    """BadInput (one line naming the runs) when the arms of `by` would hide a run or merge two; inside `arms`."""
    rows = con.execute(CHECK_SQL).fetchall()
    if not rows:
        return
    missing = sorted({r for arm, *_, runs in rows if arm is None for r in runs})
    if missing:
        what = _NAMED.get(by) or f"{by[len(CONFIG_AXIS):]} key"
        raise BadInput(f"--by {by}: {_runs(missing)} record{'' if len(missing) > 1 else 's'} no {what} in the run "
                       "config (run.started); choose runs with --run-id or another --by (e.g. --by run)")
    if barred := sorted({str(arm) for arm, *_ in rows if "|" in str(arm)}):
        raise BadInput(f"--by {by}: arm {barred[0]!r} contains '|', which separates the two arms of a pair key; "
                       "choose another --by")
    merged = sorted({r for *_, runs in rows for r in runs})
    arm, provider, qid, epoch, _ = rows[0]
    cells = f"{len(rows)} (provider, qid, epoch) cell{'s' if len(rows) > 1 else ''}, e.g. {provider}/{qid}/{epoch}"
    if by == "provider":
        raise BadInput(f"{_runs(merged)} hold trajectories of the same provider, question and epoch ({cells}); "
                       "--by provider never merges runs: report one at a time with --run-id, or compare them with "
                       "--by run")
    raise BadInput(f"--by {by}: {_runs(merged)} hold trajectories of the same arm {arm!r}, provider, question and "
                   f"epoch ({cells}); an arm never merges runs: choose runs with --run-id or another --by")


def arm_runs(con: Cursor, by: str, run_ids: Sequence[str]) -> list[str] | None:
    """The runs a report over `by` reads (None: every run). By provider as analytics._rules.resolve_runs (a store of
    several runs needs --run-id); by another axis the named runs, else every run."""
    if by == "provider" or run_ids:
        return resolve_runs(con, run_ids)
    return None


@contextmanager
def arms(con: Cursor, by: str, run_ids: Sequence[str]) -> Iterator[list[str] | None]:
    """Read `tr` over the runs of `by` (`arm_runs`, given to the block) with `tr.arm` on axis `by`, after
    `check_arms`; inside analytics._sources.reading. The default (by provider, one run) checks nothing more."""
    arm_axis(by)  # a bad --by is one line before anything is read
    runs = arm_runs(con, by, run_ids)
    with only_runs(con, runs), arm_variable(con, by):
        if by != "provider" or runs is not None:
            check_arms(con, by)
        yield runs


def trajectory_arms(con: Cursor, by: str, run_ids: Sequence[str] = ()) -> dict[str, str]:
    """trajectory_id -> arm value of every current trajectory of the runs `by` reads (the report's own grouping);
    BadInput where the report would refuse."""
    with sources.reading(con, writable=False), arms(con, by, run_ids):
        rows = con.execute(f"WITH {TRAJECTORIES_CTE} SELECT trajectory_id, arm FROM tr ORDER BY position").fetchall()
    return {str(t): str(a) for t, a in rows}
