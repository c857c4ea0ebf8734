"""The report of SPEC §8: which judge run, every provider's metrics, complementarity, custom metrics; JSON text.

Keys beyond the §8 contract, per provider: `reasoning_tokens_per_trajectory`, `page_tokens_per_trajectory`
(fetch.completed n_tokens), `latency_ms_per_trajectory` (model + search + fetch latencies),
`distinct_domains_per_trajectory`, `tokens_per_correct` ((input + output) / correct, null without a correct
answer), `surface_supported_items` and `surface_contradicted_items` (the ratios' numerators), and
`query_outcome` ({answerable, not_answerable} x {correct, incorrect, unaudited} trajectories). At the top:
`custom` ({metric file stem: {provider: value}}) when `--metric` is given.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

from searchtrace.analytics import projections
from searchtrace.analytics.metrics import TrajectoryStats, complementarity, provider_metrics, trajectory_stats
from searchtrace.analytics.views import ensure_views
from searchtrace.store.errors import BadInput

SCHEMA = "searchtrace.report/1"


def judge_runs(con: duckdb.DuckDBPyConnection, p: str) -> list[str]:
    """Judge run ids, oldest first (by their first judge.started, or first verdict when it has no start)."""
    rows = con.execute(
        f"SELECT judge_run_id, min(position) AS pos FROM (SELECT judge_run_id, position FROM {p}judge_runs "
        f"UNION ALL SELECT judge_run_id, position FROM {p}verdicts) GROUP BY judge_run_id ORDER BY pos"
    ).fetchall()
    return [r[0] for r in rows]


def latest_judge_run(con: duckdb.DuckDBPyConnection, p: str) -> str | None:
    """The judge run whose judge.started has the highest position."""
    row = con.execute(f"SELECT judge_run_id FROM {p}judge_runs ORDER BY position DESC LIMIT 1").fetchone()
    return None if row is None else str(row[0])


def resolve_judge_run(con: duckdb.DuckDBPyConnection, p: str, judge_run_id: str | None) -> str | None:
    if judge_run_id is None:
        return latest_judge_run(con, p)
    known = judge_runs(con, p)
    if judge_run_id not in known:
        raise BadInput(
            f"judge run {judge_run_id!r} not found in the database (known: {', '.join(known) or 'none'})"
        )
    return judge_run_id


def build_report(
    con: duckdb.DuckDBPyConnection,
    *,
    judge_run_id: str | None = None,
    writable: bool = True,
    metric_files: list[Path] | None = None,
) -> dict[str, Any]:
    """The §8 report dict (keys beyond the contract: extra provider keys, `custom`).

    `writable`: the connection may write derived tables (catch the projections up, install the `v_*` views
    for `searchtrace sql`); without it everything is computed from temporary views over the raw events.
    """
    if writable:
        ensure_views(con)
    p = projections.sources(con, writable=writable)
    run = resolve_judge_run(con, p, judge_run_id)
    rows = trajectory_stats(con, p, run)
    by_provider: dict[str, list[TrajectoryStats]] = defaultdict(list)
    for r in rows:
        by_provider[r.provider].append(r)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "judge_run_id": run,
        "providers": {name: provider_metrics(by_provider[name]) for name in sorted(by_provider)},
        "complementarity": complementarity(con, p, rows),
    }
    if metric_files:
        from searchtrace.analytics.custom import run_metrics

        report["custom"] = run_metrics(con, metric_files, run, writable=writable)
    return report


def to_json(report: dict[str, Any]) -> str:
    """Canonical text: keys sorted, indent 1, trailing newline (byte-identical for the same events)."""
    return json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
