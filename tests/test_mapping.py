"""The searchtrace/<layer> links are the only mapping of the layer folders into the package: when they break, the
type check fails naming the missing modules instead of passing over a smaller tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("store", "adapters", "engine", "analytics", "replay", "benchmarks")


def test_the_layers_are_mapped_by_links_only() -> None:
    for layer in LAYERS:
        link = ROOT / "searchtrace" / layer
        assert link.is_symlink() and os.readlink(link) == f"../{layer}", layer
    assert "package-dir" not in (ROOT / "pyproject.toml").read_text()


def test_a_broken_mapping_fails_the_type_check_loudly(tmp_path: Path) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")  # the project's own mypy settings
    pkg = tmp_path / "searchtrace"
    shutil.copytree(ROOT / "searchtrace", pkg, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for layer in LAYERS:  # each link becomes a file holding its target, as a checkout without symlinks writes it
        target = os.readlink(pkg / layer)
        (pkg / layer).unlink()
        (pkg / layer).write_text(target)
    cache = tmp_path / ".mypy_cache"
    if (ROOT / ".mypy_cache").is_dir():  # `make typecheck`'s cache: third-party stubs need no new analysis
        shutil.copytree(ROOT / ".mypy_cache", cache)  # (mypy checks every entry against its source first)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "searchtrace", "--cache-dir", str(cache)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    for layer in LAYERS:
        needle = f'Cannot find implementation or library stub for module named "searchtrace.{layer}'
        assert needle in done.stdout, (layer, done.stdout[-2000:])
