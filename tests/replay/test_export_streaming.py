"""`export` reads a store a chunk of trajectories at a time (docs/concepts/performance-memory.md): the files are the
same whatever the chunk, and `bench replay --memory` measures each command's own peak memory, not its parent's."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchtrace.benchmarks._replay import Launcher
from searchtrace.replay.interchange import _export
from tests.analytics.analytics_fixture import import_fixture
from tests.builders import run_cli

FILES = ("traces.jsonl", "judgments.jsonl", "run.jsonl", "audit.tsv")


def test_the_files_do_not_depend_on_the_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "a.duckdb"
    import_fixture(db, tmp_path / "in")
    code, _, err = run_cli("export", "--db", str(db), "--out", str(tmp_path / "whole"))
    assert code == 0, err
    monkeypatch.setattr(_export, "_CHUNK", 2)  # five trajectories: three chunks, one of them short
    code, _, err = run_cli("export", "--db", str(db), "--out", str(tmp_path / "chunked"))
    assert code == 0, err
    for name in FILES:
        assert (tmp_path / "chunked" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert (tmp_path / "whole" / "traces.jsonl").read_text().count("\n") == 5
    assert (tmp_path / "whole" / "judgments.jsonl").read_text().strip()


def test_a_commands_peak_memory_is_its_own(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    import_fixture(db, tmp_path / "in")
    launcher = Launcher()  # started while this process is small
    try:
        ballast = bytearray(600 * 1024 * 1024)  # this process grows by 600 MB, resident
        ballast[::4096] = b"x" * len(range(0, len(ballast), 4096))
        got = launcher.run(["verify", "--db", str(db)])
    finally:
        launcher.close()
    assert 0 < got["peak_rss_mb"] < 600  # a child of this process itself would report at least 600
    assert got["s"] > 0
