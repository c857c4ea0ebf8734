"""Private is private: a package's `__init__` is its surface, and shipped code never reaches into another
package's `_private` modules (its own privates, its parents' and its subpackages' facades are fine)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "searchtrace"


def _shipped() -> dict[str, Path]:
    """Every shipped module by its import name; the layer folders are reached through searchtrace/."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(PACKAGE, followlinks=True):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if (here / d / "__init__.py").exists())
        package = ".".join(("searchtrace", *here.relative_to(PACKAGE).parts))
        for name in sorted(filenames):
            if name.endswith(".py"):
                found[package if name == "__init__.py" else f"{package}.{name[:-3]}"] = here / name
    return found


def _importer_package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imported(tree: ast.Module) -> list[tuple[int, str]]:
    """Every absolute module (or module attribute) a file imports, function-local and importlib ones too."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module", "find_spec", "importorskip",
        } and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.append((node.lineno, node.args[0].value.split(":")[0]))
    return out


def violations(path: Path, module: str) -> list[str]:
    """Imports in `path` (the shipped module `module`) of a `_private` module of a package it is not inside."""
    importer = _importer_package(module, path)
    bad: list[str] = []
    for line, name in _imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        parts = name.split(".")
        if parts[0] != "searchtrace":
            continue
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:i])
                if importer != owner and not importer.startswith(owner + "."):
                    bad.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line} "
                               f"({importer}) imports {'.'.join(parts[: i + 1])}")
                break
    return sorted(set(bad))


def test_shipped_code_imports_other_packages_through_their_facades() -> None:
    assert [v for module, path in _shipped().items() for v in violations(path, module)] == []


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """A reach into another package's private module is found, as an import, a from-import or a string."""
    src = tmp_path / "m.py"
    src.write_text("from searchtrace.store._log import EventLog\n"
                   "def f():\n    from searchtrace.store import _events\n"
                   "import importlib\nimportlib.import_module('searchtrace.analytics._html')\n"
                   "import searchtrace.replay._judge as j\n"
                   "from searchtrace.engine._agent import Agent\n"  # its own package: fine
                   "from searchtrace.engine.proxy import serve\n"  # a subpackage's facade: fine
                   "from searchtrace.store import EventLog\n", encoding="utf-8")
    found = sorted(v.split(" imports ")[1] for v in violations(src, "searchtrace.engine.m"))
    assert found == ["searchtrace.analytics._html", "searchtrace.replay._judge", "searchtrace.store._events",
                     "searchtrace.store._log"]
    # a subpackage may use its parents' privates
    child = tmp_path / "child.py"
    child.write_text("from searchtrace.store._log import EventLog\n", encoding="utf-8")
    assert violations(child, "searchtrace.store.sub.child") == []
    assert violations(child, "searchtrace.storage.child") != []


def _packages() -> list[str]:
    return sorted(m for m, p in _shipped().items() if p.name == "__init__.py")


@pytest.mark.parametrize("package", _packages())
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert missing == []
    assert set(getattr(module, "__all__", [])) <= set(dir(module))


def test_a_facade_imports_nothing_until_used() -> None:
    """`from searchtrace.store import BadInput` must not pull in duckdb or pyarrow (command-line start-up)."""
    code = ("import sys; from searchtrace.store import BadInput; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'duckdb', 'pyarrow'} "
            "or m.startswith('searchtrace.store._') and m != 'searchtrace.store._errors'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
