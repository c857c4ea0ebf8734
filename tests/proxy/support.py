"""A real `searchtrace proxy` in a child process, question files, and reading what a store holds."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchtrace.adapters.sandbox import free_port
from searchtrace.engine import question_file
from searchtrace.pipeline import sandbox_rows
from searchtrace.store import EventLog, Payload, decode_payload
from tests.builders import CLI as CLI
from tests.builders import Served, run_cli, served

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def write_questions(path: Path, n: int) -> list[dict[str, str]]:
    """The first n sandbox questions as a JSONL question file."""
    rows = [{"qid": q.qid, "question": q.question, "answer": q.answer} for q in question_file("sandbox", rows=sandbox_rows("sandbox"))[:n]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


Proxy = Served  # a running `searchtrace proxy`


@contextlib.contextmanager
def proxy(db: Path, questions: Path, run_id: str, *, upstream: str = "sandbox", env: dict[str, str] | None = None,
          log: Path | None = None, extra: tuple[str, ...] = ()) -> Iterator[Proxy]:
    """Start `searchtrace proxy` on a free port; on exit stop it with SIGTERM (if still running)."""
    port = free_port()
    with served(["proxy", "--db", str(db), "--questions", str(questions), "--run-id", run_id, "--port", str(port),
                 "--upstream", upstream, *extra], port, log or db.with_suffix(f".{port}.log"), "proxy",
                env={**os.environ, **(env or {})}, wait_s=30) as p:
        yield p


def run_example(name: str, proxy_url: str, questions: Path, seen: Path, *extra: str) -> str:
    out = subprocess.run([sys.executable, str(EXAMPLES / name), "--proxy", proxy_url, "--questions", str(questions),
                          "--seen", str(seen), *extra], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """A store command (report, judge, export, …) in this process: the servers and agents are the tests' processes."""
    ran = run_cli(*argv)
    return subprocess.CompletedProcess(list(argv), ran.code, ran.out, ran.err)


def streams(db: Path) -> dict[str, list[tuple[int, str, Payload]]]:
    """Every trajectory stream: (stream_seq, event_id, payload) in order."""
    log = EventLog(db, read_only=True)
    try:
        cur = log.cursor()
        rows = cur.execute("SELECT stream_id, stream_seq, event_id::VARCHAR, payload FROM events "
                           "WHERE stream_id LIKE 'traj:%' ORDER BY position").fetchall()
        cur.close()
    finally:
        log.close()
    out: dict[str, list[tuple[int, str, Payload]]] = {}
    for stream, seq, eid, payload in rows:
        out.setdefault(stream, []).append((seq, eid, decode_payload(payload)))
    return out


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
