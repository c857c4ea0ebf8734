"""The explorer as a real `searchtrace view` process (docs/reliability.md, "Live reads and the explorer"): it prints
its URL only once it accepts, takes the token out of the address bar, cancels a query whose client went away,
stops promptly on SIGTERM during a query, lets the file go while a page only polls, and answers 503 when every
read session of the run holding the file is taken."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from searchtrace.store import EventLog, ReadServer, open_remote
from tests.builders import run_cli
from tests.web.servers import SEARCHTRACE, View, start_view
from tests.web.test_api import get_all

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

# about 10^12 rows: minutes of work unless it is interrupted (pure table functions: allowed in a read)
ENDLESS = "SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b"


@pytest.fixture
def store(demo_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "live.duckdb"
    shutil.copyfile(demo_db, copy)
    return copy


@pytest.fixture
def running(store: Path) -> Iterator[View]:
    v = start_view(store)
    yield v
    if v.proc.poll() is None:
        v.proc.terminate()
    v.proc.communicate(timeout=30)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _busy(pid: int) -> None:
    """Wait until the process burns CPU (a query runs), for at most a minute."""
    start, deadline = _cpu_s(pid), time.monotonic() + 60
    while _cpu_s(pid) - start < 0.5:
        assert time.monotonic() < deadline, "the query never started"
        time.sleep(0.05)


def _quiet(pid: int) -> bool:
    """True once the process stops burning CPU (its query ended), waiting at most 60 s (a hang guard)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        before = _cpu_s(pid)
        time.sleep(0.5)
        if _cpu_s(pid) - before < 0.1:
            return True
    return False


def test_the_url_is_printed_once_the_explorer_accepts(store: Path) -> None:
    proc = subprocess.Popen([SEARCHTRACE, "view", "--db", str(store), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        printed = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", line)
        assert printed, line
        # at once, one attempt: a script that connects as soon as it reads the URL is answered
        r = httpx.get(f"http://127.0.0.1:{printed[1]}/api/runs", params={"token": printed[2]}, timeout=30)
        assert r.status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_view_and_sandbox_serve_have_distinct_default_ports() -> None:
    def default(*cmd: str) -> str:
        out = subprocess.run([SEARCHTRACE, *cmd, "--help"], capture_output=True, text=True, timeout=60).stdout
        found = re.search(r"--port INTEGER.*?\[default: (\d+)\]", out, re.DOTALL)
        assert found, out
        return found[1]

    assert default("view") != default("sandbox", "serve")


def test_the_token_leaves_the_address_bar(running: View) -> None:
    r = httpx.get(f"{running.root}/?token={running.token}&x=1", timeout=HANG_S)
    assert r.status_code == 303 and r.headers["location"] == "/?x=1"  # the URL without the token ...
    assert r.headers["set-cookie"].startswith(f"searchtrace-view-{running.root.rsplit(':', 1)[1]}={running.token};")
    with httpx.Client(base_url=running.root, timeout=HANG_S) as c:  # ... and the cookie set on the way goes for the token
        page = c.get(f"/?token={running.token}", follow_redirects=True)
        assert page.status_code == 200 and "token" not in str(page.url) and "<script" in page.text
        assert c.get("/api/runs").status_code == 200


def test_a_query_whose_client_went_away_is_cancelled(running: View) -> None:
    pid = running.proc.pid
    with pytest.raises(httpx.ReadTimeout):  # the client gives up (a closed tab, a script's timeout)
        httpx.post(f"{running.root}/api/sql", params={"token": running.token}, json={"sql": ENDLESS},
                   timeout=httpx.Timeout(30, read=3))
    assert _quiet(pid), "the abandoned query kept burning CPU"
    r = httpx.get(f"{running.root}/api/runs", params={"token": running.token}, timeout=30)
    assert r.status_code == 200  # the explorer serves on


def test_sigterm_during_a_query_stops_the_explorer(running: View) -> None:
    pid = running.proc.pid

    got: list[object] = []

    def ask() -> None:
        try:
            got.append(httpx.post(f"{running.root}/api/sql", params={"token": running.token}, json={"sql": ENDLESS},
                                  timeout=120).status_code)
        except httpx.HTTPError as exc:
            got.append(type(exc).__name__)

    asking = threading.Thread(target=ask)
    asking.start()
    _busy(pid)
    sent = time.monotonic()
    running.proc.send_signal(signal.SIGTERM)
    running.proc.wait(timeout=15)  # the statement's own 30 s limit is not waited for
    took = time.monotonic() - sent
    asking.join(timeout=30)
    assert got and got[0] != 200, got  # the query was stopped, never answered as if it had run
    print(f"stopped {took:.2f} s after SIGTERM")  # measured for docs/reliability.md (about 1 s)


def test_a_polling_page_does_not_keep_the_file_from_a_writer(running: View, store: Path, tmp_path: Path) -> None:
    root, token = running.root, running.token
    assert httpx.get(f"{root}/api/judge-runs", params={"token": token}, timeout=30).status_code == 200  # holds it
    code, _, err = run_cli("judge", "--db", str(store), "--default", "--judge-run-id", "sandbox-judge@judge/1")
    assert code == 2 and "another searchtrace process (searchtrace view, PID" in err  # named as what it is
    held = time.monotonic()
    while time.monotonic() - held < 3.0:  # an open list page: a poll every 0.3 s, past the 2 s the explorer waits
        r = httpx.get(f"{root}/api/trajectories", params={"token": token, "limit": 1},
                      headers={"X-Searchtrace-Poll": "1"}, timeout=30)
        assert r.status_code == 200
        time.sleep(0.3)
    r = httpx.get(f"{root}/api/trajectories", params={"token": token, "limit": 1}, headers={"X-Searchtrace-Poll": "1"},
                  timeout=30)
    assert r.status_code == 200 and r.json()["total"] > 0
    # a real writer in its own process, right after a poll: it takes the file
    done = subprocess.run([SEARCHTRACE, "judge", "--db", str(store), "--default", "--judge-run-id",
                           "sandbox-judge@judge/1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    again = httpx.get(f"{root}/api/judge-runs", params={"token": token}, timeout=30)
    assert [j["chosen_by"] for j in again.json() if j["default"]] == ["judge --default"]  # and the explorer reads on


def test_every_read_session_taken_is_a_503_with_retry_after(store: Path) -> None:
    with EventLog(store) as log, ReadServer(store, log.cursor, sessions=1):
        with open_remote(store) as taken:  # the one session there is
            taken.execute("SELECT 1").fetchall()
            runs, sql = get_all(store, ("GET", "/api/runs", None), ("POST", "/api/sql", {"sql": "SELECT 1"}))
    for r in (runs, sql):
        assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
        assert "sessions open" in r.json()["error"]


def test_sql_takes_a_query_from_a_file_or_stdin(store: Path, tmp_path: Path) -> None:
    query = "-- a comment first, as a saved query often starts\nSELECT count(*) AS n FROM events"
    f = tmp_path / "q.sql"
    f.write_text(query)
    code, out, err = run_cli("sql", "--db", str(store), "--file", str(f), "--json")
    assert code == 0, err
    n = json.loads(out)[0]["n"]
    piped = subprocess.run([SEARCHTRACE, "sql", "--db", str(store), "-", "--json"], input=query, capture_output=True,
                           text=True, timeout=60)
    assert piped.returncode == 0 and json.loads(piped.stdout) == [{"n": n}], piped.stderr
