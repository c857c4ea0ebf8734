"""A search provider has one home, its module in adapters/providers/: no other shipped file names two providers
(as string literals, or a literal listing them), so nothing else keeps a list the registry would have to match."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from searchtrace.adapters import search_provider_names

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
    assert {"engine/_config.py", "adapters/_registry.py", "adapters/sandbox/_app.py", "searchtrace/cli/_sandbox.py",
            "benchmarks/_chaos.py", "engine/proxy/_routes.py"} <= files
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
