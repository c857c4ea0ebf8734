"""`searchtrace bench <name>`: each module here holds one benchmark's click `command`, measured as ratios."""

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
