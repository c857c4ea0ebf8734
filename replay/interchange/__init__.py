"""docs/reference/interchange.md interchange: traces.jsonl, judgments.jsonl and audit.tsv in (`import_files`) and out (`export_all`).

Modules: `formats` (the line formats as msgspec Structs), `common` (what the store already holds, shared
checks), `traces` / `runs` / `judgments` / `audit` (validate one file whole, then append its events), `importer` (every
file of one call validated before anything is written), `export` (the store back into the files + Parquet).
"""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
