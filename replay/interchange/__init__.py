"""SPEC §9 interchange: traces.jsonl, judgments.jsonl and audit.tsv in (`import_files`) and out (`export_all`).

Modules: `formats` (the line formats as msgspec Structs), `common` (what the store already holds, shared
checks), `traces` / `runs` / `judgments` / `audit` (validate one file whole, then append its events), `importer` (every
file of one call validated before anything is written), `export` (the store back into the files + Parquet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.replay.interchange._export import export_all
    from searchtrace.replay.interchange._formats import JudgmentLine, TraceLine
    from searchtrace.replay.interchange._importer import ImportResult, import_files
    from searchtrace.replay.interchange._inspect_logs import log_files, log_traces


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "export_all": "searchtrace.replay.interchange._export",
    "JudgmentLine": "searchtrace.replay.interchange._formats",
    "TraceLine": "searchtrace.replay.interchange._formats",
    "ImportResult": "searchtrace.replay.interchange._importer",
    "import_files": "searchtrace.replay.interchange._importer",
    "log_files": "searchtrace.replay.interchange._inspect_logs",
    "log_traces": "searchtrace.replay.interchange._inspect_logs",
}

__all__ = [
    "ImportResult",
    "JudgmentLine",
    "TraceLine",
    "export_all",
    "import_files",
    "log_files",
    "log_traces",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
