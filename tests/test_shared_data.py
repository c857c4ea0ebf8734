"""The copies in tests/data must equal `../shared` wherever both exist, so a bare clone tests the same data."""

from __future__ import annotations

import pytest

from tests.shared_data import COPIES, SHARED


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no {SHARED} to compare the copies with")
@pytest.mark.parametrize("rel", ["research/fixtures", "research/fixtures2", "conformance/report-1"])
def test_copies_equal_shared(rel: str) -> None:
    live, copy = SHARED / rel, COPIES / rel
    names = sorted(str(p.relative_to(live)) for p in live.rglob("*") if p.is_file())  # fixtures2 has one folder per provider
    assert names == sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()), f"re-copy {live} to {copy}"
    for name in names:
        assert (live / name).read_bytes() == (copy / name).read_bytes(), f"{copy / name} differs from {live / name}"
