"""searchtrace: record search agents as immutable events in DuckDB and measure their evidence by replay.

The layers and their order: docs/architecture.md, and `RANK` in tests/test_layers.py (the one place it is written).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("searchtrace")
except PackageNotFoundError:  # an uninstalled checkout
    __version__ = "0+unknown"

__all__ = ["__version__"]
