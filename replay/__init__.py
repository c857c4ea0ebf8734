"""Judge runs, deterministic re-execution, and import/export of recorded traces (public surface, loaded lazily)."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
