"""docs/concepts/security.md at the proxy: a bad epoch header, a deeply nested body and a busy port are one line, never a traceback
or a 500, and a refused request records nothing; epochs stay within 1 … MAX_EPOCHS."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from searchtrace.engine import MAX_EPOCHS
from searchtrace.store import TrajectoryStarted, epoch_of
from tests.proxy.support import CLI, proxy, streams, write_questions

BAD_EPOCHS = ["\u0663", "\u00b2", "\uff17", "1" * 5000, "9" * 30, str(2**64 + 1), str(MAX_EPOCHS + 1), "0", "-1", "1e3",
              "+2", "1_0", "0x10", "", "1.0", "1 2"]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("proxy-bad")
    qfile = tmp / "q.jsonl"
    qid = write_questions(qfile, 2)[0]["qid"]
    db = tmp / "bad.duckdb"
    with proxy(db, qfile, "bad") as p:
        yield p, qid, db


def _one_json_line(r: httpx.Response) -> str:
    assert r.headers["content-type"].startswith("application/json")
    assert len(r.text.strip().splitlines()) == 1, r.text[:200]
    return str(json.loads(r.text)["error"]["message"])


def test_a_bad_epoch_header_is_a_400_line_and_records_nothing(running) -> None:  # type: ignore[no-untyped-def]
    p, qid, db = running
    with httpx.Client(base_url=p.url, timeout=30) as c:
        for raw in BAD_EPOCHS:
            for method, route, body in (("POST", "tavily/search", {"query": "x"}), ("POST", "final", {"answer": "a"})):
                r = c.request(method, f"/t/tavily/{qid}/{route}", json=body,
                              headers={"X-Searchtrace-Epoch": raw.encode("utf-8")})
                assert r.status_code == 400, (raw[:20], r.status_code, r.text[:200])
                message = _one_json_line(r)
                assert "X-Searchtrace-Epoch" in message and f"1 to {MAX_EPOCHS}" in message and len(message) < 200
        # the edges that are epochs: 1 … MAX_EPOCHS, a leading zero allowed
        for raw in ("07", str(MAX_EPOCHS)):
            r = c.post(f"/t/tavily/{qid}/tavily/search", json={"query": "x"}, headers={"X-Searchtrace-Epoch": raw})
            assert r.status_code == 200, r.text
        assert c.get("/").status_code == 200  # still serving
    p.stop()
    started = [pl for evs in streams(db).values() for _, _, pl in evs if isinstance(pl, TrajectoryStarted)]
    assert sorted(epoch_of(s) for s in started) == [7, MAX_EPOCHS]


def test_deeply_nested_bodies_are_no_500(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "deep.duckdb"
    deep = b"[" * 3000 + b"]" * 3000
    obj = b'{"query": "x", "a": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}"
    with proxy(db, qfile, "deep") as p, httpx.Client(base_url=p.url, timeout=30) as c:
        for route in ("tavily/search", "brave/res/v1/web/search", "openai/v1/chat/completions", "final"):
            for body in (deep, obj):
                provider = "brave" if route.startswith("brave/") else "tavily"  # a search under its own provider
                r = c.post(f"/t/{provider}/{qid}/{route}", content=body, headers={"content-type": "application/json"})
                assert r.status_code < 500, (route, r.status_code, r.text[:200])
        assert c.get("/").status_code == 200
        assert p.stop() == 0
        log = p.log.read_text()
    assert "Traceback" not in log and "RecursionError" not in log, log[-2000:]


def test_a_busy_port_is_one_line_and_no_store(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    write_questions(qfile, 1)
    db = tmp_path / "busy.duckdb"
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        for upstream in ("sandbox", "live"):
            out = subprocess.run([sys.executable, "-c", CLI, "proxy", "--db", str(db), "--questions", str(qfile),
                                  "--run-id", "busy", "--port", str(port), "--upstream", upstream],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 2, out.stderr
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and f"127.0.0.1:{port} is in use" in lines[0], out.stderr
    assert not db.exists()


def test_a_reply_claiming_2_to_the_70_tokens_is_a_bad_response_not_a_hugeint(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from searchtrace.adapters.sandbox import running as serving
    from searchtrace.store import CallFailed, ModelResponded

    async def chat(request: Request) -> Response:
        body = await request.json()
        tokens = int(body["messages"][0]["content"])
        return Response(json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                                    "usage": {"prompt_tokens": tokens, "completion_tokens": 1}}),
                        media_type="application/json")

    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "huge.duckdb"
    app = Starlette(routes=[Route("/{path:path}", chat, methods=["POST"])])
    with serving(app) as root:
        env = {"OPENAI_API_KEY": "sk-huge-test-0000", "OPENAI_BASE_URL": f"{root}/openai/v1"}
        with proxy(db, qfile, "huge", upstream="live", env=env) as p, httpx.Client(base_url=p.url, timeout=30) as c:
            for tokens in (2**70, 2**63, -5, 10**13, 7):
                r = c.post(f"/t/tavily/{qid}/openai/v1/chat/completions",
                           json={"model": "m", "messages": [{"role": "user", "content": str(tokens)}]})
                assert r.status_code == 200  # the agent gets the reply as it came; the record says what it was
            # a reader during the run sees every event (nothing beyond 64 bits was stored)
            read = subprocess.run([sys.executable, "-c", CLI, "sql", "--db", str(db), "--json",
                                   "SELECT sum(CAST(payload->>'$.usage.input_tokens' AS BIGINT)) AS n FROM events "
                                   "WHERE type = 'model.responded'"], capture_output=True, text=True, timeout=60)
            assert read.returncode == 0, read.stderr
            assert p.stop() == 0
            assert "Traceback" not in p.log.read_text()
    events = [pl for evs in streams(db).values() for _, _, pl in evs]
    failed = [e for e in events if isinstance(e, CallFailed)]
    assert len(failed) == 4 and all(f.status == "bad_response" for f in failed)
    assert [e.usage.input_tokens for e in events if isinstance(e, ModelResponded)] == [7]


def test_the_listening_socket_lets_asyncio_turn_nagle_off() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is TCP; an accepted socket takes the listener's proto,
    and without it every small reply waited ~40 ms for a delayed ACK (bench proxy: +46 ms a call)."""
    import asyncio
    import socket

    from searchtrace.adapters import bind_local

    async def accepted_nodelay() -> int:
        got: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            got.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        with bind_local(0) as listener:
            server = await asyncio.start_server(on_client, sock=listener)
            port = listener.getsockname()[1]
            _, w = await asyncio.open_connection("127.0.0.1", port)
            value = await asyncio.wait_for(got, 5)
            w.close()
            server.close()
            return value

    assert asyncio.run(accepted_nodelay()) != 0


def test_a_bound_port_refuses_clients_until_its_server_serves_it() -> None:
    """Every server binds its port before opening its store: a client that comes early (a port check, an agent
    started beside it) is refused at once and tries again, never queued behind a store still opening."""
    from searchtrace.adapters import bind_local

    with bind_local(0) as listener:
        port = listener.getsockname()[1]
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
