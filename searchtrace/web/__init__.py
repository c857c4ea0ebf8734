"""The evidence explorer (`searchtrace view`): a local web app over the store, docs/how-to/explorer.md."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
