"""Package faces written once. A package's `__init__.pyi` is the one list of its public names, one a line:
`from searchtrace.pkg._mod import Name as Name`, or `Name = _mod.attr` (a name exported under another name) and
`Name = _mod` (a module exported whole) after `from searchtrace.pkg import _mod`. mypy reads that file as the
package; at run time `face` reads it too and imports each name on its first use (PEP 562), so importing a package
costs nothing until a name is used (command-line start-up). docs/concepts/architecture.md, "Surfaces"."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Face = tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]


def declared(stub: Path) -> dict[str, tuple[str, str]]:
    """Every public name `stub` declares -> (module, attribute); a stub that is not a plain list is refused by line."""
    tree = ast.parse(stub.read_text(encoding="utf-8"), filename=str(stub))
    public: dict[str, tuple[str, str]] = {}
    private: dict[str, tuple[str, str]] = {}  # `from package import _module`, and names imported under another name
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                bound = alias.asname or alias.name
                (public if alias.asname == alias.name else private)[bound] = (node.module, alias.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and (
            target := _alias(node.value, private)
        ):
            public[node.targets[0].id] = target
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # the docstring
            raise ImportError(f"{stub}:{node.lineno}: a face holds only `from searchtrace.x._m import Name as Name`, "
                              "`from searchtrace.x import _m` and `Name = _m.attr` or `Name = _m` lines")
    return {name: target for name, target in public.items() if not name.startswith("_")}


def _alias(value: ast.expr, private: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """Where `Name = value` points: a privately imported name (`_m`, a module exported whole) or an attribute of
    one (`_m.attr`, a name exported under another name)."""
    if isinstance(value, ast.Name) and value.id in private:
        return private[value.id]
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in private:
        return ".".join(private[value.value.id]), value.attr
    return None


def _resolve(module: str, attr: str) -> Any:
    """`from module import attr`: the attribute, else the submodule of that name (a module exported whole)."""
    imported = importlib.import_module(module)
    try:
        return getattr(imported, attr)
    except AttributeError:
        if not hasattr(imported, "__path__") or importlib.util.find_spec(f"{module}.{attr}") is None:
            raise
        return importlib.import_module(f"{module}.{attr}")


def face(package: str) -> Face:
    """The `__getattr__`, `__dir__` and `__all__` of `package`, from the `__init__.pyi` beside its `__init__.py`."""
    module = sys.modules[package]
    names = declared(Path(str(module.__file__)).with_suffix(".pyi"))

    def load(name: str) -> Any:
        if (target := names.get(name)) is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = _resolve(*target)
        vars(module)[name] = value  # later lookups are plain attribute reads
        return value

    def listing() -> list[str]:
        return sorted({*names, *(n for n in vars(module) if n.startswith("__"))})

    return load, listing, sorted(names)
