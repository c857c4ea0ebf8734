"""`searchtrace mcp` and `mcp wrap` on bad input: one clear line, exit 2, no store created or touched; a stdio
server stopped by a signal keeps every call and finishes its trajectory `abandoned` (docs/how-to/mcp.md)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.builders import run_cli
from tests.mcp.support import CLI, http_server, rows
from tests.proxy.support import write_questions


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    write_questions(path, 2)
    return path


@pytest.mark.parametrize(("argv", "line"), [
    (["--provider", "brave", "--questions", "Q"], "missing option --run-id"),
    (["--run-id", "r", "--provider", "brave"], "missing option --questions"),
    (["--run-id", "r", "--questions", "Q", "--provider", "bing"], "--provider: unknown search provider 'bing' (known: "),
    (["--run-id", "r x", "--questions", "Q", "--provider", "brave"], "--run-id 'r x': may only hold letters"),
    (["--run-id", "r", "--questions", "nowhere.jsonl", "--provider", "brave"], "--questions nowhere.jsonl: no such file"),
    (["--run-id", "r", "--questions", "Q", "--provider", "brave", "--sandbox", "--qid", "nope"], "--qid 'nope': not in "),
    (["--run-id", "r", "--questions", "Q", "--provider", "brave", "--http", "--qid", "q"], "--qid is for a stdio server"),
    (["--run-id", "r", "--questions", "Q", "--provider", "brave", "--http", "--max-body", "1"], "--max-body '1': must be"),
    (["wrap", "--run-id", "r", "--questions", "Q", "--provider", "brave"], "mcp wrap: no server command; give it"),
    (["wrap", "--run-id", "r", "--questions", "Q", "--provider", "brave", "--max-result", "lots", "--", "x"],
     "--max-body 'lots': not a size"),
])
def test_bad_options_are_one_line(argv: list[str], line: str, qfile: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    code, out, err = run_cli("mcp", "--db", str(db), *[str(qfile) if a == "Q" else a for a in argv]) \
        if argv[0] != "wrap" else run_cli("mcp", "wrap", "--db", str(db),
                                           *[str(qfile) if a == "Q" else a for a in argv[1:]])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("searchtrace: error: ") and line in err, err
    assert not db.exists()


def test_a_busy_port_is_one_line(qfile: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = run_cli("mcp", "--db", str(db), "--run-id", "r", "--questions", str(qfile), "--provider",
                               "brave", "--sandbox", "--http", "--port", str(port))
    assert code == 2 and err.startswith(f"searchtrace: error: --port: 127.0.0.1:{port} is in use") and not db.exists()


def _send(proc: subprocess.Popen[bytes], msg: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def test_a_signal_finishes_the_stdio_trajectory_abandoned(qfile: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    qid = json.loads(qfile.read_text().splitlines()[0])["qid"]
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", "--db", str(db), "--run-id", "s", "--questions",
                             str(qfile), "--provider", "brave", "--sandbox", "--qid", qid],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "SEARCHTRACE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.stdout is not None
    _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert json.loads(proc.stdout.readline())["id"] == 0
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "search_web", "arguments": {"query": "founding year"}}})
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 1 and not reply["result"]["isError"]
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "fetch_page", "arguments": {"doc_id": "d999", "api_key": "sk-sent-by-client-1234"}}})
    assert json.loads(proc.stdout.readline())["result"]["isError"]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    types = [t for (t,) in rows(db, "SELECT type FROM events WHERE run_id = 's' AND stream_id LIKE 'traj:%' "
                                    "ORDER BY position")]
    assert err.decode().strip().splitlines()[-1] == \
        f"searchtrace mcp: stopped; {len(types)} events appended, 1 open trajectories abandoned"
    assert types[0] == "trajectory.started" and types[1] == "search.called" and "tool.refused" in types
    assert types[-1] == "trajectory.finished"
    assert rows(db, "SELECT payload->>'reason' FROM events WHERE type = 'trajectory.finished'") == [("abandoned",)]
    refused = rows(db, "SELECT payload->>'arguments' FROM events WHERE type = 'tool.refused'")
    assert refused == [('{"doc_id":"d999"}',)]  # the key the client sent is not kept
    assert rows(db, "SELECT count(*) FROM events WHERE payload::VARCHAR LIKE '%sk-sent-by-client%'") == [(0,)]


async def _leave(url: str, question: str) -> None:
    """One search, then the client ends its session (DELETE) without a final answer."""
    async with Client(url, mode="legacy") as client:
        assert not (await client.call_tool("search_web", {"query": question})).is_error


def test_an_http_client_that_leaves_ends_its_trajectory(qfile: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    q = json.loads(qfile.read_text().splitlines()[0])
    with http_server(db, qfile, "h") as server:
        anyio.run(_leave, f"{server.url}/t/brave/{q['qid']}/mcp", q["question"])
        assert server.stop() == 0
    # finished when the session ended, so none was left open at the stop
    assert server.log.read_text().strip().splitlines()[-1].endswith(" 0 open trajectories abandoned")
    assert rows(db, "SELECT stream_id, payload->>'reason' FROM events WHERE type = 'trajectory.finished'") == [
        (f"traj:h:brave:{q['qid']}", "abandoned")]
