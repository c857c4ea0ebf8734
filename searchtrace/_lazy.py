"""Lazy package surfaces (PEP 562): an `__init__` names its exports and each is imported on its first use, so
importing a package costs nothing until a name is used (command-line start-up)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, names: Mapping[str, str], modules: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: `names` maps an export to its module ("module:attr" when it
    is exported under another name), `modules` a name to a module exported whole."""
    whole = dict(modules or {})

    def load(name: str) -> Any:
        if name in whole:
            value = importlib.import_module(whole[name])
        elif (target := names.get(name)) is not None:
            module, _, attr = target.partition(":")
            value = getattr(importlib.import_module(module), attr or name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        vars(sys.modules[package])[name] = value  # later lookups are plain attribute reads
        return value

    def listing() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names) | set(whole))

    return load, listing
