"""Docs and the shipped code's docstrings and comments cite only files that exist: a renamed module must not leave
a stale path behind (tests are left out: they plant files that do not exist on purpose)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a path with at least one folder, ending in a file type the repository holds
PATH = re.compile(r"(?<![\w./<{-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|toml|sql))\b")
# where a cited path may live besides the repository root: the package view, and the provider research notes
# (`research/…` is ../shared/research in a checkout beside shared/, tests/data/research in a bare clone)
BASES = (ROOT, ROOT / "searchtrace", ROOT / "tests" / "data", ROOT.parent / "shared")


def cited_paths(text: str) -> list[str]:
    return [m.group(1) for m in PATH.finditer(text)]


def missing(path: Path, text: str) -> list[str]:
    return [p for p in cited_paths(text)
            if not any((base / p).exists() for base in (*BASES, path.parent)) and not _unshipped_note(p)]


def _unshipped_note(cited: str) -> bool:
    """The research notes are not copied into a bare clone (only their fixtures are): nothing to check there."""
    return cited.startswith("research/") and not (ROOT.parent / "shared").is_dir()


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.py", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / f for f in out.stdout.split() if not f.startswith("tests/")]


def test_every_cited_path_exists() -> None:
    files = tracked()
    assert len(files) > 150
    stale = {str(f.relative_to(ROOT)): bad for f in files
             if (bad := missing(f, f.read_text(encoding="utf-8")))}
    assert stale == {}


def test_the_check_sees_a_stale_path(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    text = "see `store/_log.py` and store/gone.py, and https://example.org/a/b.json, and `tests/test_layers.py`"
    assert missing(doc, text) == ["store/gone.py"]
