"""The explorer as a real server for the browser and guard tests: `searchtrace view` in a child process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import httpx

from searchtrace.adapters.sandbox import free_port

SEARCHTRACE = str(Path(sys.executable).parent / "searchtrace")


class View(NamedTuple):
    """A running `searchtrace view`: its root URL and the token of the URL it printed."""

    root: str
    token: str
    proc: subprocess.Popen[str]


def start_view(db: Path) -> View:
    """`searchtrace view` on a free port, once it answers (the token read from the URL it prints)."""
    port = free_port()
    proc = subprocess.Popen([SEARCHTRACE, "view", "--db", str(db), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", line)
    assert printed and int(printed[1]) == port, (line, proc.poll() is not None and proc.communicate()[1])
    root, token = f"http://127.0.0.1:{port}", printed[2]
    deadline = time.monotonic() + 120  # a hang guard: a loaded machine may take long to start the explorer
    while True:
        try:
            if httpx.get(f"{root}/api/runs", params={"token": token}, timeout=2).status_code == 200:
                return View(root, token, proc)
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1] if proc.poll() is not None else "slow"
        time.sleep(0.1)
