"""The application layer: record → judge → grade → report, and demo, replay, import/export, audit, probes, sql, verify,
merge.

Typed functions over a database path that return plain msgspec Structs (or the lower layers' results). The CLI
parses arguments and prints what they return; tests and benchmarks call them directly. One module per area.
"""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
