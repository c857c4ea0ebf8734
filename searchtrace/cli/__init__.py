"""The `searchtrace` command: a click group whose subcommands load lazily from their own modules."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
