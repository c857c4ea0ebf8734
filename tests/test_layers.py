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
    "_lazy": -1,  # searchtrace/_lazy.py: the lazy package surfaces every layer's __init__ uses; imports nothing of ours
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


SOURCES = ("*.py", "*.pyi")  # a package's face imports what its `__init__.pyi` lists (searchtrace/_lazy.py)


def _source_files() -> list[Path]:
    files = [p for folder in LAYER_FOLDERS for glob in SOURCES for p in (ROOT / folder).rglob(glob)]
    files += [p for glob in SOURCES for p in PACKAGE.glob(glob)]
    for sub in ("cli", "pipeline", "web"):
        if (PACKAGE / sub).is_dir():
            files += [p for glob in SOURCES for p in (PACKAGE / sub).rglob(glob)]
    return sorted(files)


def test_the_faces_stubs_are_read() -> None:
    """The import checks read each face's stub, whose names its `__init__.py` imports on first use."""
    stubs = {_module_of(p) for p in _source_files() if p.suffix == ".pyi"}
    assert {"searchtrace.store", "searchtrace.analytics", "searchtrace.cli", "searchtrace.engine.proxy"} <= stubs


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


# -- the module graph: no cycles, no tests/ in shipped code, the sandbox only where a command asks for it ----------

def _module_of(path: Path) -> str:
    """The dotted name a source file is imported as (`adapters/_http.py` -> searchtrace.adapters._http)."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    parts = list(rel[1:] if rel[0] == "searchtrace" else rel)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["searchtrace", *parts])


def _edges(path: Path, modules: set[str]) -> list[tuple[int, str]]:
    """The package modules a file imports, each named as precisely as the import allows (`from a import b`
    names the module a.b when b is one, else a), function-local imports and importlib strings included."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
            names = subs if len(subs) == len(node.names) else [node.module, *subs]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module", "find_spec",
        } and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names = [node.args[0].value]
        for name in names:
            while name and name not in modules and "." in name:  # `import a.b.c` of a name inside a module
                name = name.rsplit(".", 1)[0]
            if name in modules:
                out.append((node.lineno, name))
    return out


def _graph(files: list[Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}."""
    modules = {_module_of(p) for p in files}
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for path in files:  # a face's `__init__.py` and its `__init__.pyi` are one module
        module = _module_of(path)
        for line, target in _edges(path, modules):
            if target != module:
                graph[module].setdefault(target, line)
    return graph


def _groups(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted: modules on a common cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(sorted(g) for g in groups)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One closed import path through each group of modules that import each other."""
    return [_closed_path(graph, g) for g in _groups(graph)]


def _closed_path(graph: dict[str, dict[str, int]], group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, for the message (breadth first inside the group)."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                return [*paths[v], start]
            if w in members and w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return group


def _describe(graph: dict[str, dict[str, int]], group: list[str]) -> str:
    cycle = _closed_path(graph, group)
    path = " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False))
    return f"{path} -> {cycle[-1]}; the group: {', '.join(group)}"


def test_no_import_cycle_between_modules() -> None:
    graph = _graph(_source_files())
    assert [_describe(graph, g) for g in _groups(graph)] == []


def _tests_imports(files: list[Path]) -> list[str]:
    """Imports of the test tree, and edits of sys.path (the way a shipped module would reach it)."""
    bad = [f"{p.relative_to(ROOT)}:{line} imports {m}" for p in files for line, m in _imports(p)
           if m.split(".")[0] == "tests"]
    return bad + [f"{p.relative_to(ROOT)} edits sys.path" for p in files
                  if re.search(r"sys\.path\.(insert|append)", p.read_text(encoding="utf-8"))]


def test_shipped_code_never_imports_the_tests() -> None:
    assert _tests_imports(_source_files()) == []


SANDBOX = "searchtrace.adapters.sandbox"
# Who may import the sandbox world: the sandbox itself, the application modules that start it because a command
# asks for it (`--sandbox`, `--upstream sandbox`, `demo`, the `sandbox` command), and the benchmarks that drive it.
SANDBOX_ENTRY_POINTS = {
    "searchtrace.pipeline._recording",
    "searchtrace.pipeline._proxying",
    "searchtrace.pipeline._mcp",
    "searchtrace.pipeline._judging",
    "searchtrace.pipeline._probing",
    "searchtrace.pipeline._sandbox_demo",
    "searchtrace.cli._sandbox",
    "searchtrace.benchmarks._fanout",
    "searchtrace.benchmarks._judge",
    "searchtrace.benchmarks._http",
    "searchtrace.benchmarks._chaos",
    "searchtrace.benchmarks._proxy",
}


def _sandbox_imports(files: list[Path]) -> list[str]:
    """Imports of the sandbox world from modules that are neither part of it nor one of its entry points."""
    out = []
    for p in files:
        module = _module_of(p)
        if module == SANDBOX or module.startswith(SANDBOX + ".") or module in SANDBOX_ENTRY_POINTS:
            continue
        out += [f"{p.relative_to(ROOT)}:{line} imports {m}" for line, m in _imports(p)
                if m == SANDBOX or m.startswith(SANDBOX + ".")
                or (m == "searchtrace.adapters" and _names_sandbox(p, line))]
    return out


def _names_sandbox(path: Path, line: int) -> bool:
    """`from searchtrace.adapters import sandbox` (at `line`)."""
    return any(isinstance(n, ast.ImportFrom) and n.lineno == line and n.module == "searchtrace.adapters"
               and any(a.name == "sandbox" for a in n.names)
               for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_production_paths_never_import_the_sandbox() -> None:
    assert _sandbox_imports(_source_files()) == []
    modules = {_module_of(p) for p in _source_files()}
    assert SANDBOX_ENTRY_POINTS <= modules  # an entry point that was renamed or removed leaves the list


def test_the_graph_checks_see_a_violation(tmp_path: Path) -> None:
    """The checkers themselves: a cycle hidden in a function, an import of tests, a sandbox import from the engine."""
    pkg = tmp_path / "searchtrace"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "engine" / "a.py").write_text("import searchtrace.engine.b\n", encoding="utf-8")
    (pkg / "engine" / "b.py").write_text(
        "def late():\n    from searchtrace.engine import c\n", encoding="utf-8")
    (pkg / "engine" / "c.py").write_text(
        "import sys\nsys.path.insert(0, '..')\n"
        "def later():\n    from searchtrace.engine.a import x\n    from tests.reliability import catalogue\n"
        "    from searchtrace.adapters.sandbox._world import default_world\n", encoding="utf-8")
    files = sorted(pkg.rglob("*.py"))
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        graph = _graph(files)
        assert _cycles(graph) == [["searchtrace.engine.a", "searchtrace.engine.b", "searchtrace.engine.c",
                                   "searchtrace.engine.a"]]
        assert _tests_imports(files) == ["searchtrace/engine/c.py:5 imports tests.reliability",
                                         "searchtrace/engine/c.py edits sys.path"]
        assert _sandbox_imports(files) == ["searchtrace/engine/c.py:6 imports searchtrace.adapters.sandbox._world"]
    finally:
        ROOT = saved
