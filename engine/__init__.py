"""The engine: the agent loop, the fan-out over (question, provider), run configs and recording. Public names:
`__init__.pyi`, each imported on first use (importing any engine module stays cheap for the command line)."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
