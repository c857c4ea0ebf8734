"""Conformance: the shared report-1 data imported and reported must equal the expected files (rel tol 1e-9)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.analytics.analytics_fixture import report_json
from tests.builders import run_cli
from tests.shared_data import shared_path

DATA = shared_path("conformance/report-1")  # ../shared, else the copy in tests/data


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Every place where `got` differs from `want` (keys beyond `want`'s are free)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path}: expected an object, got {got!r}"]
        out: list[str] = []
        for key, value in want.items():
            if key not in got:
                out.append(f"{path}/{key}: missing")
            else:
                out.extend(differences(got[key], value, f"{path}/{key}"))
        return out
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        return [] if math.isclose(got, want, rel_tol=1e-9) else [f"{path}: {got!r} != {want!r}"]
    if type(got) is not type(want) or got != want:
        return [f"{path}: {got!r} != {want!r}"]
    return []


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from searchtrace.cli import main

    path = tmp_path_factory.mktemp("conformance") / "t.duckdb"
    try:
        main([
            "import", "--db", str(path), str(DATA / "traces.jsonl"),
            "--judgments", str(DATA / "judgments.jsonl"), "--audit", str(DATA / "audit.tsv"),
        ])
    except SystemExit as exc:
        assert not exc.code
    return path


@pytest.mark.parametrize("run", ["j1", "j2"])
def test_report_equals_expected(db: Path, run: str) -> None:
    text, got = report_json(db, "--judge-run-id", run)
    want = json.loads((DATA / f"expected-report-{run}.json").read_text(encoding="utf-8"))
    assert differences(got, want) == []
    # same layout as the expected files: keys sorted, indent 1, one trailing newline
    assert text == json.dumps(got, indent=1, sort_keys=True) + "\n"


def test_differences_catches_a_change() -> None:
    want = {"a": {"b": 0.5, "c": 3, "d": None}}
    assert differences({"a": {"b": 0.5 * (1 + 1e-12), "c": 3, "d": None, "extra": 1}}, want) == []
    assert differences({"a": {"b": 0.5001, "c": 3, "d": None}}, want) == ["/a/b: 0.5001 != 0.5"]
    assert differences({"a": {"b": 0.5, "c": 3, "d": 0.0}}, want) == ["/a/d: 0.0 != None"]
    assert differences({"a": {"b": 0.5, "d": None}}, want) == ["/a/c: missing"]


def test_reimport_changes_nothing(db: Path) -> None:
    before, _ = report_json(db, "--judge-run-id", "j1")
    code, out, err = run_cli(
        "import", "--db", str(db), str(DATA / "traces.jsonl"),
        "--judgments", str(DATA / "judgments.jsonl"), "--audit", str(DATA / "audit.tsv"),
    )
    assert code == 0, err
    assert "0 new trajectories" in out and " 0 new events" in out
    after, _ = report_json(db, "--judge-run-id", "j1")
    assert after == before
