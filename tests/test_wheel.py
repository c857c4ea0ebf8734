"""A fresh install gets one import package: the wheel holds `searchtrace/<layer>/...` and no top-level layer folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("store", "adapters", "engine", "analytics", "replay", "benchmarks")


def test_the_wheel_installs_only_the_searchtrace_package(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy, so setuptools' build/ and egg-info land in tmp, not in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("searchtrace", *LAYERS):
        shutil.copytree(ROOT / folder, src / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # the venv's own setuptools, no index: the build needs no network
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(tmp_path / "dist"), "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("searchtrace-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert not tops & set(LAYERS)  # no top-level engine/, store/, ... in site-packages
    assert {t for t in tops if not t.endswith(".dist-info")} == {"searchtrace"}
    for layer in (*LAYERS, "cli", "pipeline"):
        assert f"searchtrace/{layer}/__init__.py" in names, layer
    assert {"searchtrace/store/_schema.py", "searchtrace/py.typed", "searchtrace/adapters/sandbox/_app.py",
            "searchtrace/analytics/examples/discovered_share.py"} <= set(names)
    # each face's list of names (searchtrace/_lazy.py): without it the installed package cannot import
    stubs = {p.relative_to(ROOT).as_posix() for folder in ("searchtrace", *LAYERS)
             for p in (ROOT / folder).rglob("__init__.pyi")}  # rglob does not follow the searchtrace/<layer> links
    stubs = {s if s.startswith("searchtrace/") else f"searchtrace/{s}" for s in stubs}
    assert len(stubs) >= 13 and {"searchtrace/store/__init__.pyi", "searchtrace/cli/__init__.pyi"} <= stubs
    assert stubs <= set(names)
