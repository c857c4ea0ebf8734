"""Shared fixtures: anyio runs on asyncio (aiohttp needs it); a PostgreSQL server for the central-log tests."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The order in which `make test` hands test modules to its workers (one module per worker at a time: the Makefile
# says why): the longest first (measured on a quiet 2-core machine, each sharing it with three other workers; the ones
# that mostly wait placed between ones that compute), then the rest by their number of tests, so no long module is
# left for the end. A module missing here still runs; it only starts later.
LONG_FIRST = (
    "tests/ray/test_ray.py",  # ~115 s: quotas counted at the server (R = 1 takes its time), fan-out, joining
    "tests/docs/test_docs.py",  # ~40 s: the manual's examples, in order, on one store
    "tests/reliability/test_chaos_small.py",
    "tests/reliability/test_bad_inputs.py",
    "tests/engine/test_live_reads.py",  # ~35 s, mostly waiting: a run read while it records, a turn at a time
    "tests/store/test_read_guards.py",
    "tests/reliability/test_round_two.py",
    "tests/otel/test_otel_bridge.py",
    "tests/engine/test_live_read_guards.py",
    "tests/batch/test_judge_batch.py",
    "tests/otel/test_otel_phoenix.py",
    "tests/web/test_browser_report.py",
    "tests/store/test_central_log.py",
    "tests/web/test_explorer_live.py",
    "tests/engine/test_pause_turn.py",
    "tests/proxy/test_proxy_responses.py",
    "tests/web/test_browser.py",
    "tests/analytics/test_arms.py",
    "tests/replay/test_import_inspect.py",
    "tests/mcp/test_mcp_server.py",
    "tests/analytics/test_metrics.py",
    "tests/analytics/test_custom.py",
    "tests/proxy/test_proxy_calls.py",
    "tests/replay/test_export.py",
    "tests/store/test_segments_merge.py",
    "tests/replay/test_reexec.py",
    "tests/proxy/test_proxy_bad_inputs.py",
    "tests/analytics/test_paired.py",
    "tests/test_one_turn_every_path.py",
    "tests/analytics/test_audit.py",
    "tests/mcp/test_mcp_wrap.py",
    "tests/test_startup.py",
    "tests/proxy/test_proxy_by_text.py",
    "tests/store/test_readserver.py",
    "tests/replay/test_import_audit_epochs.py",
    "tests/reliability/test_keys_in_arguments.py",
    "tests/replay/test_export_runs.py",
    "tests/test_layers.py",
    "tests/otel/test_collect_faults.py",
    "tests/engine/test_resume_kill.py",
    "tests/reliability/test_hostile_server.py",
    "tests/replay/test_replay_attempts.py",
)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules in the order above, then by their number of tests (the order within a module is kept)."""
    size = Counter(_module(item) for item in items)  # keyed in collection order
    first = {module: i for i, module in enumerate(LONG_FIRST)}
    order = {module: i for i, module in enumerate(size)}
    items.sort(key=lambda item: (first.get(m := _module(item), len(first)), -size[m], order[m]))


class Postgres:
    """A PostgreSQL server of this test session, on a Unix socket only (no TCP)."""

    def __init__(self, socket_dir: Path) -> None:
        self.socket_dir = socket_dir

    def url(self, db: str = "postgres", password: str | None = None) -> str:
        auth = f"postgres:{password}" if password else "postgres"
        return f"postgresql://{auth}@/{db}?host={self.socket_dir}"

    def database(self, password: str | None = None) -> str:
        """A new empty database; its URL (with a password in it, when given: the server does not ask for one)."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f"CREATE DATABASE {name}")
        return self.url(name, password)


def _server_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian puts it under /usr/lib/postgresql)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """initdb + pg_ctl as the `postgres` user when run as root (the server refuses root), stopped at session end."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed (make test installs it)")
    bindir = _server_bin()
    if bindir is None:
        if os.geteuid() == 0:
            pytest.fail("no PostgreSQL server binaries although root: `make test` installs Debian's postgresql")
        pytest.skip("no PostgreSQL server binaries and not root to install them (apt-get install postgresql)")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    home = Path(tempfile.mkdtemp(prefix="searchtrace-pg-"))
    home.chmod(0o755)
    if as_user:
        shutil.chown(home, "postgres")
    data = home / "data"

    def run(*args: str) -> None:
        done = subprocess.run([*as_user, *args], capture_output=True, text=True, cwd=home)
        if done.returncode != 0:
            log = (home / "log").read_text(errors="replace")[-2000:] if (home / "log").exists() else ""
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr.strip()} {log}")

    run(str(bindir / "initdb"), "-D", str(data), "-E", "UTF8", "--locale=C.UTF-8", "-A", "trust", "-U",
        "postgres", "-N")
    options = (f"-c listen_addresses='' -c unix_socket_directories='{home}' -c fsync=off "
               "-c synchronous_commit=off -c full_page_writes=off")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-w", "-o", options, "start")
    try:
        yield Postgres(home)
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, cwd=home)
        shutil.rmtree(home, ignore_errors=True)
