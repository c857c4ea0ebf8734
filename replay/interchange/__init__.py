"""docs/reference/interchange.md interchange: traces.jsonl, judgments.jsonl and audit.tsv in (`import_files`) and out (`export_all`).

Modules: `formats` (the line formats as msgspec Structs), `common` (what the store already holds, shared
checks), `traces` / `runs` / `judgments` / `audit` (validate one file whole, then append its events), `importer` (every
file of one call validated before anything is written), `export` (the store back into the files + Parquet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.replay.interchange._common import append_chunked
    from searchtrace.replay.interchange._export import export_all
    from searchtrace.replay.interchange._formats import JudgmentLine, TraceLine
    from searchtrace.replay.interchange._importer import ImportResult, import_files
    from searchtrace.replay.interchange._inspect_logs import log_files, log_traces
    from searchtrace.replay.interchange._otel import (
        Collector,
        OtelImport,
        ToolNames,
        default_search_tools,
        import_spans,
        map_spans,
    )
    from searchtrace.replay.interchange._otel_export import PROJECT as OTLP_PROJECT
    from searchtrace.replay.interchange._otel_export import SCOPE as OTLP_SCOPE
    from searchtrace.replay.interchange._otel_export import export_traces, phoenix_annotations
    from searchtrace.replay.interchange._otlp import Span, encode_json, encode_protobuf, requests_in
    from searchtrace.replay.interchange._otlp import decode as decode_spans
    from searchtrace.replay.interchange._otlp import encode_response as otlp_response


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "append_chunked": "searchtrace.replay.interchange._common",
    "export_all": "searchtrace.replay.interchange._export",
    "JudgmentLine": "searchtrace.replay.interchange._formats",
    "TraceLine": "searchtrace.replay.interchange._formats",
    "ImportResult": "searchtrace.replay.interchange._importer",
    "import_files": "searchtrace.replay.interchange._importer",
    "log_files": "searchtrace.replay.interchange._inspect_logs",
    "log_traces": "searchtrace.replay.interchange._inspect_logs",
    "Collector": "searchtrace.replay.interchange._otel",
    "OtelImport": "searchtrace.replay.interchange._otel",
    "ToolNames": "searchtrace.replay.interchange._otel",
    "default_search_tools": "searchtrace.replay.interchange._otel",
    "import_spans": "searchtrace.replay.interchange._otel",
    "map_spans": "searchtrace.replay.interchange._otel",
    "export_traces": "searchtrace.replay.interchange._otel_export",
    "phoenix_annotations": "searchtrace.replay.interchange._otel_export",
    "OTLP_PROJECT": "searchtrace.replay.interchange._otel_export:PROJECT",
    "OTLP_SCOPE": "searchtrace.replay.interchange._otel_export:SCOPE",
    "Span": "searchtrace.replay.interchange._otlp",
    "decode_spans": "searchtrace.replay.interchange._otlp:decode",
    "encode_json": "searchtrace.replay.interchange._otlp",
    "encode_protobuf": "searchtrace.replay.interchange._otlp",
    "otlp_response": "searchtrace.replay.interchange._otlp:encode_response",
    "requests_in": "searchtrace.replay.interchange._otlp",
}

__all__ = [
    "append_chunked",
    "Collector",
    "ImportResult",
    "JudgmentLine",
    "OTLP_PROJECT",
    "OTLP_SCOPE",
    "OtelImport",
    "Span",
    "ToolNames",
    "TraceLine",
    "decode_spans",
    "default_search_tools",
    "encode_json",
    "encode_protobuf",
    "export_all",
    "export_traces",
    "import_files",
    "import_spans",
    "map_spans",
    "log_files",
    "phoenix_annotations",
    "log_traces",
    "otlp_response",
    "requests_in",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
