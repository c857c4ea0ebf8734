"""The pinned development set (constraints-dev.txt) still satisfies every range pyproject.toml asks for: a range
raised without regenerating the pins would make `make test`'s install fail on a fresh machine."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
FREEZE_OMITS = frozenset({"pip", "setuptools", "wheel"})  # `pip freeze` never lists these: the venv brings them


def pins() -> dict[str, str]:
    """Name (canonical) -> pinned version of each `name==version` line."""
    found: dict[str, str] = {}
    for line in (ROOT / "constraints-dev.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints-dev.txt: {line!r} is not name==version"
            found[canonicalize_name(name.split("[", 1)[0])] = version.strip()
    return found


def test_every_pinned_version_meets_the_project_ranges() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *(r for name in ("dev", "postgres", "ray") for r in extras[name])]
    pinned = pins()
    missing, outside = [], []
    for text in wanted:
        req = Requirement(text)
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            if canonicalize_name(req.name) not in FREEZE_OMITS:
                missing.append(req.name)
        elif not req.specifier.contains(version, prereleases=True):
            outside.append(f"{req.name}=={version} (pyproject asks {req.specifier})")
    assert not missing, f"not pinned in constraints-dev.txt (regenerate it with pip freeze): {missing}"
    assert not outside, f"pins outside pyproject's ranges (regenerate constraints-dev.txt): {outside}"


def test_the_checker_sees_a_pin_outside_its_range() -> None:
    assert not Requirement("duckdb>=1.1").specifier.contains("1.0.0")
    assert Requirement("duckdb>=1.1").specifier.contains(pins()["duckdb"])
