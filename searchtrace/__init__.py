"""searchtrace: record search agents as immutable events in DuckDB and measure their evidence by replay.

The layers and their order: docs/concepts/architecture.md, and `RANK` in tests/test_layers.py (the one place it is written).
"""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """`__version__` on first use: reading the installed metadata costs every command ~0.1 s at start-up."""
    if name != "__version__":
        raise AttributeError(f"module 'searchtrace' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("searchtrace")
    except PackageNotFoundError:  # an uninstalled checkout
        return "0+unknown"


def __dir__() -> list[str]:
    return sorted({*globals(), "__version__"})
