"""Issue #15's classes beyond one-line refusals: what each guard must let through, and what it must keep out."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from searchtrace.benchmarks._chaos import SEARCHTRACE
from tests.builders import INTERRUPTIBLE, run_cli, signal_state
from tests.reliability.catalogue import snapshot
from tests.reliability.test_security import SECRETS, leaks, store_texts, write_trace

# ---------------------------------------------------------------- 5. a key echoed in a successful reply


def echoing_world() -> Any:
    """The sandbox world plus a page whose title, snippet and body repeat every configured key."""
    from searchtrace.adapters.sandbox import Corpus, Page, World, build_corpus
    from searchtrace.adapters.sandbox._personas import covered

    echo = " ".join(SECRETS.values())
    base = build_corpus()
    url = next(u for u in (f"https://echo.sandbox.test/zebra-{n}" for n in range(100))  # one each persona indexes
               if all(covered(p, Page(url=u, title="", site="", description="", body="", published="", authority=0,
                                      kind="filler")) for p in ("brave", "tavily")))
    page = Page(url=url, title=f"Zebra notice board {SECRETS['BRAVE_API_KEY']}",
                site="Echo", description=f"Zebra notice. The keys: {echo}", body=f"# Zebra notice\n\nThe zebra notice says: {echo}",
                published="2026-01-01", authority=0.9, kind="filler")
    return World(Corpus(pages=[*base.pages, page], questions=list(base.questions)))


class Reader:
    """A chat model that searches 'zebra notice', fetches the echo page, and keeps every message it was shown."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def handle(self, request: Request) -> Response:
        import searchtrace.adapters.sandbox._wire as wire

        body = await request.json()
        self.requests.append(body["messages"])
        turns = sum(m["role"] == "assistant" for m in body["messages"])
        seen = "\n".join(str(m.get("content") or "") for m in body["messages"])
        calls: list[tuple[str, dict[str, str]]] = []
        if turns == 0:
            calls.append(("search_web", {"query": "zebra notice"}))
        elif turns == 1:
            calls += [("fetch_page", {"doc_id": d}) for d in re.findall(r'<document doc_id="(d\d+)"[^>]*echo\.sandbox', seen)]
        tool_calls = [{"id": f"call_{turns}_{i}", "type": "function",
                       "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)]
        reply = wire.chat_completion(key=f"r{len(self.requests)}", model=body["model"],
                                     content=None if calls else "FINAL ANSWER: echo", tool_calls=tool_calls or None,
                                     prompt_tokens=10, completion_tokens=5, reasoning_tokens=0, cached_tokens=0)
        return Response(wire.encode(reply), media_type="application/json")


def test_keys_echoed_in_successful_replies_reach_no_event_and_no_model(tmp_path: Path) -> None:
    from searchtrace.adapters.sandbox import create_app, running

    model = Reader()
    app = Starlette(routes=[Route("/openai/v1/chat/completions", model.handle, methods=["POST"]),
                            Mount("", app=create_app(world=echoing_world()))])
    (tmp_path / "q.jsonl").write_text(json.dumps({"qid": "echo-1", "question": "What does the zebra echo say?",
                                                  "answer": "nothing"}) + "\n")
    (tmp_path / "run.toml").write_text(
        'run_id = "echo"\n[agent]\nmodel = "sandbox-reader"\n[providers.brave]\n[providers.tavily]\n'
        '[fetch]\ncache_dir = ""\n[dataset]\npath = "q.jsonl"\n')
    db = tmp_path / "echo.duckdb"
    with running(app=app) as root:
        done = subprocess.run([SEARCHTRACE, "record", "--config", str(tmp_path / "run.toml"), "--sandbox-url", root,
                               "--db", str(db), "--no-progress"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, **SECRETS})
        probe = subprocess.run([SEARCHTRACE, "search", "-p", "brave", "--base-url", f"{root}/brave", "zebra notice"],
                               capture_output=True, text=True, timeout=60, env={**os.environ, **SECRETS})
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        shown = con.execute("SELECT count(*) FROM events WHERE type = 'search.result' "
                            "AND payload->>'url' LIKE '%echo.sandbox%'").fetchone()
        fetched = con.execute("SELECT count(*) FROM events WHERE type = 'fetch.completed' "
                              "AND payload->>'status' = 'ok'").fetchone()
    finally:
        con.close()
    assert shown and shown[0] >= 1 and fetched and fetched[0] >= 1  # the echo page was found and read
    assert "***" in probe.stdout and probe.returncode == 0
    n, found = leaks(iter([*store_texts(db), ("model requests", json.dumps(model.requests).encode()),
                           ("search stdout", probe.stdout.encode()), ("record stderr", done.stderr.encode())]))
    assert n > 20 and found == [], found


# ---------------------------------------------------------------- 6. no connection reaches the network


def test_a_sqlite_file_as_db_reaches_no_extension(tmp_path: Path) -> None:
    import sqlite3

    lite = tmp_path / "lite.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    for argv in (["report", "--json"], ["export", "--out", str(tmp_path / "ex")], ["judge", "--sandbox"],
                 ["import", str(write_trace(tmp_path))]):
        done = subprocess.run([SEARCHTRACE, argv[0], "--db", str(lite), *argv[1:]], capture_output=True, text=True,
                              timeout=60, env=env)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, (argv, done.stderr)
        assert "not a DuckDB database" in done.stderr
    assert list(home.rglob("*")) == []  # no ~/.duckdb/extensions folder was made


def test_every_store_connection_is_offline(tmp_path: Path) -> None:
    from searchtrace.store import EventLog, open_read_only

    db = tmp_path / "s.duckdb"
    with EventLog(db) as log:
        cur = log.cursor()
        rows = cur.execute("SELECT current_setting('autoinstall_known_extensions'), "
                           "current_setting('autoload_known_extensions')").fetchone()
        cur.close()
    assert rows == (False, False)
    ro = open_read_only(db)
    try:
        assert ro.execute("SELECT current_setting('autoinstall_known_extensions'), "
                          "current_setting('autoload_known_extensions')").fetchone() == (False, False)
    finally:
        ro.close()


# ---------------------------------------------------------------- 1. metrics see a read-only, offline store


def test_a_python_metric_gets_a_read_only_offline_connection(tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    assert run_cli("import", "--db", str(db), str(write_trace(tmp_path)))[0] == 0
    metric = tmp_path / "probe.py"
    metric.write_text(
        "def metric(con, judge_run_id):\n"
        "    access = con.execute(\"SELECT current_setting('enable_external_access')\").fetchone()[0]\n"
        "    n = con.execute('SELECT count(*) FROM v_trajectories').fetchone()[0]\n"
        "    return {'access': int(access), 'trajectories': n}\n")
    before = snapshot(db)
    code, out, err = run_cli("report", "--db", str(db), "--json", "--metric", str(metric))
    assert code == 0, err
    assert json.loads(out)["custom"]["probe"] == {"access": 0, "trajectories": 1}
    assert snapshot(db) == before


# ---------------------------------------------------------------- 2. stored data cannot break a reader


def test_readers_survive_values_their_columns_cannot_hold(tmp_path: Path) -> None:
    """Values written by another tool (or an older importer): report, judge and export still run."""
    from searchtrace.store import EventLog, NewEvent, SearchResult

    db = tmp_path / "r.duckdb"
    assert run_cli("import", "--db", str(db), str(write_trace(tmp_path)))[0] == 0
    with EventLog(db) as log:
        odd = SearchResult(call_id="c1", doc_id="d2", rank=2**40, title="t", url="https://b.test/",
                           url_normalized="https://b.test/", domain="b.test", snippet="s", metadata={})
        log.append([NewEvent(stream_id="traj:t1", run_id="other", payload=odd)])
    for argv in (["report", "--json"], ["judge", "--sandbox", "--no-progress"], ["export", "--out", str(tmp_path / "x")],
                 ["verify"]):
        code, _, err = run_cli(argv[0], "--db", str(db), *argv[1:])
        assert code == 0, (argv, err)


# ---------------------------------------------------------------- 3. import reads its input once


def test_import_from_a_pipe_and_a_fifo(tmp_path: Path) -> None:
    trace = write_trace(tmp_path).read_bytes()
    db = tmp_path / "p.duckdb"
    done = subprocess.run([SEARCHTRACE, "import", "--db", str(db), "/dev/stdin"], input=trace, capture_output=True,
                          timeout=60)
    assert done.returncode == 0 and b"1 new trajectories" in done.stdout, done.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other = trace.replace(b'"t1"', b'"t2"').replace(b'"q1"', b'"q2"')
    writer = threading.Thread(target=fifo.write_bytes, args=(other,))
    writer.start()
    code, out, err = run_cli("import", "--db", str(db), str(fifo))
    writer.join(10)
    assert code == 0 and "1 new trajectories" in out, err
    assert snapshot(db)[0] is True


@pytest.mark.parametrize("how", ["grow", "rewrite"])
def test_lines_added_or_changed_during_an_import_are_not_written(tmp_path: Path, how: str) -> None:
    from searchtrace.replay.interchange import import_files
    from searchtrace.store import EventLog

    path = write_trace(tmp_path)
    good = path.read_bytes()
    sneaky = good.replace(b'"t1"', b'"t9"').replace(b'"q1"', b'"q9"').replace(b'"rank": 1', b'"rank": 2147483648')

    def stage(name: str) -> None:
        if name.startswith("appending"):  # validation is over: change the file under the importer
            path.write_bytes(good + sneaky if how == "grow" else sneaky)

    with EventLog(tmp_path / "g.duckdb") as log:
        res = import_files(log, [path], [], [], on_stage=stage)
        cur = log.cursor()
        tids = cur.execute("SELECT DISTINCT payload->>'trajectory_id' FROM events "
                           "WHERE type = 'trajectory.started'").fetchall()
        cur.close()
    assert res.trajectories == 1 and tids == [("t1",)]


# ---------------------------------------------------------------- 9. a re-imported export


def test_no_traceback_for_a_key_with_a_line_break_in_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run([SEARCHTRACE, "search", "-p", "brave", "--sandbox", "q"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "BRAVE_API_KEY": "first-part\nsecond-part"})
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "first-part" not in done.stderr + done.stdout and "BRAVE_API_KEY" in done.stderr


def test_python_executable_is_the_venv() -> None:
    assert Path(sys.executable).parent == Path(SEARCHTRACE).parent


# ---------------------------------------------------------------- 7. what verify sees


def _trace(tid: str, qid: str, page: str) -> dict[str, Any]:
    return {"trajectory_id": tid, "provider": "brave", "qid": qid, "question": "Q?", "gold_answer": "A",
            "final_answer": "A", "stop_reason": "answered", "steps": [
                {"kind": "search", "iteration": 1, "call_id": "c1", "query": "q", "latency_ms": 1.0, "results": [
                    {"doc_id": "d1", "rank": 1, "title": "t", "url": f"https://{tid}.test/", "domain": f"{tid}.test",
                     "snippet": "s", "metadata": {}}]},
                {"kind": "fetch", "iteration": 2, "call_id": "c2", "doc_id": "d1", "url": f"https://{tid}.test/",
                 "status": "ok", "content": page, "n_tokens": 3, "latency_ms": 2.0}]}


@pytest.fixture(scope="module")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three imported trajectories with their projections, built once for the module (one file, nothing beside it)."""
    where = tmp_path_factory.mktemp("built")
    src = where / "in.jsonl"
    src.write_text("".join(json.dumps(_trace(f"t{i}", f"q{i}", f"page {i} " * 50)) + "\n" for i in range(3)))
    db = where / "v.duckdb"
    code, _, err = run_cli("import", "--db", str(db), str(src))
    assert code == 0, err
    code, _, err = run_cli("report", "--db", str(db), "--json")  # builds the projections
    assert code == 0, err
    return db


@pytest.fixture
def store(built_store: Path, tmp_path: Path) -> Path:
    """A copy of the built store for each test, which may tamper with it."""
    db = tmp_path / "v.duckdb"
    shutil.copyfile(built_store, db)
    return db


def _tamper(db: Path, *statements: str) -> None:
    con = duckdb.connect(str(db))
    try:
        for s in statements:
            con.execute(s)
    finally:
        con.close()


def _verify(db: Path) -> tuple[int, str, str]:
    return run_cli("verify", "--db", str(db))


@pytest.mark.parametrize("statement", [
    "DELETE FROM events WHERE position > (SELECT max(position) - 3 FROM events)",
    "DELETE FROM events WHERE position = (SELECT max(position) FROM events)",
    "DELETE FROM events WHERE stream_id = (SELECT arg_max(stream_id, position) FROM events)",
])
def test_verify_sees_a_deleted_tail(store: Path, statement: str) -> None:
    assert _verify(store)[0] == 0
    _tamper(store, statement)
    code, _, err = _verify(store)
    assert code == 1 and len(err.splitlines()) == 1 and "were deleted" in err, err


def test_appends_after_a_verify_keep_the_head(store: Path, tmp_path: Path) -> None:
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps(_trace("t7", "q7", "seven")) + "\n")
    assert run_cli("import", "--db", str(store), str(more))[0] == 0
    code, out, err = _verify(store)
    assert code == 0 and "ok:" in out, err


@pytest.mark.parametrize("how", ["other bytes", "garbage", "deleted"])
def test_verify_and_export_see_blob_tampering(store: Path, tmp_path: Path, how: str) -> None:
    import zlib

    statement = {
        "other bytes": "UPDATE blobs SET bytes = ? WHERE sha256 = (SELECT min(sha256) FROM blobs)",
        "garbage": "UPDATE blobs SET bytes = 'not zlib'::BLOB WHERE sha256 = (SELECT min(sha256) FROM blobs)",
        "deleted": "DELETE FROM blobs WHERE sha256 = (SELECT min(sha256) FROM blobs)",
    }[how]
    con = duckdb.connect(str(store))
    try:
        con.execute(statement, [zlib.compress(b"an altered page")] if how == "other bytes" else [])
    finally:
        con.close()
    code, _, err = _verify(store)
    assert code == 1 and len(err.splitlines()) == 1 and "blob" in err, err
    code, _, err = run_cli("export", "--db", str(store), "--out", str(tmp_path / "ex"))
    assert (code != 0 or how == "deleted") and len(err.splitlines()) <= 1 and "Traceback" not in err, err
    pages = (tmp_path / "ex" / "traces.jsonl")
    assert not pages.exists() or "an altered page" not in pages.read_text()


def test_projections_edited_by_hand_are_rebuilt(store: Path) -> None:
    before = run_cli("report", "--db", str(store), "--json")[1]
    _tamper(store, "UPDATE proj.search_results SET rank = 99")
    code, out, err = _verify(store)
    assert code == 0 and "proj.search_results did not match the log and were rebuilt" in out, err
    con = duckdb.connect(str(store), read_only=True)
    try:
        assert con.execute("SELECT DISTINCT rank FROM proj.search_results").fetchall() == [(1,)]
    finally:
        con.close()
    assert run_cli("report", "--db", str(store), "--json")[1] == before


@pytest.mark.parametrize("edit", [
    "UPDATE proj.search_results SET rank = 99 WHERE position = (SELECT max(position) FROM proj.search_results)",
    "UPDATE proj.search_results SET position = position + 1000000 "
    "WHERE position = (SELECT min(position) FROM proj.search_results)",
])
def test_verify_compares_projections_span_by_span(store: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    import searchtrace.analytics._projections as projections

    monkeypatch.setattr(projections, "SPAN", 3)  # the store's events compared a few positions at a time
    assert "did not match" not in _verify(store)[1]
    _tamper(store, edit)
    code, out, err = _verify(store)
    assert code == 0 and "proj.search_results did not match the log and were rebuilt" in out, err
    assert "did not match" not in _verify(store)[1]


def test_projections_ahead_of_the_log_or_short_of_rows_are_rebuilt(store: Path) -> None:
    before = run_cli("report", "--db", str(store), "--json")[1]
    _tamper(store, "DELETE FROM proj.search_results", "INSERT INTO projection_state SELECT name, version, "
            "last_position + 5, n + 100 FROM projection_state WHERE name = 'fetch_completions'")
    assert run_cli("report", "--db", str(store), "--json")[1] == before


def test_a_view_replaced_by_hand_is_installed_again(store: Path) -> None:
    _tamper(store, "CREATE OR REPLACE VIEW main.v_trajectories AS SELECT 42 AS trajectory_id")
    assert run_cli("report", "--db", str(store), "--json")[0] == 0
    con = duckdb.connect(str(store), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM main.v_trajectories").fetchone() == (3,)
    finally:
        con.close()


# ---------------------------------------------------------------- 8. Ctrl-C, odd statements, full disk


def test_sql_stops_promptly_on_ctrl_c(store: Path) -> None:
    import signal
    import time

    proc = subprocess.Popen([SEARCHTRACE, "sql", "--db", str(store),
                             "SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **INTERRUPTIBLE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the query has run a while (start-up alone takes ~0.6 s of CPU)
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            if (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") > 2.5:
                break
            time.sleep(0.2)
        state = signal_state(proc.pid)
        proc.send_signal(signal.SIGINT)
        try:  # the query has years of rows left: ending at all is stopping on the signal (30 s: a hang guard)
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"sql did not stop on SIGINT ({state})") from None
        assert proc.returncode == 130 and len(err.splitlines()) == 1, err
    finally:  # a query that did not stop would spin on a core for the rest of the suite
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("query", [
    "EXPLAIN SELEC 1", "SELECT error('boom')", "SELECT CAST('x' || range AS INTEGER) FROM range(5000)",
    "PREPARE p AS SELECT 1", "EXECUTE p", "CALL pragma_version()", "VACUUM", "LOAD httpfs",
    "SELECT json_extract(payload, '$') FROM events WHERE false UNION ALL SELECT '" + "[" * 3000 + "]" * 3000 + "'::JSON",
])
def test_sql_odd_statements_give_one_line(store: Path, query: str) -> None:
    code, _, err = run_cli("sql", "--db", str(store), "--json", query)
    assert code in (0, 2) and (code == 0 or len(err.splitlines()) == 1), (query, err)
    assert "Traceback" not in err


FSIZE_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
from searchtrace.cli import main
main(sys.argv[2:])
"""


@pytest.mark.parametrize("limit", [20_000, 600_000])
def test_a_full_disk_during_import_and_export_is_one_line(tmp_path: Path, limit: int) -> None:
    src = tmp_path / "big.jsonl"
    src.write_text("".join(json.dumps(_trace(f"t{i}", f"q{i}", f"page {i} " * 500)) + "\n" for i in range(60)))
    for argv in (["import", "--db", str(tmp_path / "full.duckdb"), str(src)],
                 ["export", "--db", str(tmp_path / "full.duckdb"), "--out", str(tmp_path / "ex")]):
        done = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(limit), *argv], capture_output=True, text=True,
                              timeout=120)
        if done.returncode == 0:
            continue  # it fitted
        assert done.returncode in (1, 2) and len(done.stderr.splitlines()) == 1, (argv, done.stderr[-800:])
        assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- 10. a live run that fails says so


@pytest.mark.parametrize(("base_url", "kind"), [("http://127.0.0.1:9/v1", "connection"),
                                                ("http://no-such-host.invalid/v1", "dns")])
def test_a_record_whose_every_cell_fails_exits_1_with_reasons_by_kind(tmp_path: Path, base_url: str, kind: str) -> None:
    (tmp_path / "q.jsonl").write_text('{"qid": "a", "question": "Q?", "answer": "x"}\n'
                                      '{"qid": "b", "question": "Q2?", "answer": "y"}\n')
    (tmp_path / "run.toml").write_text(
        f'run_id = "allfail"\n[agent]\nmodel = "m"\nbase_url = "{base_url}"\nmax_retries = 0\ntimeout_s = 3\n'
        '[providers.brave]\n[fetch]\ncache_dir = ""\n[dataset]\npath = "q.jsonl"\n')
    done = subprocess.run([SEARCHTRACE, "record", "--config", str(tmp_path / "run.toml"), "--db",
                           str(tmp_path / "f.duckdb"), "--no-progress"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OPENAI_API_KEY": "sk-allfail-test", "BRAVE_API_KEY": "brave-allfail"})
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1 and f"({kind} 2)" in done.stderr, done.stderr
