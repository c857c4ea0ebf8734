"""Test builders shared across the suite: the in-process CLI runner, the fast sandbox run config, docs/reference/interchange.md trace
lines (a trajectory builder), and reading a recorded store back (trajectories, a verified chain).

Domain fixtures stay beside their tests: the hand-computed trace dataset (tests/analytics/analytics_fixture.py), the
superseded-attempts store (tests/analytics/attempts_fixture.py), one example of every event
(tests/store/store_support.py), the agent-loop fakes (tests/engine/fakes.py), the adapter wire helpers
(tests/adapters/support.py, sandbox_support.py) and the sandbox wire harness (tests/adapters/sandbox/harness.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import msgspec

from searchtrace.adapters import TRACE_HEADER_RAW
from searchtrace.adapters.sandbox import wait_listening
from searchtrace.cli import main
from searchtrace.engine import RunConfig, parse_config
from searchtrace.store import EventLog, ModelResponded, Payload, Usage, verify

KINDS = ("brave", "tavily", "firecrawl")


# --- the command line, in this process ---------------------------------------------------------------------------

class Ran(NamedTuple):
    code: int
    out: str
    err: str


def run_cli(*argv: str) -> Ran:
    """`searchtrace ARGV` in this process: exit code as the installed command gives it, stdout, stderr."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # with a .buffer, as commands writing bytes expect
    err = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    return Ran(code, out.buffer.getvalue().decode("utf-8", "replace"), err.getvalue())


# --- a command-line server in a child process ---------------------------------------------------------------------

CLI = "from searchtrace.cli import main; main()"


class Served:
    """A running server child: its root URL, its process and the file its stderr goes to."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc, self.url, self.log = proc, url, log

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(60)  # a hang guard: a loaded machine may take seconds to stop a server


@contextlib.contextmanager
def served(argv: list[str], port: int, log: Path, what: str, *, env: dict[str, str],
           wait_s: float) -> Iterator[Served]:
    """`searchtrace ARGV` listening on `port` (output to `log`); on exit stopped with SIGTERM if still running."""
    with log.open("ab") as err:
        proc = subprocess.Popen([sys.executable, "-c", CLI, *argv], stdout=err, stderr=err, env=env)
    s = Served(proc, f"http://127.0.0.1:{port}", log)
    try:
        try:
            wait_listening(port, proc, wait_s, what)
        except RuntimeError:
            raise RuntimeError(f"{what} did not start: {log.read_text()}") from None
        yield s
    finally:
        if proc.poll() is None:
            s.stop()


# --- a fast run config for the sandbox personas ------------------------------------------------------------------

def sandbox_config(tmp: Path, *, n: int | None = 6, dataset: str = "sandbox", **over: Any) -> RunConfig:
    """A run config for the sandbox personas with fast, test-friendly limits; `over` merges per top-level key."""
    ep = {"rps": 10_000.0, "concurrency": 16, "timeout_s": 5.0, "max_retries": 2, "max_wait_s": 0.05}
    data: dict[str, Any] = {
        "run_id": "t",
        "agent": {"model": "sandbox-agent", **ep},
        "providers": {k: dict(ep) for k in KINDS},
        "fetch": {**ep, "cache_dir": ""},
        "limits": {"max_trajectories": 8},
        "dataset": {"path": dataset},
        "sample": {"n": n, "seed": "t"},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            for k, v in value.items():
                if isinstance(v, dict) and isinstance(data[key].get(k), dict):
                    data[key][k] = {**data[key][k], **v}
                else:
                    data[key][k] = v
        else:
            data[key] = value
    return parse_config(data, "<test>")


class Capture:
    """Wraps the sandbox app; keeps the messages of every chat request per trace id, in arrival order."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state
        self.chats: dict[str, list[list[dict[str, Any]]]] = defaultdict(list)
        self.arrivals: list[tuple[str, str, float]] = []  # (trace id, path, perf_counter) of every request

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            trace_id = dict(scope["headers"]).get(TRACE_HEADER_RAW, b"").decode()
            self.arrivals.append((trace_id, scope["path"], time.perf_counter()))
        if scope.get("type") != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        trace = dict(scope["headers"]).get(TRACE_HEADER_RAW, b"").decode()
        self.chats[trace].append(msgspec.json.decode(body)["messages"])
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


# --- a recorded store, read back ---------------------------------------------------------------------------------

def trajectories(log: EventLog) -> dict[str, list[Payload]]:
    """trajectory_id -> payloads in stream order."""
    out: dict[str, list[Payload]] = defaultdict(list)
    for ev in log.read():
        if ev.stream_id.startswith("traj:"):
            out[ev.stream_id[len("traj:") :]].append(ev.payload)
    return dict(out)


def check_chain(db: Path) -> None:
    """`searchtrace verify` (positions gap-free, stream sequences 0.., hash chain) on the store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        report = verify(con)
    finally:
        con.close()
    assert report.ok, report.line()


# --- docs/reference/interchange.md trace lines: a trajectory builder -------------------------------------------------------------------

def result(doc_id: str, rank: int, url: str, snippet: str = "") -> dict[str, Any]:
    """One search result of a trace line."""
    return {"doc_id": doc_id, "rank": rank, "title": f"T {doc_id}", "url": url, "domain": "", "snippet": snippet,
            "metadata": {"age": "1d"}}


def model(it: int, i: int, o: int, reasoning: int = 0, latency: float = 1000.0) -> dict[str, Any]:
    return {"kind": "model", "iteration": it, "usage": {"input_tokens": i, "output_tokens": o,
            "reasoning_tokens": reasoning}, "latency_ms": latency}


def search(it: int, call_id: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "search", "iteration": it, "call_id": call_id, "query": f"q {call_id}", "latency_ms": 500,
            "results": results}


def fetch(it: int, call_id: str, doc_id: str, url: str, status: str, content: str | None) -> dict[str, Any]:
    return {"kind": "fetch", "iteration": it, "call_id": call_id, "doc_id": doc_id, "url": url, "status": status,
            "content": content, "n_tokens": 40 if status == "ok" else 0, "latency_ms": 250}


def traj(tid: str, provider: str, qid: str, gold: str, final: str | None, steps: list[dict[str, Any]],
         stop: str = "answered") -> dict[str, Any]:
    """One trajectory as a docs/reference/interchange.md trace line."""
    return {"trajectory_id": tid, "provider": provider, "qid": qid, "question": f"What is {qid}?",
            "gold_answer": gold, "final_answer": final, "stop_reason": stop, "steps": steps}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    return path


def _interruptible() -> None:
    """In the child before exec: SIGINT at its default and unblocked, as in a terminal (a test runner's worker may
    have inherited it ignored or blocked, and a child keeps an ignored SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


INTERRUPTIBLE: dict[str, Any] = {"preexec_fn": _interruptible}
"""Popen keywords for a child the test will stop with SIGINT (Ctrl-C)."""


def signal_state(pid: int) -> str:
    """The child's blocked and ignored signal masks, for a failure message."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "(process gone)"
    return " ".join(line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


def summed_usage(turns: list[ModelResponded]) -> Usage:
    """The four usage numbers summed over model calls (what a trajectory's usage must equal)."""
    return Usage(input_tokens=sum(t.usage.input_tokens for t in turns),
                 output_tokens=sum(t.usage.output_tokens for t in turns),
                 reasoning_tokens=sum(t.usage.reasoning_tokens for t in turns),
                 cached_tokens=sum(t.usage.cached_tokens for t in turns))
