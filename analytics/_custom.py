"""User metrics without touching the package: a Python file with `metric(con, judge_run_id)` or a `.sql` file.

Metrics run on a connection of their own: read-only, with external access (files, ATTACH, COPY, extensions)
off and the configuration locked, and a SQL metric is one statement that `sql` would also accept. A Python
metric gets a DuckDB cursor of that connection on which the documented views (`v_*`, analytics/VIEWS.md) exist and the
judge run the report uses (None when there is none); it returns `{provider: number or None}`. A SQL metric
returns rows `(provider, value)` and may use the parameter `$judge_run_id`. The results go into the table and
into the JSON under `"custom"`, keyed by the file's stem.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from searchtrace.analytics._rules import RUNS_VARIABLE
from searchtrace.analytics._views import ensure_views
from searchtrace.store import BadInput, Cursor, StoreError, open_read_only, read_statements, shown

Number = int | float | None


def _check(path: Path, result: Any) -> dict[str, Number]:
    if not isinstance(result, dict):
        raise BadInput(f"{path}: metric must return a dict of provider -> number, got {type(result).__name__}")
    out: dict[str, Number] = {}
    for k, v in result.items():
        if not isinstance(k, str):
            raise BadInput(f"{path}: provider names must be strings, got {shown(k)}")
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            if hasattr(v, "__float__"):  # Decimal / numpy scalars from SQL
                v = float(v)
            else:
                raise BadInput(f"{path}: value for {shown(k)} must be a number or null, got {shown(v)}")
        if isinstance(v, float) and not math.isfinite(v):
            raise BadInput(f"{path}: value for {shown(k)} is not finite ({shown(v)})")
        out[k] = v
    return dict(sorted(out.items()))


def _run_python(path: Path, con: Cursor, judge_run_id: str | None) -> dict[str, Number]:
    name = f"searchtrace_metric_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadInput(f"{path}: cannot load as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, "metric", None)
        if not callable(fn):
            raise BadInput(f"{path}: defines no function metric(con, judge_run_id)")
        return _check(path, fn(con, judge_run_id))
    except BadInput:
        raise
    except Exception as exc:  # the user's code: report it as bad input, in one line
        raise BadInput(f"{path}: metric failed: {type(exc).__name__}: {exc}") from None
    finally:
        sys.modules.pop(name, None)


def _run_sql(path: Path, con: Cursor, judge_run_id: str | None) -> dict[str, Number]:
    try:
        sql = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read the metric ({exc})") from None
    try:
        statements = read_statements(sql)
    except StoreError as exc:  # the same rules as `searchtrace sql`: one plain read
        raise BadInput(f"{path}: query failed: {str(exc).removeprefix('sql: ')}") from None
    if len(statements) != 1:
        raise BadInput(f"{path}: a SQL metric is one SELECT statement, this file has {len(statements)}")
    try:
        cur = con.execute(sql, {"judge_run_id": judge_run_id}) if "$judge_run_id" in sql else con.execute(sql)
        rows = cur.fetchall()
    except duckdb.Error as exc:
        raise BadInput(f"{path}: query failed: {str(exc).splitlines()[0]}") from None
    if rows and len(rows[0]) != 2:
        raise BadInput(f"{path}: the query must return two columns (provider, value), got {len(rows[0])}")
    return _check(path, {r[0]: r[1] for r in rows})


def run_metrics(
    db: Path, files: list[Path], judge_run_id: str | None, runs: Sequence[str] | None = None
) -> dict[str, dict[str, Number]]:
    """Each file's result keyed by its stem (two files with one stem are refused), on a read-only connection; the
    views show only the trajectories of `runs` (None: every run).

    The caller must have closed its own connection to `db` first (DuckDB allows one mode per file per process).
    """
    con = open_read_only(db)
    cur = con.cursor()
    try:
        ensure_views(cur, temp=True)
        if runs is not None:
            cur.execute(f"SET VARIABLE {RUNS_VARIABLE} = ?::VARCHAR[]", [list(runs)])
        out: dict[str, dict[str, Number]] = {}
        for path in files:
            if path.stem in out:
                raise BadInput(f"{path}: a second metric named {shown(path.stem)}; rename one of the files")
            if not path.is_file():
                raise BadInput(f"{path}: no such metric file")
            if path.suffix == ".sql":
                out[path.stem] = _run_sql(path, cur, judge_run_id)
            elif path.suffix == ".py":
                out[path.stem] = _run_python(path, cur, judge_run_id)
            else:
                raise BadInput(f"{path}: a metric file is a .py (def metric(con, judge_run_id)) or a .sql file")
        return out
    finally:
        cur.close()
        con.close()
