"""A real Arize Phoenix server for the OpenTelemetry export tests: started once per test session on loopback."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from searchtrace.adapters.sandbox import free_port


@pytest.fixture(scope="session")
def phoenix() -> Iterator[str]:
    """`phoenix serve` on 127.0.0.1 (a free port; gRPC on a port the system picks), its SQLite database in a temp
    working dir, no telemetry and no outside resources; its base URL once its health route answers."""
    if importlib.util.find_spec("phoenix") is None:
        pytest.skip("arize-phoenix is not installed (the dev extra installs it)")
    port = free_port()
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    with tempfile.TemporaryDirectory(prefix="searchtrace-phoenix-") as work:
        env = {**keep, "PHOENIX_WORKING_DIR": work, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
               "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
               "PHOENIX_DISABLE_AGENT_ASSISTANT": "true"}
        log = Path(work) / "phoenix.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-c", "import sys\nfrom phoenix.server.main import main\n"
                                     "sys.argv[0] = 'phoenix'\nsys.exit(main())", "serve", "--grpc-port", "0"],
                                    stdout=out, stderr=subprocess.STDOUT, env=env, cwd=work)
        url = f"http://127.0.0.1:{port}"
        hung = time.monotonic() + 600  # a guard against a hang, not a wait: the loop ends when Phoenix answers
        try:
            with httpx.Client(timeout=2) as client:
                while True:  # its migrations run first: poll the health route until it answers (or Phoenix dies)
                    if proc.poll() is not None or time.monotonic() > hung:
                        pytest.fail(f"phoenix did not come up (exit {proc.poll()}): {log.read_text()[-2000:]}")
                    try:
                        if client.get(f"{url}/healthz").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    try:
                        proc.wait(0.2)
                    except subprocess.TimeoutExpired:
                        pass
            yield url
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(60)
