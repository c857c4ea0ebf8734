"""Grade the answers and build the docs/reference/report.md report (JSON contract, HTML page) from a store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.analytics import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    Built,
    JudgeChoice,
    build_report,
    choose_judge_run,
    extras_from_db,
    render,
    run_metrics,
    sources,
)
from searchtrace.analytics import Report as ReportData
from searchtrace.replay import Grade, grade_answers
from searchtrace.store import (
    BadInput,
    EventLog,
    NotAStore,
    RemoteStore,
    StoreLocked,
    read_again,
    read_connection,
    require_database,
    while_held,
)


class Report(msgspec.Struct, kw_only=True):
    """The report of one judge run, and the HTML page written for it (None: none asked for)."""

    data: ReportData
    html: Path | None = None
    notes: list[str] = []  # one-line remarks for the reader: judge runs passed over, partial judge coverage


def grade(db: Path) -> list[Grade]:
    """Records the deterministic grader's audit.answer proposals for every trajectory (an imported audit wins)."""
    with EventLog(db) as log:
        return grade_answers(log)


def open_for_report(db: Path) -> tuple[EventLog | RemoteStore, bool]:
    """Read-write when possible (to catch the projections up), else read-only (raw views: a read-only file, or
    other readers hold it), else a read session on the process that holds the file (a run recording); never creates
    a file."""
    require_database(db)

    def the_file() -> tuple[EventLog | RemoteStore, bool]:
        try:
            return EventLog(db), True
        except StoreLocked:  # only readers hold it (an explorer on a finished run): they leave reading to us
            return EventLog(db, read_only=True), False

    def a_session() -> tuple[EventLog | RemoteStore, bool]:
        return RemoteStore(db), False

    try:
        return while_held(the_file, a_session)
    except NotAStore:
        # e.g. a read-only file or folder: read it as it is
        return EventLog(db, read_only=True), False


def write_page(path: Path, text: str) -> Path:
    """Writes a report page; a path that cannot be written is bad input, not a traceback."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot write ({exc.strerror})") from None
    return path


def report(
    db: Path,
    *,
    judge_run_id: str | None = None,
    metrics: Sequence[Path] = (),
    html: Path | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: str = DEFAULT_SEED,
    prices: Path | None = None,
    run_ids: Sequence[str] = (),
    by: str = "provider",
) -> Report:
    """The §8 report of a judge run (default: analytics._rules), with custom metric files and §12 intervals from
    `bootstrap` replicates (0: none) and §13 costs from the price file `prices`, per provider or per arm of `by`
    (docs/how-to/compare.md: run, model, prompt, config:<dotted.key>); writes the HTML page when asked."""
    from searchtrace.engine import load_prices

    price_table = None if prices is None else load_prices(prices)  # a bad file stops us before the store is read

    def read() -> tuple[Built, dict[str, Any] | None]:
        log, writable = open_for_report(db)
        with log:
            con = log.cursor()
            try:
                built = build_report(
                    con, judge_run_id=judge_run_id, writable=writable,
                    bootstrap=bootstrap, seed=seed, prices=price_table, run_ids=run_ids, by=by,
                )
                runs = list(run_ids) or None
                extra = extras_from_db(log, built.report.judge_run_id, runs, by) if html is not None else None
                return built, extra
            finally:
                con.close()

    built, extra = read_again(read)
    data = built.report
    if metrics:  # user code: on a read-only, offline connection of its own, once the report's own is closed
        data.custom = run_metrics(db, list(metrics), data.judge_run_id, list(run_ids) or None)
    if html is not None:
        write_page(html, render(data, extra=extra))
    return Report(data=data, html=html, notes=built.notes)


def grade_and_report(log: EventLog, html: Path, judge_run_id: str | None) -> Report:
    """Grades (a proposal; an imported audit would win), then the §8 report and its HTML page, on an open store."""
    grade_answers(log)
    cur = log.cursor()
    try:
        data = build_report(cur, judge_run_id=judge_run_id, bootstrap=DEFAULT_BOOTSTRAP).report
        page = render(data, extra=extras_from_db(cur, data.judge_run_id))
    finally:
        cur.close()
    html.write_text(page, encoding="utf-8")
    return Report(data=data, html=html)


def judge_choice(db: Path, judge_run_id: str | None = None) -> JudgeChoice:
    """Which judge run a reader of `db` uses and why (docs/how-to/judge-runs.md), read as `report` reads (the
    file, or a session on the run that holds it); BadInput for a judge run the store does not hold."""
    require_database(db)
    cur = read_connection(db)
    try:
        with sources.reading(cur, writable=False):
            return choose_judge_run(cur, judge_run_id)
    finally:
        cur.close()
