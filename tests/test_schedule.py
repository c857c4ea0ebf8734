"""The order `make test` hands test modules to its workers names only modules that exist, each once."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_FIRST

ROOT = Path(__file__).resolve().parent.parent


def test_the_long_first_list_names_existing_test_modules_once() -> None:
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)
    missing = [m for m in LONG_FIRST if not (ROOT / m).is_file() or not Path(m).name.startswith("test_")]
    assert missing == [], f"tests/conftest.py LONG_FIRST names modules that are not there: {missing}"
