"""The demo end to end (record, judge, report) and the fan-out benchmark's own arithmetic, kept small."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchtrace.benchmarks._fanout import max_in_window, rate_limit, trajectories
from searchtrace.engine import Stats, progress_display
from searchtrace.engine._progress import summary_line
from searchtrace.pipeline import demo

pytestmark = pytest.mark.anyio


async def test_demo_records_judges_reports_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    first = await demo(out / "demo.duckdb", out, 6, progress=False)
    assert first.record.trajectories == 18 and first.record.recorded == 18 and first.record.finished
    assert first.judge is not None and first.judge["items"] > 0 and first.judge["valid"] == first.judge["items"]
    assert first.report is not None and sorted(first.report.providers) == ["brave", "firecrawl", "tavily"]
    assert all(p.trajectories == 6 for p in first.report.providers.values())
    assert first.html is not None and Path(first.html).read_text().lstrip().lower().startswith("<!doctype html")
    again = await demo(out / "demo.duckdb", out, 6, progress=False)
    assert again.record.already == 18 and again.record.recorded == 0 and again.record.model_calls == 0
    assert again.judge is not None and again.judge["already"] == first.judge["items"] and again.judge["done"] == 0
    assert again.report == first.report


def test_max_in_window() -> None:
    assert max_in_window([]) == 0
    assert max_in_window([0.0, 0.5, 0.99, 1.0, 1.5]) == 3
    assert max_in_window([0.0, 1.0, 2.0]) == 1


async def test_fanout_bench_small(tmp_path: Path) -> None:
    t = await trajectories(30, tmp_path)
    assert t["trajectories"] == 30 and t["cpu_ms_per_trajectory_engine"] > 0 and t["events"] > 30 * 4
    r = await rate_limit(60, 100.0)
    assert r["errors"] == 0 and r["ok_burst"] and r["max_in_any_1s_window"] <= 110


def test_progress_is_quiet_off_a_terminal_for_short_work(capsys: pytest.CaptureFixture[str]) -> None:
    s = Stats(total=4, done=1, running=2, failed=1, model_calls=7)
    with progress_display(s) as tick:  # stderr is captured, not a TTY; less than the interval passes
        tick()
    assert capsys.readouterr().err == ""
    assert summary_line(s).startswith("done 1/4 · running 2 · failed 1 · model 7")


def test_progress_off_a_terminal_prints_periodic_lines(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHTRACE_PROGRESS_EVERY", "0")
    s = Stats(total=3)
    with progress_display(s, label="record") as tick:
        for _ in range(3):
            s.done += 1
            tick()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("searchtrace record: done 1/3")
    assert lines[2].startswith("searchtrace record: done 3/3") and lines[-1].startswith("searchtrace record: done 3/3")
    assert len(lines) == 4  # one per tick, then the closing line


def test_no_progress_means_silent_off_a_terminal(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHTRACE_PROGRESS_EVERY", "0")
    s = Stats(total=1)
    with progress_display(s, enabled=False) as tick:
        s.done = 1
        tick()
    assert capsys.readouterr().err == ""
