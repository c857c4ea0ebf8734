"""An OpenAI Agents SDK agent with its default model (the Responses API), recorded by `searchtrace proxy`.

Its tools search through the proxy's Brave route and read pages through its Jina route; the SDK's own model calls go to the proxy's OpenAI route, so
every turn is recorded with what the model was sent. Tracing to OpenAI is off (no key, no network):

    searchtrace proxy --db runs.duckdb --questions questions.jsonl --run-id mine --upstream sandbox &
    python examples/openai_agents_agent.py --proxy http://127.0.0.1:8790 --questions questions.jsonl

Or without the proxy, recorded by `searchtrace collect` from the spans OpenInference's Agents SDK instrumentor makes
(its processor replaces the SDK's own, so nothing goes to OpenAI), the question matched by its text:

    searchtrace collect --db runs.duckdb --questions questions.jsonl --run-id mine --provider brave &
    python examples/openai_agents_agent.py --base http://127.0.0.1:SANDBOX --otlp http://127.0.0.1:4318/v1/traces \
        --questions questions.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import urllib.parse
from typing import Any

import httpx
from agents import (
    Agent,
    MaxTurnsExceeded,
    Runner,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
    trace,
)
from openai import AsyncOpenAI

INSTRUCTIONS = "Use search_web, then reply `FINAL ANSWER: <answer>`."


# --8<-- [start:agent]
async def answer(proxy: str, provider: str, qid: str, question: str, seen: list[dict[str, Any]],
                 proxied: bool = True) -> str | None:
    base = f"{proxy}/t/{provider}/{urllib.parse.quote(qid, safe='')}" if proxied else proxy
    async with httpx.AsyncClient(timeout=60) as http:

        @function_tool
        async def search_web(query: str) -> str:
            """Search the web; returns the results as JSON."""
            r = await http.get(f"{base}/brave/res/v1/web/search", params={"q": query, "count": 10},
                               headers={"X-Subscription-Token": "not-a-key"})
            results = (r.json().get("web") or {}).get("results", [])
            seen.append({"qid": qid, "query": query, "results": [
                {"rank": i, "url": x["url"], "title": x.get("title", "")} for i, x in enumerate(results, start=1)]})
            return r.text

        @function_tool
        async def read_page(url: str) -> str:
            """Read a web page as markdown."""
            r = await http.get(f"{base}/jina/{url}", headers={"Accept": "text/plain"})
            return r.text

        set_default_openai_client(AsyncOpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key"),
                                  use_for_tracing=False)
        agent = Agent(name="searcher", instructions=INSTRUCTIONS, tools=[search_web, read_page])  # the SDK's default model
        try:
            result = await Runner.run(agent, question, max_turns=8)
        except MaxTurnsExceeded:
            return None
        text = str(result.final_output or "").strip()
        if not text.startswith("FINAL ANSWER:"):
            return None
        final = text[len("FINAL ANSWER:"):].strip()
        if proxied:
            await http.post(f"{base}/final", json={"answer": final})
        return final
# --8<-- [end:agent]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--proxy", default="http://127.0.0.1:8790")
    ap.add_argument("--base", default=None, help="the endpoints' own root (e.g. `sandbox serve`) instead of a proxy")
    ap.add_argument("--otlp", default=None, help="OTLP/HTTP traces endpoint to export the SDK's spans to (with --base)")
    ap.add_argument("--questions", required=True, help="JSONL with qid and question")
    ap.add_argument("--provider", default="brave")
    ap.add_argument("--model", default="sandbox-agent", help="the SDK's default model name (OPENAI_DEFAULT_MODEL)")
    ap.add_argument("--seen", default=None, help="write what the client received (JSONL) here")
    args = ap.parse_args()
    provider = None
    if args.otlp:  # OpenInference's processor replaces the SDK's own exporter: spans go to --otlp only
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=args.otlp)))
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    else:
        set_tracing_disabled(True)
    os.environ["OPENAI_DEFAULT_MODEL"] = args.model  # the name the SDK's default model asks for
    seen: list[dict[str, Any]] = []
    with open(args.questions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        root = (args.base or args.proxy).rstrip("/")
        if provider is not None:
            with trace(f"question {row['qid']}"):  # one trace per question: one trajectory
                got = await answer(root, args.provider, str(row["qid"]), row["question"], seen, proxied=False)
        else:
            got = await answer(root, args.provider, str(row["qid"]), row["question"], seen, proxied=args.base is None)
        print(f"{row['qid']}: {got}")
    if provider is not None:
        provider.force_flush()
        provider.shutdown()
    if args.seen:
        with open(args.seen, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in seen)


if __name__ == "__main__":
    asyncio.run(main())
