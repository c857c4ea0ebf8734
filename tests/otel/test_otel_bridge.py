"""docs/how-to/otel.md end to end: an agent on the official `openai` client, instrumented by OpenInference and exported by the
official OTLP/HTTP exporter to `searchtrace collect`, against the sandbox, gives the report the same agent gives
through `searchtrace proxy`; `collect` is a local OTLP server; `export --otlp` reaches a real OTLP receiver and
`export --otlp-file` → `import --from otel` reproduces the report."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from searchtrace.adapters.sandbox import free_port, running, wait_listening
from searchtrace.store import DatasetQuestion, EventLog, ModelResponded, RunStarted
from tests.proxy.support import CLI, EXAMPLES, cli, proxy, streams, write_questions

LATENCY = ("latency", "_ms")


def figures(db: Path) -> dict[str, Any]:
    """`report --json` per provider, latency keys aside."""
    rep = cli("report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    providers = json.loads(rep.stdout)["providers"]
    return {p: {k: v for k, v in fig.items() if not any(w in k for w in LATENCY)} for p, fig in providers.items()}


def agent(questions: Path, *way: str, script: str = "otel_agent.py") -> str:
    out = subprocess.run([sys.executable, str(EXAMPLES / script), "--questions", str(questions), *way],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout


@contextmanager
def collecting(db: Path, questions: Path, run_id: str) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    log = db.with_suffix(".log")
    with log.open("ab") as err:
        proc = subprocess.Popen([sys.executable, "-c", CLI, "collect", "--db", str(db), "--questions", str(questions),
                                 "--run-id", run_id, "--port", str(port), "--provider", "brave"], stdout=err, stderr=err)
    try:
        wait_listening(port, proc, 30, "collect")
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


class Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that parses each request with opentelemetry-proto (no collector needed)."""

    got: list[ExportTraceServiceRequest] = []
    auth: list[str | None] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces":  # as an OTLP collector answers any other route (Phoenix's annotations)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        assert self.headers["Content-Type"] == "application/x-protobuf"
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        Receiver.got.append(req)
        Receiver.auth.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_collected_spans_report_as_the_proxy_does_and_round_trip(tmp_path: Path) -> None:
    qfile, two, one = tmp_path / "q.jsonl", tmp_path / "q2.jsonl", tmp_path / "q1.jsonl"
    rows = write_questions(qfile, 3)
    two.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    one.write_text(json.dumps(rows[2]) + "\n")
    cdb, pdb = tmp_path / "collected.duckdb", tmp_path / "proxied.duckdb"
    with collecting(cdb, qfile, "mine") as (port, proc), running() as sandbox:
        url = f"http://127.0.0.1:{port}/v1/traces"
        out = agent(two, "--base", sandbox, "--otlp", url)  # tavily, qid and provider as span attributes
        # a second instrumentor: the Agents SDK (Responses API) through OpenInference's processor, brave (collect's
        # --provider), its question found by its text
        sdk = agent(one, "--base", sandbox, "--otlp", url, script="openai_agents_agent.py")
        assert f"{rows[2]['qid']}: {rows[2]['answer']}" in sdk
        # reads while collect holds the file (docs/how-to/explorer.md): every trajectory committed as its root span arrived
        live = cli("sql", "--db", str(cdb), "--json", "SELECT count(*) AS n FROM events WHERE type = 'answer.final'")
        assert live.returncode == 0 and json.loads(live.stdout)[0]["n"] == 3, live.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    with proxy(pdb, qfile, "mine") as p:
        assert agent(two, "--proxy", p.url) == out
        assert agent(one, "--proxy", p.url, script="openai_agents_agent.py") == sdk
    for row in rows[:2]:
        assert f"{row['qid']}: {row['answer']}" in out
    with EventLog(cdb, read_only=True) as log:  # collect opens its run as proxy and record do
        opening = [ev.payload for ev in log.read(stream_id="run:mine")]
    assert isinstance(opening[0], RunStarted) and "collect" in opening[0].config
    assert [q.qid for q in opening[1:] if isinstance(q, DatasetQuestion)] == [r["qid"] for r in rows]
    collected = streams(cdb)
    assert sorted(collected) == sorted(streams(pdb)) and len(collected) == 3
    for events in collected.values():  # the requests are evidence (docs/concepts/shown.md): shown is a replay, not an assumption
        turns = [e for _, _, e in events if isinstance(e, ModelResponded)]
        assert turns and all(t.request_messages for t in turns)
    for db in (cdb, pdb):
        j = cli("judge", "--db", str(db), "--sandbox", "--json")
        assert j.returncode == 0, j.stderr
    want = figures(pdb)
    assert figures(cdb) == want
    assert set(want) == {"tavily", "brave"}
    assert all(f["valid_items"] > 0 and f["results_shown"] > 0 for f in want.values())
    # out: to a real OTLP receiver (protobuf, parsed with opentelemetry-proto), and to a file that imports back
    Receiver.got = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sent = subprocess.run([sys.executable, "-c", CLI, "export", "--db", str(pdb), "--otlp",
                               f"http://127.0.0.1:{server.server_address[1]}"], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20eA=="})
        assert sent.returncode == 0, sent.stderr
        assert "eA==" not in sent.stdout + sent.stderr and Receiver.auth == ["Basic eA=="]  # OpenTelemetry's variable
        assert "no Phoenix span-annotation route" in sent.stderr  # a plain OTLP receiver: verdicts as span events
    finally:
        server.shutdown()
        server.server_close()
    spans = [s for req in Receiver.got for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == 3 and len({bytes(s.trace_id) for s in spans}) == 3
    attrs = {kv.key: kv.value for kv in roots[0].attributes}
    assert attrs["gen_ai.operation.name"].string_value == "invoke_agent"
    parts = {k: sum(int({kv.key: kv.value for kv in r.attributes}[f"searchtrace.partition.{k}"].int_value)
                    for r in roots) for k in ("SMART", "MISSED", "BLIND", "NO-OP")}
    assert parts == {k: sum(f["partition"][k] for f in want.values()) for k in parts}
    ops = {kv.value.string_value for s in spans for kv in s.attributes if kv.key == "gen_ai.operation.name"}
    assert ops == {"invoke_agent", "chat", "execute_tool"}
    verdicts = [e for s in spans for e in s.events if e.name == "searchtrace.verdict"]
    assert len(verdicts) >= sum(f["valid_items"] for f in want.values())
    out_file = tmp_path / "traces.otlp.jsonl"
    assert cli("export", "--db", str(pdb), "--otlp-file", str(out_file)).returncode == 0
    assert cli("export", "--db", str(pdb), "--otlp-file", str(tmp_path / "again.jsonl")).returncode == 0
    assert (tmp_path / "again.jsonl").read_bytes() == out_file.read_bytes()  # deterministic ids and bytes
    rdb = tmp_path / "round.duckdb"
    imp = cli("import", "--db", str(rdb), "--from", "otel", str(out_file))
    assert imp.returncode == 0, imp.stderr
    assert figures(rdb) == want  # the verdicts travel as span events, so no judge runs again
    twice = cli("import", "--db", str(rdb), "--from", "otel", str(out_file))
    assert twice.returncode == 0 and twice.stdout.rstrip().endswith(" 0 new events"), twice.stdout


def test_collect_refuses_foreign_oversized_and_unknown_requests_in_one_json_line(tmp_path: Path) -> None:
    """docs/concepts/security.md: a foreign Host, a cross-site page, a form body, an oversized or deeply nested body are
    refused in one JSON line and record nothing; a trace naming an unknown qid is rejected as OTLP partial success.
    collect's own app (its local-server guard included) over a real store, in this process."""
    import anyio

    from searchtrace.engine import Question
    from searchtrace.pipeline._collecting import MAX_BODY, Receiver
    from searchtrace.replay.interchange import Collector
    from searchtrace.store import open_writer

    async def main() -> int:
        with EventLog(tmp_path / "c.duckdb") as log:
            collector = Collector("mine", [Question(qid="q1", question="Who?", answer="A")], provider="brave")
            async with open_writer(log, max_delay=0.0) as writer:
                app = Receiver(collector, writer, MAX_BODY, log).app()
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                             base_url="http://127.0.0.1:8123") as client:
                    await refused(client)
            return log.head

    async def refused(client: httpx.AsyncClient) -> None:
        url = "/v1/traces"
        assert (await client.post(url, content=b"{}", headers={"Host": "evil.example",
                                                                "Content-Type": "application/json"})).status_code == 421
        assert (await client.post(url, content=b"{}", headers={"Origin": "http://evil.example",
                                                                "Content-Type": "application/json"})).status_code == 403
        assert (await client.post(url, content=b"{}", headers={"Content-Type": "text/plain"})).status_code == 415
        big = await client.post(url, content=b"x" * (17 << 20), headers={"Content-Type": "application/x-protobuf"})
        assert big.status_code == 413 and "error" in big.json()
        deep = await client.post(url, content=b"[" * 100 + b"]" * 100, headers={"Content-Type": "application/json"})
        assert deep.status_code == 400 and "nested" in deep.json()["error"]
        bomb = await client.post(url, content=gzip.compress(b"\0" * (17 << 20)),
                                 headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
        assert bomb.status_code == 413 and "inflates" in bomb.json()["error"]
        junk = await client.post(url, content=b"\xff\xfe not protobuf", headers={"Content-Type": "application/x-protobuf"})
        assert junk.status_code == 400 and len(junk.text.strip().splitlines()) == 1
        stray = {"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "agent",
            "attributes": [{"key": "searchtrace.qid", "value": {"stringValue": "no-such-qid"}},
                           {"key": "searchtrace.provider", "value": {"stringValue": "tavily"}},
                           {"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}}]}]}]}]}
        r = await client.post(url, json=stray)
        assert r.status_code == 200 and r.json()["partialSuccess"]["rejectedSpans"] == "1"

    assert anyio.run(main) == 0  # nothing of any of them was recorded
