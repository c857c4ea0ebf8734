"""`searchtrace mcp wrap -- CMD`: the `mcp` SDK's client talks through the relay to a stdio MCP server; the relay
passes everything through and records the server's search results, other tools, and its faults
(docs/how-to/mcp.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from searchtrace.store import EventLog
from tests.mcp.support import CLI, rows
from tests.proxy.support import write_questions

FAKE = Path(__file__).parent / "fake_server.py"
FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "sk-client-secret-98765"  # a key the client sends as an argument: relayed, never stored


def _wrapped(db: Path, qfile: Path, run_id: str, *extra: str, provider: str = "firecrawl") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[
        "-c", CLI, "mcp", "wrap", "--db", str(db), "--questions", str(qfile), "--run-id", run_id,
        "--provider", provider, *extra, "--", sys.executable, str(FAKE)], env=dict(os.environ))


def _events(db: Path, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(t, json.loads(p)) for t, p in rows(db, "SELECT type, payload FROM events WHERE run_id = ? AND "
                                                    "stream_id LIKE 'traj:%' ORDER BY position", [run_id])]


async def _session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]], errlog: TextIO
                   ) -> list[Any]:
    out = []
    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools][-1] == "echo"
        for name, args in calls:
            out.append(await client.call_tool(name, args))
    return out


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]], list[Any], str]:
    tmp = tmp_path_factory.mktemp("wrap")
    qfile = tmp / "q.jsonl"
    qs = write_questions(qfile, 2)
    db = tmp / "w.duckdb"
    calls = [("firecrawl_search", {"query": "q"}), ("brave_web_search", {"query": "b", "count": 10}),
             ("tavily_search", {"query": "t"}), ("web_search_exa", {"query": "e"}), ("echo", {"x": 1, "apiKey": SECRET}),
             ("tavily_search", {"query": "garbled"}), ("firecrawl_search", {"query": "failing"}),
             ("web_search_exa", {"query": "malformed"}), ("tavily_search", {"query": "huge"})]
    params = _wrapped(db, qfile, "w", "--qid", qs[0]["qid"], "--max-result", "1MiB")
    with (tmp / "stderr.txt").open("w") as errlog:
        got = anyio.run(_session, params, calls, errlog)
    return db, qs, got, (tmp / "stderr.txt").read_text()


def test_the_relay_is_transparent(wrapped: tuple[Path, list[dict[str, str]], list[Any], str]) -> None:
    """The client gets exactly what the server answered, even frames the relay could not read or record."""
    _, _, got, _ = wrapped
    fixture = json.loads((FIXTURES / "firecrawl_search.json").read_text())
    assert [c.text for c in got[0].content] == [c["text"] for c in fixture["result"]["content"]]
    assert json.loads(got[4].content[0].text) == {"echo": {"x": 1, "apiKey": SECRET}}
    assert got[6].is_error and len(got[8].content[0].text) == 3 << 20


def test_known_search_tools_become_ranked_search_results(wrapped: tuple[Path, list[dict[str, str]], list[Any], str]
                                                         ) -> None:
    db, qs, _, _ = wrapped
    events = _events(db, "w")
    assert events[0][0] == "trajectory.started" and events[0][1]["qid"] == qs[0]["qid"]
    called = [p for t, p in events if t == "search.called"]
    assert [(c["provider"], c["query"]) for c in called] == [
        ("firecrawl", "q"), ("brave", "b"), ("tavily", "t"), ("exa", "e"), ("tavily", "garbled"),
        ("firecrawl", "failing"), ("exa", "malformed"), ("tavily", "huge")]
    assert called[1]["params"] == {"count": 10}
    done = {c["call_id"]: p for c in called for t, p in events if t == "search.completed" and p["call_id"] == c["call_id"]}
    statuses = [done[c["call_id"]]["status"] for c in called]
    assert statuses == ["ok", "ok", "ok", "ok", "bad_response", "http_error", "ok", "bad_response"]
    assert "over the cap of 1048576 bytes" in done[called[7]["call_id"]]["error"]
    assert "invalid key" in done[called[5]["call_id"]]["error"]
    for c in called[:4]:
        results = [p for t, p in events if t == "search.result" and p["call_id"] == c["call_id"]]
        assert results and [r["rank"] for r in results] == list(range(1, len(results) + 1))
        assert done[c["call_id"]]["n_results"] == len(results) and done[c["call_id"]]["raw_digest"]
    doc_ids = [p["doc_id"] for t, p in events if t == "search.result"]
    assert doc_ids == [f"d{i}" for i in range(1, len(doc_ids) + 1)]  # in order of appearance, as the agent loop


def test_other_tools_are_recorded_with_their_raw_result(wrapped: tuple[Path, list[dict[str, str]], list[Any], str]
                                                         ) -> None:
    db, _, _, _ = wrapped
    tools = [p for t, p in _events(db, "w") if t == "tool.called"]
    assert [(p["name"], json.loads(p["arguments"]), p["status"]) for p in tools] == [("echo", {"x": 1}, "ok")]
    blob = rows(db, "SELECT count(*) FROM blobs WHERE sha256 = ?", [tools[0]["result_digest"]])
    assert blob == [(1,)]
    log = EventLog(db, read_only=True)
    try:
        raw = log.get_blob(tools[0]["result_digest"])
    finally:
        log.close()
    assert raw is not None and SECRET.encode() not in raw and b'"apiKey":"***"' in raw.replace(b" ", b"").replace(b"\\", b"")
    assert rows(db, "SELECT count(*) FROM events WHERE payload::VARCHAR LIKE ?", [f"%{SECRET}%"]) == [(0,)]


def test_the_session_ends_abandoned_when_the_client_leaves(wrapped: tuple[Path, list[dict[str, str]], list[Any], str]
                                                           ) -> None:
    db, _, _, stderr = wrapped
    last = _events(db, "w")[-1]
    assert last[0] == "trajectory.finished" and last[1]["reason"] == "abandoned"
    lines = stderr.strip().splitlines()
    n = rows(db, "SELECT count(*) FROM events WHERE stream_id LIKE 'traj:%'")[0][0]
    assert lines == [
        "searchtrace mcp wrap: the server wrote a frame that is not JSON-RPC (18 bytes: 'this is not {json'); "
        "relayed unchanged",
        f"searchtrace mcp wrap: a result of {len(json.dumps(_huge())) + 1} bytes is over the cap of 1048576 bytes "
        "(--max-result); relayed unread, recorded as bad_response",
        f"searchtrace mcp wrap: the server exited with code 0; {n} events appended, 1 open trajectories abandoned",
    ], lines


def _huge() -> dict[str, Any]:
    """The fake server's reply to the query `huge` (its line without the newline)."""
    return {"jsonrpc": "2.0", "id": 10, "result": {"content": [{"type": "text", "text": "x" * (3 << 20)}],
                                                   "isError": False}}


