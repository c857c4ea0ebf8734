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


# what DuckDB may hold while a command reads a whole store (export, verify): the blocks it keeps after reading them
# are let go past it, and a sort spills to a temporary folder
WHOLE_STORE_MEMORY = "256MB"


def export(db: Path, out: Path, blobs: Path | None = None) -> dict[str, int]:
    """Writes traces.jsonl, run.jsonl, judgments.jsonl, audit.tsv, events.parquet and the notebook files
    trajectories.parquet, judge_items.parquet, verdicts.parquet (the typed v_* views) into `out`, and with `blobs`
    the raw bodies and pages the traces name; file name -> rows written."""
    import tempfile

    with EventLog(db, read_only=True) as log, tempfile.TemporaryDirectory(prefix="searchtrace-export-") as spill:
        cur = log.cursor()
        try:  # DuckDB's share: past it the sorts of the Parquet copies spill (docs/concepts/performance-memory.md)
            cur.execute(f"SET memory_limit = '{WHOLE_STORE_MEMORY}'")
            cur.execute("SET temp_directory = ?", [spill])
        finally:
            cur.close()
        return export_all(log, out, blobs)


def import_inspect(
    db: Path, logs: Sequence[Path], *, provider: str | None = None, run_id: str | None = None,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> ImportResult:
    """Inspect AI logs (files or folders) as trajectories: each log becomes trace lines (docs/reference/interchange.md), imported as strictly
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


class OtlpExport(msgspec.Struct, kw_only=True):
    """What `export --otlp` / `--otlp-file` sent: traces, Phoenix span annotations, and a note when the backend has
    no annotation route (the verdicts then travel as span events only)."""

    traces: int = 0
    annotations: int = 0
    note: str = ""


def export_otlp(db: Path, *, url: str | None = None, file: Path | None = None, judge_run_id: str | None = None,
                project: str | None = None, annotate: bool = True, batch: int = 50,
                wait_s: float = 60.0) -> OtlpExport:
    """Every trajectory as a GenAI-convention trace in the Phoenix project `project` (docs/how-to/otel.md "Out"):
    POSTed as protobuf to an OTLP/HTTP `url` (`…/v1/traces` added to a bare root), then, with `annotate`, each
    verdict as a Phoenix span annotation (`POST <root>/v1/span_annotations`, waiting up to `wait_s` for the spans
    to land); or written to `file`, protobuf (one ExportTraceServiceRequest) when its name ends in `.pb`, else OTLP
    JSON, one request per trajectory a line."""
    from searchtrace.replay.interchange import (
        OTLP_PROJECT,
        OTLP_SCOPE,
        encode_json,
        encode_protobuf,
        export_traces,
        phoenix_annotations,
    )

    project = project or OTLP_PROJECT
    out = OtlpExport()
    with EventLog(db) as log:
        cur = log.cursor()
        try:
            views.ensure_views(cur)
            projections.catch_up(cur)
            traces = export_traces(log, cur, judge_run_id, project=project)
            if file is not None:
                pb = file.name.endswith(".pb")
                try:
                    with file.open("wb") as fh:  # protobuf messages concatenated are one message, their spans joined
                        for spans in traces:
                            if pb:
                                fh.write(encode_protobuf(spans, OTLP_SCOPE))
                            else:
                                fh.write(encode_json(spans, OTLP_SCOPE) + b"\n")
                            out.traces += 1
                except OSError as exc:
                    raise BadInput(f"{file}: cannot write ({exc.strerror})") from None
                return out
            assert url is not None
            root = url.rstrip("/").removesuffix("/v1/traces")
            notes: list[dict[str, Any]] = []
            with _Poster(f"{root}/v1/traces") as post:
                pending: list[list[Any]] = []
                for spans in traces:
                    pending.append(spans)
                    out.traces += 1
                    if annotate:
                        notes += phoenix_annotations(spans)
                    if len(pending) >= batch:
                        post.protobuf(encode_protobuf([s for t in pending for s in t], OTLP_SCOPE))
                        pending = []
                if pending:
                    post.protobuf(encode_protobuf([s for t in pending for s in t], OTLP_SCOPE))
                if notes:
                    out.annotations, out.note = post.annotations(f"{root}/v1/span_annotations", notes, wait_s)
        finally:
            cur.close()
    return out


class _Poster:
    """One HTTP client for an OTLP export: the traces, then the Phoenix annotations; every failure one line that
    names the URL (never the headers, which may hold a backend's key)."""

    def __init__(self, url: str) -> None:
        import httpx

        self.url = url
        self.headers = otlp_headers()
        self.client = httpx.Client(timeout=30)

    def __enter__(self) -> _Poster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()

    def _post(self, url: str, what: str, **kw: Any) -> Any:
        import httpx

        try:
            return self.client.post(url, **kw)
        except httpx.HTTPError as exc:
            raise BadInput(f"--otlp {url}: {what}: {type(exc).__name__}: {exc}") from None

    def protobuf(self, body: bytes) -> None:
        r = self._post(self.url, "traces", content=body,
                       headers={**self.headers, "Content-Type": "application/x-protobuf"})
        if not r.is_success:
            raise BadInput(f"--otlp {self.url}: HTTP {r.status_code}: {r.text[:200]}")

    def annotations(self, url: str, notes: list[dict[str, Any]], wait_s: float, chunk: int = 1000) -> tuple[int, str]:
        """(annotations sent, a note when `url` is no Phoenix annotation route). Phoenix stores spans a moment
        after it accepts them, and refuses an annotation of a span it does not hold yet (404 naming the spans):
        that answer is retried until `wait_s` has passed."""
        import time

        deadline = time.monotonic() + wait_s
        sent = 0
        for i in range(0, len(notes), chunk):
            body = msgspec.json.encode({"data": notes[i:i + chunk]})
            pause = 0.05
            while True:
                r = self._post(url, "span annotations", content=body, params={"sync": "true"},
                               headers={**self.headers, "Content-Type": "application/json"})
                if r.is_success:
                    break
                waiting = r.status_code == 404 and "do not exist" in r.text
                if r.status_code in (404, 405) and not waiting:
                    return sent, (f"{url}: HTTP {r.status_code}, no Phoenix span-annotation route: the verdicts "
                                  "are in the span events only")
                if not waiting or time.monotonic() + pause > deadline:
                    raise BadInput(f"--otlp {url}: traces sent, span annotations refused: HTTP {r.status_code}: "
                                   f"{r.text[:200]}")
                time.sleep(pause)
                pause = min(2 * pause, 1.0)
            sent += len(notes[i:i + chunk])
        return sent, ""


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
