"""`searchtrace bench otel`: the OTLP receiver (`collect`) against `import --from otel` of the same spans.

Synthetic traces shaped like an instrumented agent's (a root span; per turn an OpenInference chat span whose
request grows with the conversation, a search tool span with ten results, every other turn a fetch) are sent as
protobuf `ExportTraceServiceRequest`s of 512 spans, as the SDK's batching exporter sends them, to `searchtrace
collect` in a child process; its CPU time is read from /proc around the sending. The same spans are then imported from a file
in this process, once through `import --from otel`'s pipeline (which also catches the projections up: the
`shown` replay) and once through the mapping and append alone, the receiver's own work. Reported: spans/s and CPU µs
per span each way, and their ratios (receiver / import); both stores must hold the same number of trajectory events.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import httpx
import msgspec

from searchtrace.replay.interchange import Span, encode_protobuf

BATCH = 512  # spans per export request: the OpenTelemetry SDK's BatchSpanProcessor default (max_export_batch_size)
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def traces(n: int, turns: int) -> list[list[Span]]:
    """n synthetic traces (qid q<i>, provider brave), each `turns` chat spans, searches and some fetches."""
    out = []
    for i in range(n):
        tid = f"{i + 1:032x}"
        root = f"{1:016x}"
        messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools."},
                                          {"role": "user", "content": f"Question {i}?"}]
        spans = [Span(trace_id=tid, span_id=root, name="agent", start_ns=1, end_ns=10**9,
                      attrs={"openinference.span.kind": "AGENT", "searchtrace.qid": f"q{i}",
                             "searchtrace.provider": "brave", "output.value": "FINAL ANSWER: 42"})]
        sid = 2
        t = 1000
        for k in range(turns):
            last = k == turns - 1
            call = {"id": f"c{k}", "type": "function",
                    "function": {"name": "search_web", "arguments": json.dumps({"query": f"q {k}"})}}
            message: dict[str, Any] = {"role": "assistant", "content": "FINAL ANSWER: 42" if last else None,
                                       "tool_calls": None if last else [call]}
            reply = {"choices": [{"message": message, "finish_reason": "stop" if last else "tool_calls"}],
                     "usage": {"prompt_tokens": 100 * (k + 1), "completion_tokens": 20}}
            spans.append(Span(trace_id=tid, span_id=f"{sid:016x}", parent_id=root, name="ChatCompletion",
                              start_ns=t, end_ns=t + 500, attrs={
                                  "openinference.span.kind": "LLM",
                                  "input.value": json.dumps({"model": "m", "messages": messages}),
                                  "output.value": json.dumps(reply)}))
            sid, t = sid + 1, t + 1000
            if last:
                break
            results = [{"url": f"https://site{r}.example/{i}/{k}", "title": f"Result {r} of question {i} turn {k}",
                        "description": "a snippet of the result " * 8} for r in range(10)]
            body = json.dumps({"web": {"results": results}})
            spans.append(Span(trace_id=tid, span_id=f"{sid:016x}", parent_id=root, name="search_web",
                              start_ns=t, end_ns=t + 500, attrs={"openinference.span.kind": "TOOL",
                                                                 "tool.name": "search_web",
                                                                 "input.value": json.dumps({"query": f"q {k}"}),
                                                                 "output.value": body}))
            messages += [message, {"role": "tool", "tool_call_id": f"c{k}", "content": body}]
            sid, t = sid + 1, t + 1000
            if k % 2:
                spans.append(Span(trace_id=tid, span_id=f"{sid:016x}", parent_id=root, name="fetch_page",
                                  start_ns=t, end_ns=t + 500, attrs={
                                      "openinference.span.kind": "TOOL", "tool.name": "fetch_page",
                                      "input.value": json.dumps({"url": results[0]["url"]}),
                                      "output.value": "# Page\n\n" + "text of the page " * 200}))
                sid, t = sid + 1, t + 1000
        out.append(spans[1:] + spans[:1])  # the root ends last, so an exporter sends it last
    return out


def _events(db: Path) -> int:
    """The trajectory events of a store (collect opens its run besides, an import records its questions instead)."""
    from searchtrace.store import EventLog

    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        try:
            row = cur.execute("SELECT count(*) FROM events WHERE stream_id LIKE 'traj:%'").fetchone()
        finally:
            cur.close()
        return int(row[0]) if row else 0


def run(n: int = 200, turns: int = 5) -> dict[str, Any]:
    from searchtrace.engine import question_file
    from searchtrace.pipeline import import_otel
    from searchtrace.replay.interchange import import_spans, requests_in
    from searchtrace.store import EventLog

    data = traces(n, turns)
    flat = [s for spans in data for s in spans]
    bodies = [encode_protobuf(flat[i:i + BATCH], "bench") for i in range(0, len(flat), BATCH)]
    n_spans = len(flat)
    with tempfile.TemporaryDirectory() as tmp:
        q = Path(tmp) / "q.jsonl"
        q.write_text("".join(json.dumps({"qid": f"q{i}", "question": f"Question {i}?", "answer": "42"}) + "\n"
                             for i in range(n)))
        cdb = Path(tmp) / "collect.duckdb"
        proc = subprocess.Popen([sys.executable, "-c", "from searchtrace.cli import main; main()", "collect",
                                 "--db", str(cdb), "--questions", str(q), "--run-id", "bench", "--port", "0"],
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            ready = proc.stderr.readline()  # "… OTLP/HTTP endpoint http://127.0.0.1:PORT/v1/traces" once it listens
            if "endpoint " not in ready:
                raise click.ClickException(f"collect did not start: {ready.strip()}")
            with httpx.Client(timeout=60) as client:
                url = ready.rsplit("endpoint ", 1)[1].strip()
                headers = {"Content-Type": "application/x-protobuf"}
                cpu0, t0 = _cpu_s(proc.pid), time.perf_counter()
                for body in bodies:
                    r = client.post(url, content=body, headers=headers)
                    if r.status_code != 200:
                        raise click.ClickException(f"collect answered {r.status_code}: {r.text[:200]}")
                wall_c, cpu_c = time.perf_counter() - t0, _cpu_s(proc.pid) - cpu0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
        f = Path(tmp) / "spans.pb"
        f.write_bytes(encode_protobuf(flat, "bench"))
        idb = Path(tmp) / "import.duckdb"
        cpu0, t0 = time.process_time(), time.perf_counter()
        import_otel(idb, [f], questions=str(q), run_id="bench")
        wall_i, cpu_i = time.perf_counter() - t0, time.process_time() - cpu0
        same = _events(cdb) == _events(idb)
        # the same work as the receiver's (decode, map, append), without the import's projection catch-up (the
        # `shown` replay the receiver leaves to the first report)
        cpu0 = time.process_time()
        with EventLog(Path(tmp) / "core.duckdb") as log:
            import_spans(log, requests_in(f.read_bytes(), str(f)), run_id="bench",
                         questions=question_file(str(q)))
        cpu_core = time.process_time() - cpu0
    out: dict[str, Any] = {"traces": n, "spans": n_spans,
           "receiver_spans_per_s": round(n_spans / wall_c, 1), "import_spans_per_s": round(n_spans / wall_i, 1),
           "receiver_cpu_us_per_span": round(cpu_c / n_spans * 1e6, 1),
           "import_cpu_us_per_span": round(cpu_i / n_spans * 1e6, 1),
           "import_core_cpu_us_per_span": round(cpu_core / n_spans * 1e6, 1)}
    out["throughput_ratio"] = round(out["receiver_spans_per_s"] / out["import_spans_per_s"], 3)
    out["cpu_ratio"] = round(cpu_c / cpu_i, 3) if cpu_i else None
    out["core_cpu_ratio"] = round(cpu_c / cpu_core, 3) if cpu_core else None
    out["same_events"] = same
    return out


@click.command("otel")
@click.option("--traces", "n", default=200, show_default=True, type=click.IntRange(1), help="Traces (trajectories).")
@click.option("--turns", default=5, show_default=True, type=click.IntRange(1, 100), help="Model turns per trace.")
@click.option("--json", "as_json", is_flag=True)
def command(n: int, turns: int, as_json: bool) -> None:
    """Receiver (`collect`, OTLP/HTTP protobuf) spans/s and CPU per span against `import --from otel`, as ratios."""
    result = run(n, turns)
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    click.echo(f"otel, {result['traces']} traces / {result['spans']} spans: receiver {result['receiver_spans_per_s']} "
               f"spans/s, {result['receiver_cpu_us_per_span']} µs CPU per span; import {result['import_spans_per_s']} "
               f"spans/s, {result['import_cpu_us_per_span']} µs CPU per span ({result['import_core_cpu_us_per_span']} µs "
               f"without its projection catch-up); receiver/import throughput {result['throughput_ratio']}x, CPU "
               f"{result['cpu_ratio']}x ({result['core_cpu_ratio']}x against the catch-up-free import); same events: "
               f"{result['same_events']}")
    if not result["same_events"]:
        raise SystemExit(1)
