"""Shorter GIL turns while the store pipelines work across threads.

While a batch is prepared in Python, the insert/commit thread coming back from DuckDB waits for the GIL up to
the switch interval (5 ms by default): a convoy that cost 11-18% of append throughput here. While any append
pipeline runs the interval is 0.5 ms; the process's own value comes back when the last one ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

GIL_TURN_S = 0.0005
_lock = threading.Lock()
_users = 0
_saved = 0.0


@contextmanager
def short_gil_turns() -> Iterator[None]:
    global _users, _saved
    with _lock:
        if _users == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved, GIL_TURN_S))
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                sys.setswitchinterval(_saved)
