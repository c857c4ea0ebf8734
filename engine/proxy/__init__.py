"""The recording proxy (docs/how-to/own-agent.md): any agent's search, fetch and chat calls recorded as trajectories of one run."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
