"""A search provider has one home, its module in adapters/providers/: no other shipped file names two providers
(as string literals, or a literal listing them), so nothing else keeps a list the registry would have to match."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from searchtrace.adapters.registry import search_provider_names

ROOT = Path(__file__).resolve().parents[1]
LAYER_FOLDERS = ("store", "adapters", "engine", "analytics", "replay", "benchmarks")
PROVIDERS_DIR = ROOT / "adapters" / "providers"


def shipped_files() -> list[Path]:
    """Every .py of the package: the layer folders and searchtrace/ itself (its layer symlinks skipped)."""
    files = [p for folder in LAYER_FOLDERS for p in (ROOT / folder).rglob("*.py")]
    for entry in (ROOT / "searchtrace").iterdir():
        if entry.is_symlink():
            continue
        files += [entry] if entry.suffix == ".py" else list(entry.rglob("*.py")) if entry.is_dir() else []
    return sorted(p for p in files if PROVIDERS_DIR not in p.parents)


def provider_mentions(source: str, names: tuple[str, ...]) -> list[str]:
    """Why `source` lists providers: two or more distinct names as whole string literals, or one literal (text,
    docstring, f-string part) naming two or more; [] when it names at most one."""
    words = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w-])")
    exact: set[str] = set()
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in names:
                exact.add(node.value)
            elif len(found := set(words.findall(node.value))) >= 2:
                problems.append(f"line {node.lineno}: a text naming {', '.join(sorted(found))}")
    if len(exact) >= 2:
        problems.append(f"string literals {', '.join(sorted(exact))}")
    return problems


def test_no_shipped_file_outside_the_provider_modules_lists_providers() -> None:
    names = search_provider_names()
    assert len(names) >= 11
    bad = {str(p.relative_to(ROOT)): why for p in shipped_files()
           if (why := provider_mentions(p.read_text(encoding="utf-8"), names))}
    assert bad == {}


def test_the_scan_covers_the_package() -> None:
    files = {str(p.relative_to(ROOT)) for p in shipped_files()}
    assert {"engine/config.py", "adapters/registry.py", "adapters/sandbox/app.py", "searchtrace/cli/sandbox.py",
            "benchmarks/chaos.py", "engine/proxy/routes.py"} <= files
    assert not any(f.startswith("adapters/providers/") for f in files)


def test_a_planted_listing_is_caught() -> None:
    names = search_provider_names()
    a, b = names[0], names[1]
    assert provider_mentions(f"KINDS = ({a!r}, {b!r})\n", names) == [f"string literals {', '.join(sorted((a, b)))}"]
    assert provider_mentions(f"ROUTES = {{{a!r}: 1}}\nX = {b!r} if y else None\n", names)
    assert provider_mentions(f'"""The personas: {a}, {b} and more."""\n', names)
    assert provider_mentions(f'help = f"one of {a} or {b}: {{x}}"\n', names)
    # one provider named (a default, an example) is fine; so is a word that merely contains a name
    assert provider_mentions(f"DEFAULT = {a!r}\nURL = '/{a}/search'\n", names) == []
    assert provider_mentions(f"X = 'unparallelled {a}x'\n", names) == []


def test_provider_modules_never_import_the_sandbox() -> None:
    """Production code: what a provider's sandbox route needs comes in through adapters.persona (Shelf)."""
    files = [*PROVIDERS_DIR.glob("*.py"), *(ROOT / "adapters" / n for n in ("persona.py", "search_base.py", "registry.py"))]
    assert len(files) >= 14
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(m.startswith("searchtrace.adapters.sandbox") for m in modules), (path.name, modules)


def test_the_sandbox_modules_import_one_way() -> None:
    """No cycle among the sandbox's modules (the app imports its routes; routes share state.py, never the app)."""
    folder = ROOT / "adapters" / "sandbox"
    pkg = "searchtrace.adapters.sandbox"
    names = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == pkg:
                edges |= {a.name if a.name in names else "__init__" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(pkg + "."):
                edges.add((node.module or "").split(".")[3])
        graph[path.stem] = edges - {path.stem} if path.stem != "__init__" else set()  # the facade only re-exports

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, set()))

    assert {"app", "state", "chat_route", "fetch_route", "serve"} <= set(graph)
    assert [m for m in graph if reaches(m, m, set())] == []
