"""`searchtrace bench proxy`: latency the recording proxy adds to one call, against the same call made directly.

A sandbox server (uvicorn) and `searchtrace proxy --upstream live` (its base-URL variables pointing at that server)
run as child processes on 127.0.0.1. One client alternates, call by call, a direct request to the sandbox and the
same request through the proxy (`/t/<provider>/<qid>/…`, a new trajectory every few calls), so both see the same
machine load. Added latency = percentile of proxied minus the same percentile of direct. Target (issue 14):
added p50 <= 2 ms.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import httpx
import msgspec

from searchtrace.adapters import Secret, api_headers, call_path, request_body
from searchtrace.benchmarks._http import sandbox_server

TARGET_P50_MS = 2.0

def _conversation() -> dict[str, Any]:
    """A chat request as an agent's third turn sends it (system, question, two searches with ten results each as
    tool messages): the proxy stores each of its messages as request evidence (docs/concepts/shown.md)."""
    docs = "\n\n".join(f"<document doc_id=\"d{i}\" rank=\"{i}\"><title>Elmwyn Athletic page {i}</title>"
                        f"<url>https://site{i}.example/elmwyn/{i}</url><snippet>{'Elmwyn Athletic was founded ' * 12}"
                        f"</snippet></document>" for i in range(1, 11))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Use the tools, then reply `FINAL ANSWER: <answer>`."},
                                      {"role": "user", "content": "What is the founding year of Elmwyn Athletic?"}]
    for turn in (1, 2):
        call = {"id": f"call_{turn}", "type": "function",
                "function": {"name": "search_web", "arguments": f'{{"query": "Elmwyn Athletic founded {turn}"}}'}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"call_{turn}", "content": docs}]
    tools = [{"type": "function", "function": {"name": "search_web", "description": "Search the web.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    return {"model": "sandbox-agent", "messages": messages, "tools": tools}


def _as(api: str, stream: bool = False) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The same conversation over another model API: its path below the sandbox root, headers and body (each made
    by the API's own wire module)."""
    chat = _conversation()
    body = request_body(api, chat["model"], chat["messages"], chat["tools"], None, {})  # type: ignore[arg-type]
    if stream and api == "anthropic":
        body["stream"] = True
    headers = api_headers(api, Secret("client-key"))
    prefix = "openai/v1" if api == "responses" else api  # the Responses API is OpenAI's, beside chat
    return f"{prefix}/{call_path(api, chat['model'], stream=stream)}", headers, body


# route -> (path below the sandbox root, headers, JSON body or None for a GET)
ROUTES: dict[str, tuple[str, dict[str, str], dict[str, Any] | None]] = {
    "brave": ("brave/res/v1/web/search?q=founding+year+athletic&count=10", {"X-Subscription-Token": "client-key"}, None),
    "jina": ("jina/https://wikiverse.example/wiki/Elmwyn_Athletic", {"Accept": "application/json"}, None),
    "chat": ("openai/v1/chat/completions", {"Authorization": "Bearer client-key"}, _conversation()),
    "chat-stream": ("openai/v1/chat/completions", {"Authorization": "Bearer client-key"},
                    {**_conversation(), "stream": True}),
    "responses": _as("responses"),
    "anthropic": _as("anthropic"),
    "anthropic-stream": _as("anthropic", stream=True),
    "gemini": _as("gemini"),
    "gemini-stream": _as("gemini", stream=True),
}