def test_a_server_that_dies_mid_call(tmp_path: Path) -> None:
    """One clear line, exit 1, the calls before kept, the trajectory finished with reason error naming the call."""
    qfile = tmp_path / "q.jsonl"
    qs = write_questions(qfile, 1)
    db = tmp_path / "d.duckdb"
    frames = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "brave_web_search",
                                                                         "arguments": {"query": "b"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "firecrawl_search",
                                                                         "arguments": {"query": "die"}}},
    ]
    # the frames go in one by one, each after the reply to the one before (the last gets none)
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", "wrap", "--db", str(db), "--questions", str(qfile),
                             "--run-id", "d", "--provider", "brave", "--qid", qs[0]["qid"], "--",
                             sys.executable, str(FAKE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    for frame in frames:
        proc.stdin.write((json.dumps(frame) + "\n").encode())
        proc.stdin.flush()
        if "id" in frame and frame["id"] != 2:
            replies.append(json.loads(proc.stdout.readline()))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert [r["id"] for r in replies] == [0, 1]
    lines = err.decode().strip().splitlines()
    assert lines[-1].startswith("searchtrace mcp wrap: error: the MCP server exited with code 3 during tools/call "
                                "firecrawl_search; the trajectory finished with reason error"), lines
    events = _events(db, "d")
    assert [t for t, _ in events].count("search.result") >= 1
    assert events[-2][0] == "call.failed" and events[-2][1]["what"] == "mcp:firecrawl_search"
    assert events[-1][0] == "trajectory.finished" and events[-1][1]["reason"] == "error"
    assert "exited with code 3" in events[-1][1]["error"]


def test_a_command_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    write_questions(qfile, 1)
    out = subprocess.run([sys.executable, "-c", CLI, "mcp", "wrap", "--db", str(tmp_path / "x.duckdb"),
                          "--questions", str(qfile), "--run-id", "x", "--provider", "brave", "--",
                          str(tmp_path / "no-such-server")], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"searchtrace: error: cannot start the MCP server {str(tmp_path / 'no-such-server')!r}: No such file or directory"]
