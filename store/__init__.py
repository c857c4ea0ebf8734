"""The DuckDB event log: append-only events, content-addressed blobs, hash chain, and the central PostgreSQL log
of docs/how-to/scale.md. Public names: `__init__.pyi`, each imported on first use (reaching `BadInput` from the
command line loads neither DuckDB nor Arrow)."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
