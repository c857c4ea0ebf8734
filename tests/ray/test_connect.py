"""`record --ray HOST:PORT` from a fresh process (docs/how-to/scale.md): nothing listening there is one line and exit
2 before the store is touched; the session's loopback cluster is joined without any Ray setting in the environment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """run_id = "t"
[agent]
model = "sandbox-agent"
[dataset]
path = "sandbox"
[sample]
n = 2
seed = "t"
[fetch]
cache_dir = ""
[providers.brave]
"""


def _record(tmp_path: Path, address: str, timeout: float) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "run.toml"
    cfg.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # a fresh shell: no Ray setting
    return subprocess.run(
        [sys.executable, "-c", "from searchtrace.cli import main; main()", "record", "--config", str(cfg), "--db", str(tmp_path / "t.duckdb"),
         "--sandbox", "--no-progress", "--ray", address, "--shards", "2"],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )


def test_nothing_listening_is_one_line_and_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the Ray tests need the ray extra: pip install 'searchtrace[ray]'")
    with socket.socket() as s:  # a loopback port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    got = _record(tmp_path, f"127.0.0.1:{port}", timeout=120)
    assert got.returncode == 2
    assert got.stderr.strip().splitlines() == [
        f"searchtrace: error: --ray 127.0.0.1:{port}: no Ray cluster answers there (Connection refused)"]
    assert not (tmp_path / "t.duckdb").exists()


def test_a_loopback_cluster_is_joined_from_a_fresh_process(ray_cluster: str, tmp_path: Path) -> None:
    got = _record(tmp_path, ray_cluster, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    assert (tmp_path / "t.duckdb").exists()
