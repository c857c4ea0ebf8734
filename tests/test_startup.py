"""Command-line start-up: a command's module, and the package surfaces it imports, load neither DuckDB nor Arrow
until the command runs (each `searchtrace` process the tests and users start pays for what its import loads)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `report` reads its bootstrap defaults from the report module when it declares its options
LOADS_DUCKDB = {"report"}


def loaded(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in ('duckdb', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return set(out.stdout.split())


def test_command_modules_load_no_duckdb_or_arrow() -> None:
    commands = sorted(p.stem[1:] for p in (ROOT / "searchtrace" / "cli").glob("_*.py") if not p.stem.startswith("__"))
    assert len(commands) >= 15
    heavy = {name for name in commands if loaded(f"searchtrace.cli._{name}")}
    assert heavy == LOADS_DUCKDB


def test_the_package_surfaces_load_nothing_heavy() -> None:
    assert loaded("searchtrace.cli") == set()
    assert loaded("searchtrace.store") == set()
    assert loaded("searchtrace.pipeline") == set()
