"""Import and export the interchange formats of SPEC §9 (traces, judgments, audits; events.parquet)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from searchtrace.analytics import projections, views
from searchtrace.replay.interchange import ImportResult, export_all
from searchtrace.replay.interchange import import_files as import_into
from searchtrace.store import BadInput, EventLog, bulk_appends


def import_files(
    db: Path, traces: Sequence[Path] = (), judgments: Sequence[Path] = (), audits: Sequence[Path] = (), *,
    blobs: Path | None = None, on_stage: Callable[[str], None] = lambda _stage: None,
) -> ImportResult:
    """Strict import (a bad line stops it, nothing of that file written), then the typed projections caught up;
    `blobs` is the folder of raw bodies `export --blobs` wrote.

    A failed import into a store that did not exist before leaves no store behind.
    """
    new = not db.exists()
    try:
        with EventLog(db) as log:
            with bulk_appends(log):  # short GIL turns, one-thread chunks for the appends; restored after
                res = import_into(log, list(traces), list(judgments), list(audits), blobs=blobs, on_stage=on_stage)
            on_stage("building the typed projections")
            cur = log.cursor()
            try:
                views.ensure_views(cur)
                projections.catch_up(cur)
            finally:
                cur.close()
    except BaseException:
        if new:
            for leftover in (db, db.with_name(db.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    return res


def export(db: Path, out: Path, blobs: Path | None = None) -> dict[str, int]:
    """Writes traces.jsonl, run.jsonl, judgments.jsonl, audit.tsv, events.parquet and the notebook files
    trajectories.parquet, judge_items.parquet, verdicts.parquet (the typed v_* views) into `out`, and with `blobs`
    the raw bodies and pages the traces name; file name -> rows written."""
    with EventLog(db, read_only=True) as log:
        return export_all(log, out, blobs)


def import_inspect(
    db: Path, logs: Sequence[Path], *, provider: str | None = None, run_id: str | None = None,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> ImportResult:
    """Inspect AI logs (files or folders) as trajectories: each log becomes §9 trace lines, imported as strictly
    as traces.jsonl; an error names the log, the sample and the event, and nothing of that log is written."""
    import re
    import tempfile

    import msgspec

    from searchtrace.replay.interchange import log_files, log_traces

    files = log_files(logs)
    with tempfile.TemporaryDirectory(prefix="searchtrace-inspect-") as tmp:
        traces: list[Path] = []
        where: dict[str, tuple[Path, list[str]]] = {}
        for i, f in enumerate(files):
            on_stage(f"reading {f.name}")
            out = Path(tmp) / f"{i}.jsonl"
            samples: list[str] = []
            with out.open("wb") as fh:
                for sample, line in log_traces(f, provider=provider, run_id=run_id):
                    fh.write(msgspec.json.encode(line) + b"\n")
                    samples.append(sample)
            if samples:
                traces.append(out)
                where[str(out)] = (f, samples)
        if not traces:
            raise BadInput(f"{', '.join(map(str, logs))}: no sample calls a web-search tool (nothing to import)")
        try:
            return import_files(db, traces, on_stage=on_stage)
        except BadInput as exc:  # name the log and the sample, not the intermediate file
            m = re.match(r"^(.*?): line (\d+): (.*)$", str(exc), re.S)
            if m is None or m.group(1) not in where:
                raise
            log, samples = where[m.group(1)]
            raise BadInput(f"{log}: sample {samples[int(m.group(2)) - 1]}: {m.group(3)}") from None
