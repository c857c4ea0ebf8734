"""Progress of a long run on a terminal (rich), silent when stderr is not a TTY (logs carry the story there)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from engine.agent import Stats


def summary_line(s: Stats) -> str:
    """The counters in one line: trajectories done / running / failed, calls, retries, tokens."""
    return (
        f"done {s.done}/{s.total} · running {s.running} · failed {s.failed} · "
        f"model {s.model_calls} · search {s.search_calls} · fetch {s.fetch_calls} · retries {s.retries} · "
        f"tokens {s.input_tokens:,} in / {s.output_tokens:,} out"
    )


@contextmanager
def progress_display(stats: Stats, *, label: str = "record", enabled: bool | None = None) -> Iterator[Callable[[], None]]:
    """Yields a tick() to call after each trajectory; shows a live bar only on an interactive stderr."""
    console = Console(stderr=True)
    show = console.is_terminal if enabled is None else enabled
    if not show:
        yield lambda: None
        return
    progress = Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=False,
        refresh_per_second=4,
    )
    task = progress.add_task(summary_line(stats), total=max(stats.total, 0))

    def tick() -> None:
        progress.update(task, completed=stats.done, description=summary_line(stats))

    with progress:
        try:
            yield tick
        finally:
            tick()


def is_tty() -> bool:
    return sys.stderr.isatty()
