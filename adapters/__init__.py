"""Provider adapters: search (one module each in providers/, found by the registry), the Jina fetch backend,
OpenAI-compatible chat."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
