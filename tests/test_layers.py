"""The import contract: data flows one way, and a layer never imports one above it (any import, lazy ones too)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "searchtrace"

# Lowest first. A module may import its own layer and any layer with a smaller rank.
RANK: dict[str, int] = {
    "store": 0,
    "adapters": 1,
    "engine": 2,
    "analytics": 3,
    "replay": 4,
    "pipeline": 5,
    "benchmarks": 6,
    "web": 6,
    "cli": 7,
}
LAYER_FOLDERS = ("store", "adapters", "engine", "analytics", "replay", "benchmarks")
OLD_TOP_LEVEL = {"engine", "adapters", "store", "replay", "analytics", "benchmarks"}


def _layer_of_file(path: Path) -> str | None:
    rel = path.relative_to(ROOT).parts
    if rel[0] in LAYER_FOLDERS:
        return rel[0]
    if rel[0] == "searchtrace":
        if len(rel) == 2:
            stem = Path(rel[1]).stem
            return stem if stem in RANK else None
        return rel[1] if rel[1] in RANK else None
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every absolute module name the file imports, wherever the import stands (function-local too)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
            if node.module == "searchtrace":
                out.extend((node.lineno, f"searchtrace.{a.name}") for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module", "importorskip", "find_spec",
        } and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.append((node.lineno, node.args[0].value))
    return out


def _target_layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "searchtrace" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in RANK else None


def _source_files() -> list[Path]:
    files = [p for folder in LAYER_FOLDERS for p in (ROOT / folder).rglob("*.py")]
    files += [p for p in PACKAGE.glob("*.py")]
    for sub in ("cli", "pipeline", "web"):
        if (PACKAGE / sub).is_dir():
            files += [p for p in (PACKAGE / sub).rglob("*.py")]
    return sorted(files)


def test_the_layer_table_covers_every_module() -> None:
    unplaced = [str(p.relative_to(ROOT)) for p in _source_files() if _layer_of_file(p) is None
                and p.name != "__init__.py"]
    assert unplaced == []


def test_no_layer_imports_a_layer_above_it() -> None:
    violations = []
    for path in _source_files():
        layer = _layer_of_file(path)
        if layer is None:
            continue
        for line, module in _imports(path):
            target = _target_layer(module)
            if target is not None and RANK[target] > RANK[layer]:
                violations.append(f"{path.relative_to(ROOT)}:{line} ({layer}) imports {module} ({target})")
    assert violations == []


@pytest.mark.parametrize("where", ["package", "tests"])
def test_nothing_imports_the_folders_as_top_level_packages(where: str) -> None:
    files = _source_files() if where == "package" else sorted((ROOT / "tests").rglob("*.py"))
    bad = [f"{p.relative_to(ROOT)}:{line} imports {m}" for p in files for line, m in _imports(p)
           if m.split(".")[0] in OLD_TOP_LEVEL]
    assert bad == []


def test_no_code_in_strings_imports_the_old_top_level_packages() -> None:
    """Child processes run code from strings (`python -c`); it must import the package too, not a second copy."""
    pattern = re.compile(r"[\"'](?:from|import) (?:engine|adapters|store|replay|analytics|benchmarks)(?:\.| import)")
    files = _source_files() + sorted((ROOT / "tests").rglob("*.py"))
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in files
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert bad == []


def test_the_contract_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: an upward import, a lazy one and an importlib string are all found."""
    src = tmp_path / "m.py"
    src.write_text("import searchtrace.cli\n"
                   "def f():\n    from searchtrace.replay import judge\n"
                   "import importlib\nimportlib.import_module('searchtrace.pipeline')\n", encoding="utf-8")
    targets = sorted(str(_target_layer(m)) for _, m in _imports(src))
    assert targets == ["None", "cli", "pipeline", "replay"]


def test_layer_folders_are_the_package_subpackages() -> None:
    for folder in LAYER_FOLDERS:
        link = PACKAGE / folder
        assert link.resolve() == (ROOT / folder).resolve(), f"searchtrace/{folder} must point at ./{folder}"
