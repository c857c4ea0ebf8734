"""An own agent loop (the plain `openai` and `tavily-python` clients), recorded either by `searchtrace collect` from
its OpenTelemetry spans or by `searchtrace proxy` from its calls: the same loop both ways.

Traced: OpenInference's OpenAI instrumentor records each chat call; the loop adds one span per question (with
`searchtrace.qid` / `searchtrace.provider`) and one per tool call; the official OTLP/HTTP exporter sends them:

    searchtrace collect --db runs.duckdb --questions questions.jsonl --run-id mine &
    searchtrace sandbox serve &      # prints the sandbox root
    python examples/otel_agent.py --base http://127.0.0.1:PORT --otlp http://127.0.0.1:4318/v1/traces \\
        --questions questions.jsonl

Proxied (`--proxy`, no tracing): every question's calls go under `<proxy>/t/<provider>/<qid>/`, the answer is
posted to `…/final`, as examples/openai_tavily_agent.py does.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from openai import OpenAI
from tavily import TavilyClient

TOOLS = [
    {"type": "function", "function": {
        "name": "web_search", "description": "Search the web; returns ranked results with url, title and content.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "read_url", "description": "Read a web page as markdown.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}},
]
SYSTEM = ("Answer the question with the tools. When you are sure, reply with one line starting with "
          "`FINAL ANSWER:` followed by the short answer.")


def read_url(base: str, url: str) -> str:
    """A page through the Jina Reader route (markdown as text)."""
    req = urllib.request.Request(f"{base}/jina/{url}", headers={"Accept": "text/plain"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(resp.read().decode("utf-8", "replace"))


class Tracing:
    """OpenTelemetry for the loop: a tracer provider exporting over OTLP/HTTP, OpenAI calls instrumented."""

    def __init__(self, endpoint: str) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.provider = TracerProvider(resource=Resource.create({"service.name": "otel-agent"}))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("otel-agent")

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Any]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as s:
            yield s

    def close(self) -> None:
        self.provider.force_flush()
        self.instrumentor.uninstrument()
        self.provider.shutdown()


def answer(base: str, provider: str, qid: str, question: str, model: str, tracing: Tracing | None,
           proxied: bool) -> str | None:
    """One question, one trajectory: the usual tool loop, at most 8 model turns."""
    chat = OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key")
    search = TavilyClient(api_key="tvly-not-a-key", api_base_url=f"{base}/tavily")
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    final = None
    root = tracing.span("agent", **{"openinference.span.kind": "AGENT", "searchtrace.qid": qid,
                                     "searchtrace.provider": provider, "input.value": question}) if tracing \
        else nullcontext(None)
    with root as agent_span:
        for _ in range(8):
            reply = chat.chat.completions.create(model=model, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            msg = reply.choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                text = msg.content or ""
                if text.strip().startswith("FINAL ANSWER:"):
                    final = text.strip()[len("FINAL ANSWER:"):].strip()
                    break
                messages.append({"role": "user", "content": "Continue, or reply with FINAL ANSWER: <answer>."})
                continue
            for call in msg.tool_calls:
                name = call.function.name
                tool = tracing.span(name, **{"openinference.span.kind": "TOOL", "tool.name": name,
                                             "input.value": call.function.arguments or "{}"}) if tracing \
                    else nullcontext(None)
                with tool as tool_span:
                    args = json.loads(call.function.arguments or "{}")
                    if name == "web_search":
                        content = json.dumps(search.search(args["query"], max_results=10))
                    else:
                        content = read_url(base, args["url"])
                    if tool_span is not None:
                        tool_span.set_attribute("output.value", content)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        if agent_span is not None and final is not None:
            agent_span.set_attribute("output.value", final)
    if proxied and final is not None:
        body = json.dumps({"answer": final}).encode()
        urllib.request.urlopen(urllib.request.Request(f"{base}/final", data=body, method="POST",
                                                      headers={"Content-Type": "application/json"}), timeout=30)
    return final


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    way = ap.add_mutually_exclusive_group(required=True)
    way.add_argument("--proxy", help="root URL of `searchtrace proxy` (no tracing)")
    way.add_argument("--base", help="root URL of the endpoints themselves (e.g. `searchtrace sandbox serve`)")
    ap.add_argument("--otlp", help="OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces), with --base")
    ap.add_argument("--questions", required=True, help="JSONL with qid and question")
    ap.add_argument("--provider", default="tavily")
    ap.add_argument("--model", default="sandbox-agent")
    args = ap.parse_args()
    tracing = Tracing(args.otlp) if args.otlp else None
    with open(args.questions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    try:
        for row in rows:
            qid = str(row["qid"])
            base = f"{args.proxy.rstrip('/')}/t/{args.provider}/{qid}" if args.proxy else args.base.rstrip("/")
            final = answer(base, args.provider, qid, row["question"], args.model, tracing, bool(args.proxy))
            print(f"{qid}: {final}")
    finally:
        if tracing is not None:
            tracing.close()


if __name__ == "__main__":
    main()
