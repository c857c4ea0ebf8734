"""A server on 127.0.0.1 that misbehaves at the HTTP layer: `search`, `fetch`, `judge` and `record` fail typed and
in one line per failure (exit 1), never with a traceback, and no key appears in what they print or store."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import run_cli
from tests.reliability.test_security import SECRETS, leaks, store_texts

DEEP = b"[" * 100_000 + b"]" * 100_000

REPLIES: dict[str, bytes] = {
    "not-http": b"THIS IS NOT HTTP\r\n\r\n",
    "http-0.9": b'{"web": {"results": []}}',
    "negative-length": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}",
    "huge-header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 300_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
    "many-headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
                    + b"Content-Length: 2\r\n\r\n{}",
    "closed": b"",
    "deep-json": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(DEEP) + DEEP,
    "bad-status": b"HTTP/1.1 abc Weird\r\nContent-Length: 2\r\n\r\n{}",
}


class Hostile:
    """Answers every connection with one fixed byte string, then closes (bounded: stops with the test)."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)  # the request head (enough for these small requests)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    yield


def _clean(code: int, out: str, err: str) -> None:
    assert code == 1, (code, err[-600:])
    assert "Traceback" not in err and err.strip(), err[-600:]
    assert all(line.startswith("searchtrace: ") for line in err.splitlines()), err[-600:]
    assert leaks(iter([("out", out.encode()), ("err", err.encode())]))[1] == []


@pytest.mark.parametrize("mode", sorted(REPLIES))
def test_search_and_fetch_against_a_hostile_server(mode: str) -> None:
    with Hostile(REPLIES[mode]) as root:
        _clean(*run_cli(*["search", "-p", "brave", "--base-url", root, "--max-retries", "0", "--timeout", "3", "q"]))
        _clean(*run_cli(*["fetch", "--no-cache", "--base-url", root, "--max-retries", "0", "--timeout", "3",
                         "https://x.test/"]))


@pytest.fixture(scope="module")
def judged_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    trace = {"trajectory_id": "h1", "provider": "brave", "qid": "q1", "question": "Q?", "gold_answer": "A",
             "final_answer": "A", "stop_reason": "answered", "steps": [
                 {"kind": "search", "iteration": 1, "call_id": "c1", "query": "q", "latency_ms": 1.0, "results": [
                     {"doc_id": "d1", "rank": 1, "title": "t", "url": "https://h.test/", "domain": "h.test",
                      "snippet": "s", "metadata": {}}]}]}
    (root / "t.jsonl").write_text(json.dumps(trace) + "\n")
    db = root / "h.duckdb"
    assert run_cli(*["import", "--db", str(db), str(root / "t.jsonl")])[0] == 0
    return db


@pytest.mark.parametrize("mode", ["not-http", "negative-length", "huge-header", "deep-json", "closed"])
def test_judge_against_a_hostile_server(judged_store: Path, mode: str) -> None:
    with Hostile(REPLIES[mode]) as root:
        _clean(*run_cli(*["judge", "--db", str(judged_store), "--model", "m", "--base-url", root, "--max-retries", "0",
                         "--timeout", "3", "--no-progress"]))
    assert leaks(store_texts(judged_store))[1] == []


@pytest.mark.parametrize("mode", ["not-http", "many-headers", "deep-json", "bad-status"])
def test_record_against_a_hostile_server(tmp_path: Path, mode: str) -> None:
    (tmp_path / "q.jsonl").write_text('{"qid": "a", "question": "Q?", "answer": "x"}\n')
    with Hostile(REPLIES[mode]) as root:
        (tmp_path / "run.toml").write_text(
            f'run_id = "hostile"\n[agent]\nmodel = "m"\nbase_url = "{root}/v1"\nmax_retries = 0\ntimeout_s = 3\n'
            f'[providers.brave]\nbase_url = "{root}"\nmax_retries = 0\n[fetch]\ncache_dir = ""\nbase_url = "{root}"\n'
            '[dataset]\npath = "q.jsonl"\n')
        db = tmp_path / "r.duckdb"
        _clean(*run_cli(*["record", "--config", str(tmp_path / "run.toml"), "--db", str(db), "--no-progress"]))
    assert leaks(store_texts(db))[1] == []
