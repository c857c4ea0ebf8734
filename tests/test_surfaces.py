"""Private is private: a package's `__init__` is its surface (its names listed once, in `__init__.pyi`), and shipped code never reaches into another
package's `_private` modules (its own privates, its parents' and its subpackages' facades are fine)."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "searchtrace"


def _shipped() -> list[tuple[str, Path]]:
    """Every shipped source file with the module it is imported as, a face's `__init__.pyi` (the names its
    `__init__.py` imports on first use) beside its `__init__.py`; the layer folders are reached through searchtrace/."""
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(PACKAGE, followlinks=True):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if (here / d / "__init__.py").exists())
        package = ".".join(("searchtrace", *here.relative_to(PACKAGE).parts))
        for name in sorted(filenames):
            stem, _, suffix = name.partition(".")
            if suffix in ("py", "pyi"):
                found.append((package if stem == "__init__" else f"{package}.{stem}", here / name))
    return found


def _importer_package(module: str, path: Path) -> str:
    return module if path.stem == "__init__" else module.rpartition(".")[0]


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
    assert [v for module, path in _shipped() for v in violations(path, module)] == []


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
    return sorted(m for m, p in _shipped() if p.name == "__init__.py")


def _faces() -> list[str]:
    return sorted(m for m, p in _shipped() if p.name == "__init__.pyi")


def _listed(stub: Path) -> dict[str, ast.stmt]:
    """The public names a face's stub lists (read here on its own, not by the code under test): `from m import
    Name as Name`, and `Name = _m.attr` / `Name = _m` after a private `from package import _m`."""
    listed: dict[str, ast.stmt] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and all(a.asname in (None, a.name) for a in node.names), ast.unparse(node)
            assert all(a.asname or a.name.startswith("_") for a in node.names), ast.unparse(node)
            listed |= {a.name: node for a in node.names if a.asname == a.name}
        elif isinstance(node, ast.Assign):
            assert isinstance(node.value, ast.Attribute | ast.Name), ast.unparse(node)
            listed |= {t.id: node for t in node.targets if isinstance(t, ast.Name)}
    return listed


def test_the_packages_are_faces() -> None:
    """Every package but the plugin folders has a face, and `searchtrace` itself only `__version__`."""
    plain = sorted(set(_packages()) - set(_faces()))
    assert plain == ["searchtrace", "searchtrace.adapters.providers", "searchtrace.analytics.examples"]
    assert len(_faces()) >= 13
    root = importlib.import_module("searchtrace")
    assert isinstance(root.__version__, str) and "__version__" in dir(root)
    assert [n for n in dir(root) if not n.startswith("_") and not _subpackage(root, n)] == []


def _subpackage(package: ModuleType, name: str) -> bool:
    """`name` on `package` is its subpackage (an attribute Python sets once the subpackage is imported)."""
    return getattr(vars(package).get(name), "__name__", "") == f"{package.__name__}.{name}"


@pytest.mark.parametrize("package", _faces())
def test_a_face_is_exactly_its_list(package: str) -> None:
    """The stub is the one list: `__all__` and `dir()` are its names, each resolves to what the stub imports, and
    nothing else public is reachable on the face but its subpackages; the `__init__.py` defines nothing itself."""
    module = importlib.import_module(package)
    init = Path(str(module.__file__))
    listed = _listed(init.with_suffix(".pyi"))
    code = ast.parse(init.read_text(encoding="utf-8")).body
    assert [ast.unparse(n) for n in code[1:]] == ["from searchtrace._lazy import face as _face",
                                                  "__getattr__, __dir__, __all__ = _face(__name__)"]
    assert module.__all__ == sorted(listed)
    assert [n for n in dir(module) if not n.startswith("_")] == sorted(listed)
    for name, node in listed.items():
        value = getattr(module, name)
        if isinstance(node, ast.ImportFrom):
            assert node.module and value is getattr(importlib.import_module(node.module), name)
    public = {n for n in vars(module) if not n.startswith("_") and not _subpackage(module, n)}
    assert public == set(listed)
    with pytest.raises(AttributeError, match="has no attribute 'not_listed'"):
        module.not_listed  # noqa: B018


def test_a_name_listed_under_another_name_resolves() -> None:
    """`Name = _m.attr` and `Name = _m` lines: the attribute, and the module exported whole."""
    from searchtrace import analytics, store
    from searchtrace.analytics import _html
    from searchtrace.store import _blobs, _inputs, _ship

    assert store.INPUT_LIMITS is _inputs.LIMITS and store.SHIP_BATCH is _ship.BATCH
    assert store.blobs is _blobs and analytics.html is _html


def test_a_stub_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    """A face's stub holds imports and aliases only: a definition in it would be a second home, read by mypy alone."""
    from searchtrace._lazy import declared

    stub = tmp_path / "__init__.pyi"
    stub.write_text('"""doc"""\nfrom searchtrace.store._errors import BadInput as BadInput\n'
                    "from searchtrace.store import _inputs\nLIMITS = _inputs.LIMITS\n", encoding="utf-8")
    assert declared(stub) == {"BadInput": ("searchtrace.store._errors", "BadInput"),
                              "LIMITS": ("searchtrace.store._inputs", "LIMITS")}
    stub.write_text("from searchtrace.store._errors import BadInput as BadInput\ndef extra() -> int: ...\n",
                    encoding="utf-8")
    with pytest.raises(ImportError, match=r"__init__.pyi:2: a face holds only"):
        declared(stub)


def test_a_facade_imports_nothing_until_used() -> None:
    """`from searchtrace.store import BadInput` must not pull in duckdb or pyarrow (command-line start-up)."""
    code = ("import sys; from searchtrace.store import BadInput; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'duckdb', 'pyarrow'} "
            "or m.startswith('searchtrace.store._') and m != 'searchtrace.store._errors'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
