"""Test inputs from the project's shared folder: `../shared` beside the repo, else the copies in tests/data.

CI and developers have `../shared`; a bare clone still tests the provider fixtures and the conformance data
against the copies (tests/test_shared_data.py fails when a copy drifts from `../shared`).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
COPIES = REPO / "tests" / "data"


def shared_path(rel: str) -> Path:
    """`../shared/<rel>` when present, else the copy under tests/data."""
    live = SHARED / rel
    return live if live.exists() else COPIES / rel
