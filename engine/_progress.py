"""Progress of a long run: a live bar on a terminal (rich), a periodic one-line summary on stderr otherwise."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from searchtrace.engine._agent import Stats


def summary_line(s: Stats) -> str:
    """The counters in one line: trajectories done / running / failed, calls, retries, tokens."""
    return (
        f"done {s.done}/{s.total} · running {s.running} · failed {s.failed} · "
        f"model {s.model_calls} · search {s.search_calls} · fetch {s.fetch_calls} · retries {s.retries} · "
        f"tokens {s.input_tokens:,} in / {s.output_tokens:,} out"
    )


class _Counters(ProgressColumn):
    """Re-reads the live counters on every refresh (not only when a trajectory ends)."""

    def __init__(self, stats: Stats) -> None:
        super().__init__()
        self.stats = stats

    def render(self, task: Task) -> Text:
        s = self.stats
        return Text(
            f"running {s.running} failed {s.failed} · model/search/fetch {s.model_calls}/{s.search_calls}/{s.fetch_calls}"
            f" · retries {s.retries} · tokens {_k(s.input_tokens)}/{_k(s.output_tokens)}"
        )


def _k(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e4 else str(n)


LINE_EVERY_S = 10.0  # periodic lines off a terminal; SEARCHTRACE_PROGRESS_EVERY overrides (seconds)


def line_interval() -> float:
    """Seconds between progress lines when stderr is not a terminal (a bad value falls back to the default)."""
    raw = os.environ.get("SEARCHTRACE_PROGRESS_EVERY", "")
    try:
        every = float(raw) if raw else LINE_EVERY_S
    except ValueError:
        return LINE_EVERY_S
    return every if math.isfinite(every) and every >= 0 else LINE_EVERY_S


@contextmanager
def periodic_lines(stats: Stats, *, label: str, every_s: float) -> Iterator[Callable[[], None]]:
    """Off a terminal: one summary line on stderr at most every `every_s` seconds, and a last one if any was printed."""
    last = time.monotonic()
    printed = False

    def tick() -> None:
        nonlocal last, printed
        now = time.monotonic()
        if now - last >= every_s:
            last, printed = now, True
            print(f"searchtrace {label}: {summary_line(stats)}", file=sys.stderr, flush=True)

    try:
        yield tick
    finally:
        if printed:
            print(f"searchtrace {label}: {summary_line(stats)}", file=sys.stderr, flush=True)


@contextmanager
def progress_display(stats: Stats, *, label: str = "record", enabled: bool | None = None) -> Iterator[Callable[[], None]]:
    """Yields a tick() to call after each trajectory: a live bar on a terminal, periodic lines otherwise."""
    console = Console(stderr=True)
    show = console.is_terminal if enabled is None else enabled
    if enabled is None and not show:
        with periodic_lines(stats, label=label, every_s=line_interval()) as line_tick:
            yield line_tick
        return
    if not show:
        yield lambda: None
        return
    progress = Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        _Counters(stats),
        console=console,
        transient=False,
        refresh_per_second=4,
    )
    task = progress.add_task(label, total=None)

    def tick() -> None:
        progress.update(task, completed=stats.done, total=stats.total or None)

    with progress:
        try:
            yield tick
        finally:
            tick()