@contextlib.contextmanager
def proxy_server(db: Path, questions: str, root: str, run_id: str = "bench", timeout_s: float = 30.0,
                 durable: bool = False) -> Iterator[tuple[str, int]]:
    """`searchtrace proxy --upstream live` in a child process, every endpoint at `root`: its URL and pid; stopped by
    its pid."""
    from searchtrace.adapters.sandbox import base_urls, env_exports, free_port, wait_listening

    port = free_port()
    # every key the proxy holds is one it scrubs from replies: none may be a word of a sandbox reply ("sandbox-agent")
    exports = {k: ("proxy-key" if k.endswith("_KEY") else v) for k, v in env_exports(base_urls(root)).items()}
    env = {**os.environ, **exports, "BRAVE_API_KEY": "proxy-key", "JINA_API_KEY": "proxy-key",
           "OPENAI_API_KEY": "proxy-key", "ANTHROPIC_API_KEY": "proxy-key", "GEMINI_API_KEY": "proxy-key"}
    proc = subprocess.Popen([sys.executable, "-c", "from searchtrace.cli import main; main()", "proxy", "--db", str(db),
                             "--questions", questions, "--run-id", run_id, "--port", str(port), "--upstream", "live",
                             *(["--durable"] if durable else [])],
                            env=env, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc, timeout_s, "proxy")
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(calls: int, route: str, per_trajectory: int = 10, durable: bool = False) -> dict[str, Any]:
    """`calls` direct and `calls` proxied requests, interleaved; percentiles in ms and the added latency."""
    from searchtrace.engine import question_file
    from searchtrace.pipeline import sandbox_rows

    path, headers, body = ROUTES[route]
    method = "GET" if body is None else "POST"
    qids = [q.qid for q in question_file("sandbox", rows=sandbox_rows("sandbox"))]
    with tempfile.TemporaryDirectory() as tmp, sandbox_server() as root, \
            proxy_server(Path(tmp) / "bench.duckdb", "sandbox", root, durable=durable) as (proxy, pid), \
            httpx.Client(timeout=30) as client:
        direct: list[float] = []
        proxied: list[float] = []
        cpu0 = 0.0
        for i in range(calls + 5):  # 5 warm-up pairs, not counted
            qid = qids[(i // per_trajectory) % len(qids)]
            epoch = 1 + (i // (per_trajectory * len(qids)))
            t0 = time.perf_counter()
            a = client.request(method, f"{root}/{path}", headers=headers, json=body)
            t1 = time.perf_counter()
            b = client.request(method, f"{proxy}/t/brave/{qid}/{path}", json=body,
                               headers={**headers, "X-Searchtrace-Epoch": str(epoch)})
            t2 = time.perf_counter()
            if a.status_code != 200 or b.status_code != 200 or a.content != b.content:
                raise click.ClickException(f"call {i}: direct {a.status_code}, proxied {b.status_code} (bodies differ: "
                                   f"{a.content != b.content})")
            if i == 4:  # the warm-up done: the proxy's CPU from here on
                cpu0 = cpu_seconds(pid)
            if i >= 5:
                direct.append((t1 - t0) * 1000)
                proxied.append((t2 - t1) * 1000)
        cpu_ms = (cpu_seconds(pid) - cpu0) * 1000 / calls
    out: dict[str, Any] = {"route": route, "calls": calls, "durable": durable}
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        out[f"direct_{name}_ms"] = round(_pct(direct, q), 3)
        out[f"proxied_{name}_ms"] = round(_pct(proxied, q), 3)
        out[f"added_{name}_ms"] = round(_pct(proxied, q) - _pct(direct, q), 3)
    out["added_mean_ms"] = round(statistics.fmean(proxied) - statistics.fmean(direct), 3)
    out["proxy_cpu_ms_per_call"] = round(cpu_ms, 3)  # every thread of the proxy: what load cannot inflate much
    out["target_p50_ms"] = TARGET_P50_MS
    out["ok"] = out["added_p50_ms"] <= TARGET_P50_MS
    return out


@click.command("proxy")
@click.option("--calls", default=500, show_default=True, type=click.IntRange(1), help="Calls each way.")
@click.option("--route", type=click.Choice(sorted(ROUTES)), default="brave", show_default=True)
@click.option("--durable", is_flag=True, help="Measure `proxy --durable` (each reply waits for its commit).")
@click.option("--json", "as_json", is_flag=True)
def command(calls: int, route: str, durable: bool, as_json: bool) -> None:
    """Added latency per call of `searchtrace proxy` (p50, p99) against direct calls, same run, loopback."""
    result = run(calls, route, durable=durable)
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
        return
    click.echo(f"proxy{' --durable' if durable else ''}, {route}, {calls} calls each way: direct p50 {result['direct_p50_ms']} ms / p99 "
               f"{result['direct_p99_ms']} ms; proxied p50 {result['proxied_p50_ms']} / p99 {result['proxied_p99_ms']}; "
               f"added p50 {result['added_p50_ms']} ms, p99 {result['added_p99_ms']} ms; proxy CPU "
               f"{result['proxy_cpu_ms_per_call']} ms per call "
               f"({'ok' if result['ok'] else 'over'} the {TARGET_P50_MS} ms target)")
    if not result["ok"]:
        raise SystemExit(1)
