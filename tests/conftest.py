"""Shared fixtures: anyio runs on asyncio (aiohttp needs it); a PostgreSQL server for the central-log tests."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
