"""`searchtrace collect` under faults (docs/reliability.md "collect"): an exporter's retry after a SIGKILL restart
adds nothing and answers 200; a span after its trace's root is refused with a partial-success status; a gzip body
cut short is a 400 and one inflating past --max-body a 413, neither recording anything; the spans held for traces
that have not named their question are bounded by bytes as well as by count."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from searchtrace.adapters.sandbox import free_port, wait_listening
from searchtrace.engine import Question
from searchtrace.replay.interchange import Collector, decode_spans, import_spans
from searchtrace.store import EventLog, ModelResponded
from tests.builders import trajectories
from tests.otel.test_otel_hostile import T1, T2, good_trace, request, span, tool
from tests.proxy.support import CLI

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

QUESTIONS = [Question(qid="q1", question="Who?", answer="Alpha"), Question(qid="q2", question="Where?", answer="B")]


def _questions(path: Path) -> Path:
    path.write_text("".join(json.dumps({"qid": q.qid, "question": q.question, "answer": q.answer}) + "\n"
                            for q in QUESTIONS))
    return path


@contextmanager
def collecting(db: Path, questions: Path, *extra: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real `collect` in a child process; its endpoint URL. Stopped by SIGTERM unless the test killed it."""
    port = free_port()
    with db.with_suffix(".log").open("ab") as err:
        proc = subprocess.Popen([sys.executable, "-c", CLI, "collect", "--db", str(db), "--questions", str(questions),
                                 "--run-id", "r", "--port", str(port), "--provider", "tavily", *extra],
                                stdout=err, stderr=err)
    try:
        wait_listening(port, proc, 30, "collect")
        yield f"http://127.0.0.1:{port}/v1/traces", proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0  # a hang guard: a loaded machine may take seconds to stop a server


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _counts(db: Path) -> tuple[int, int]:
    """(events, model turns) in the store."""
    with EventLog(db, read_only=True) as log:
        got = [p for ps in trajectories(log).values() for p in ps]
        return log.head, sum(isinstance(p, ModelResponded) for p in got)


def test_a_retry_after_a_sigkill_restart_adds_nothing_and_the_trace_completes_as_one_import(tmp_path: Path) -> None:
    doc = good_trace()
    root, rest = _spans(doc)[0], _spans(doc)[1:]
    first = request(*rest[:3])  # a model turn and two searches, no root: the trajectory stays open
    db, qfile = tmp_path / "c.duckdb", _questions(tmp_path / "q.jsonl")
    with collecting(db, qfile) as (url, proc):
        assert httpx.post(url, json=first, timeout=HANG_S).status_code == 200  # committed before the reply
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    events, turns = _counts(db)
    assert turns == 1
    with collecting(db, qfile) as (url, _):
        retry = httpx.post(url, json=first, timeout=HANG_S)  # the exporter never saw the reply: it sends the batch again
        assert retry.status_code == 200 and retry.json() == {}, retry.text
        assert _counts_live(db) == (events, 1)
        done = httpx.post(url, json=request(*rest[3:], root), timeout=HANG_S)  # the later spans carry no qid: found by trace id
        assert done.status_code == 200 and done.json() == {}, done.text
    with EventLog(db, read_only=True) as log:
        collected = trajectories(log)
    with EventLog(tmp_path / "i.duckdb") as log:
        import_spans(log, [("t", decode_spans(json.dumps(good_trace()).encode(), "t"))], run_id="r",
                     questions=QUESTIONS, provider="tavily")
        imported = trajectories(log)
    assert collected == imported and sum(isinstance(p, ModelResponded) for p in collected["r:tavily:q1"]) == 3


