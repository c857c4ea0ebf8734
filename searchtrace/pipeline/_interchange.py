"""Import and export the interchange formats of docs/reference/interchange.md (traces, judgments, audits; events.parquet)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.analytics import projections, views
from searchtrace.replay.interchange import ImportResult, OtelImport, export_all
from searchtrace.replay.interchange import import_files as import_into
from searchtrace.store import BadInput, EventLog, bulk_appends, read_bounded


def import_files(
    db: Path, traces: Sequence[Path] = (), judgments: Sequence[Path] = (), audits: Sequence[Path] = (), *,
    blobs: Path | None = None, on_stage: Callable[[str], None] = lambda _stage: None,
) -> ImportResult:
    """Strict import (a bad line stops it, nothing of that file written), then the typed projections caught up;
    `blobs` is the folder of raw bodies `export --blobs` wrote.

    A failed import into a store that did not exist before leaves no store behind.
    """
    with _importing(db) as log:
        with bulk_appends(log):  # short GIL turns, one-thread chunks for the appends; restored after
            res = import_into(log, list(traces), list(judgments), list(audits), blobs=blobs, on_stage=on_stage)
        on_stage("building the typed projections")
    return res


@contextlib.contextmanager
def _importing(db: Path) -> Iterator[EventLog]:
    """The store an import writes, its typed projections caught up after; a failed import into a store that did
    not exist before leaves no store behind."""
    new = not db.exists()
    try:
        with EventLog(db) as log:
            yield log
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


def import_otel(
    db: Path, files: Sequence[Path], *, questions: str | None = None, provider: str | None = None,
    run_id: str = "otel", search_tools: Sequence[str] = (), fetch_tools: Sequence[str] = (),
) -> OtelImport:
    """OTLP trace files (JSON or protobuf ExportTraceServiceRequest) as trajectories (docs/how-to/otel.md), validated whole
    before anything is written; the verdicts and answer audits an export of ours carries are imported with them
    (as docs/reference/interchange.md judgment lines and audit rows, as strictly, and validated before the trajectories are written)."""
    import tempfile

    from searchtrace.engine import question_file
    from searchtrace.pipeline._recording import sandbox_rows
    from searchtrace.replay.interchange import (
        ToolNames,
        append_chunked,
        default_search_tools,
        map_spans,
        requests_in,
    )

    rows = question_file(questions, rows=sandbox_rows(questions)) if questions else []
    tools = ToolNames(search=frozenset(search_tools or default_search_tools()),
                      fetch=frozenset(fetch_tools or ToolNames().fetch))
    requests = [r for f in files for r in requests_in(read_bounded(f, "otel", "the OTLP file", "nothing was imported"), str(f))]
    with _importing(db) as log:
        res = map_spans(log, requests, run_id=run_id, questions=rows, provider=provider, tools=tools)
        with tempfile.TemporaryDirectory(prefix="searchtrace-otel-") as tmp:
            judgments, audits = [], []
            if res.judgments:
                judgments.append(Path(tmp) / "judgments.jsonl")
                judgments[0].write_bytes(b"".join(msgspec.json.encode(j) + b"\n" for j in res.judgments))
            if res.audits:
                audits.append(Path(tmp) / "audit.tsv")
                audits[0].write_text("provider\tqid\tsemantic_match\n" + "".join(
                    f"{p}\t{q}\t{str(m).lower()}\n" for p, q, m in res.audits))
            if judgments or audits:  # the spans' trajectories are appended only once what they carry is valid too
                res.events_written += import_into(log, [], judgments, audits, pending=res.pending).events_written
            else:
                res.events_written += append_chunked(log, res.pending)
            res.pending = []
    return res


def export_otlp(db: Path, *, url: str | None = None, file: Path | None = None,
                judge_run_id: str | None = None, batch: int = 50) -> int:
    """Every trajectory as a GenAI-convention trace (docs/how-to/otel.md "Out"): POSTed as protobuf to an OTLP/HTTP `url`
    (`…/v1/traces` added to a bare root), or written to `file` as OTLP JSON, one request per trajectory a line.
    Returns the number of traces."""
    import httpx

    from searchtrace.replay.interchange import encode_json, encode_protobuf, export_traces

    if url is not None:
        root = url.rstrip("/")
        url = root if root.endswith("/v1/traces") else f"{root}/v1/traces"
    n = 0
    with EventLog(db) as log:
        cur = log.cursor()
        try:
            views.ensure_views(cur)
            projections.catch_up(cur)
            traces = export_traces(log, cur, judge_run_id)
            if file is not None:
                try:
                    with file.open("wb") as fh:
                        for spans in traces:
                            fh.write(encode_json(spans, "searchtrace") + b"\n")
                            n += 1
                except OSError as exc:
                    raise BadInput(f"{file}: cannot write ({exc.strerror})") from None
                return n
            assert url is not None
            pending: list[Any] = []
            headers = {**otlp_headers(), "Content-Type": "application/x-protobuf"}
            with httpx.Client(timeout=30) as client:
                def send() -> None:
                    body = encode_protobuf([s for t in pending for s in t], "searchtrace")
                    try:
                        r = client.post(url, content=body, headers=headers)
                    except httpx.HTTPError as exc:
                        raise BadInput(f"--otlp {url}: {type(exc).__name__}: {exc}") from None
                    if not r.is_success:
                        raise BadInput(f"--otlp {url}: HTTP {r.status_code}: {r.text[:200]}")
                for spans in traces:
                    pending.append(spans)
                    n += 1
                    if len(pending) >= batch:
                        send()
                        pending = []
                if pending:
                    send()
        finally:
            cur.close()
    return n


def otlp_headers() -> dict[str, str]:
    """The exporter headers OpenTelemetry's own variables give (`OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else
    `OTEL_EXPORTER_OTLP_HEADERS`: `k=v,k2=v2`, values URL-encoded), so a backend's key (Langfuse's Basic auth) stays
    out of the command line; never echoed."""
    import os
    from urllib.parse import unquote

    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    out: dict[str, str] = {}
    for pair in raw.split(","):
        key, eq, value = pair.partition("=")
        if eq and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
        elif pair.strip():
            raise BadInput("OTEL_EXPORTER_OTLP_HEADERS: each header is key=value, separated by commas")
    return out
