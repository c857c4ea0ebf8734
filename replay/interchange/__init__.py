"""SPEC §9 interchange: traces.jsonl, judgments.jsonl and audit.tsv in (`import_files`) and out (`export_all`).

Modules: `formats` (the line formats as msgspec Structs), `common` (what the store already holds, shared
checks), `traces` / `judgments` / `audit` (validate one file whole, then append its events), `importer` (every
file of one call validated before anything is written), `export` (the store back into the files + Parquet).
"""

from searchtrace.replay.interchange.export import export_all
from searchtrace.replay.interchange.formats import JudgmentLine, TraceLine
from searchtrace.replay.interchange.importer import ImportResult, import_files

__all__ = ["ImportResult", "JudgmentLine", "TraceLine", "export_all", "import_files"]
