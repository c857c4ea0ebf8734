"""searchtrace: record search agents as immutable events in DuckDB and measure their evidence by replay.

The layers, lowest first (a layer imports only those below it; tests/test_layers.py enforces it):
`searchtrace.store` ← `searchtrace.adapters` ← `searchtrace.engine` ← `searchtrace.replay` /
`searchtrace.analytics` ← `searchtrace.pipeline` and `searchtrace.benchmarks` ← `searchtrace.cli`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("searchtrace")
except PackageNotFoundError:  # an uninstalled checkout
    __version__ = "0+unknown"

__all__ = ["__version__"]