def _counts_live(db: Path) -> tuple[int, int]:
    """_counts through `sql` while collect holds the file (its read socket)."""
    out = subprocess.run([sys.executable, "-c", CLI, "sql", "--db", str(db), "--json",
                          "SELECT count(*) AS n, count(*) FILTER (WHERE type = 'model.responded') AS m FROM events"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)[0]
    return row["n"], row["m"]


def test_late_spans_and_cut_or_oversized_gzip_bodies_are_refused_with_a_status(tmp_path: Path) -> None:
    db, qfile = tmp_path / "c.duckdb", _questions(tmp_path / "q.jsonl")
    with collecting(db, qfile, "--max-body", "64KiB") as (url, _):
        assert httpx.post(url, json=good_trace(), timeout=HANG_S).status_code == 200  # the whole trace, root included
        before = _counts_live(db)
        again = httpx.post(url, json=good_trace(), timeout=HANG_S)  # an exporter's retry of a finished trace: a repeat, no refusal
        assert again.status_code == 200 and again.json() == {}, again.text
        late = httpx.post(url, json=request(tool(T1, 40, 40, "fetch_page", {"url": "https://b.example/y"}, "# B")), timeout=HANG_S)
        assert late.status_code == 200, late.text
        said = late.json()["partialSuccess"]
        assert said["rejectedSpans"] == "1" and "has ended" in said["errorMessage"], said
        whole = json.dumps(good_trace(T2, "q2")).encode() + b" " * 4096
        packed = gzip.compress(whole)
        for cut in (packed[:-8], packed[:-4], packed[: len(packed) // 2]):  # the trailer or the stream cut short
            r = httpx.post(url, content=cut, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}, timeout=HANG_S)
            assert r.status_code == 400 and "cut short" in r.json()["error"], r.text
        bomb = httpx.post(url, content=gzip.compress(b" " * (65 << 10)),
                          headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}, timeout=HANG_S)
        assert bomb.status_code == 413 and "--max-body" in bomb.json()["error"], bomb.text
        assert _counts_live(db) == before  # none of them recorded anything
        two = gzip.compress(whole[:100]) + gzip.compress(whole[100:])  # gzip members in a row: one body
        ok = httpx.post(url, content=two, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}, timeout=HANG_S)
        assert ok.status_code == 200 and ok.json() == {}, ok.text
        assert _counts_live(db)[0] > before[0]


def _unnamed(trace: str, n: int, size: int) -> list[Any]:
    """n chat spans of a trace that never names its question, each with `size` bytes of output."""
    doc = request(*(span(trace, k + 2, 1, k + 2, **{"gen_ai.operation.name": "chat", "output.value": "x" * size})
                    for k in range(n)))
    return decode_spans(json.dumps(doc).encode(), "t")


def test_spans_held_for_unnamed_traces_are_bounded_by_bytes(tmp_path: Path) -> None:
    cap = 1 << 20
    c = Collector("r", QUESTIONS, provider=None, max_held_bytes=cap)
    refused, whys = 0, set()
    for k in range(12):  # 12 traces of 3 spans of 100 KiB: 3.6 MB, far under the span count bound
        _, _, rejected, why = c.add(_unnamed(f"{k + 1:032x}", 3, 100 << 10))
        assert c.held_bytes <= cap and c.held_bytes == sum(c.held_size.values())
        refused += rejected
        whys.add(why)
    assert c.n_held < 3 * 12 and refused == 3 * 12 - c.n_held, (c.n_held, refused)
    assert any(f"{cap} bytes" in w for w in whys), whys
    # a refused trace stays refused: its later spans are told so, not held
    _, _, rejected, why = c.add(_unnamed(f"{12:032x}", 1, 10))
    assert rejected == 1 and "refused" in why and c.held_bytes <= cap
    # room is made when a held trace names its question: it is mapped and its bytes are let go
    named = decode_spans(json.dumps(request(span(f"{1:032x}", 1, None, 1, **{
        "gen_ai.operation.name": "invoke_agent", "searchtrace.qid": "q1", "searchtrace.provider": "tavily"}))).encode(),
        "t")
    events, _, rejected, _ = c.add(named)
    assert rejected == 0 and events and c.held_bytes < cap - (300 << 10)


def test_a_failed_append_answers_503_and_the_retry_is_recorded(tmp_path: Path) -> None:
    """What a request mapped is forgotten when the store refuses it (collect reads the store back), so the
    exporter's retry records it rather than being taken for a repeat."""
    import anyio

    from searchtrace.pipeline._collecting import Receiver

    async def main() -> tuple[int, int, int]:
        with EventLog(tmp_path / "c.duckdb") as log:
            collector = Collector("r", QUESTIONS, provider="tavily")
            collector.restore(log)

            class Flaky:
                fails = 1

                async def append(self, events: list[Any], blobs: list[bytes]) -> None:
                    if self.fails:
                        self.fails -= 1
                        raise OSError("no room")
                    log.append(events, blobs=blobs)

            app = Receiver(collector, Flaky(), 1 << 20, log).app()  # type: ignore[arg-type]
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8123") as c:
                first = (await c.post("/v1/traces", json=good_trace())).status_code
                head = log.head
                retry = (await c.post("/v1/traces", json=good_trace())).status_code
            return first, head, retry

    first, head, retry = anyio.run(main)
    assert (first, head, retry) == (503, 0, 200)
    with EventLog(tmp_path / "c.duckdb", read_only=True) as log:
        collected = trajectories(log)
    with EventLog(tmp_path / "i.duckdb") as log:
        import_spans(log, [("t", decode_spans(json.dumps(good_trace()).encode(), "t"))], run_id="r",
                     questions=QUESTIONS, provider="tavily")
        assert collected == trajectories(log)
