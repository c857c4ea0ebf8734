"""An OpenAI Agents SDK agent with its default model (the Responses API), recorded by `searchtrace proxy`.

Its tools search through the proxy's Brave route and read pages through its Jina route; the SDK's own model calls go to the proxy's OpenAI route, so
every turn is recorded with what the model was sent. Tracing to OpenAI is off (no key, no network):

    searchtrace proxy --db runs.duckdb --questions questions.jsonl --run-id mine --upstream sandbox &
    python examples/openai_agents_agent.py --proxy http://127.0.0.1:8790 --questions questions.jsonl
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
)
from openai import AsyncOpenAI

INSTRUCTIONS = "Use search_web, then reply `FINAL ANSWER: <answer>`."


async def answer(proxy: str, provider: str, qid: str, question: str, seen: list[dict[str, Any]]) -> str | None:
    base = f"{proxy}/t/{provider}/{urllib.parse.quote(qid, safe='')}"
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
        await http.post(f"{base}/final", json={"answer": final})
        return final


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--proxy", default="http://127.0.0.1:8790")
    ap.add_argument("--questions", required=True, help="JSONL with qid and question")
    ap.add_argument("--provider", default="brave")
    ap.add_argument("--model", default="sandbox-agent", help="the SDK's default model name (OPENAI_DEFAULT_MODEL)")
    ap.add_argument("--seen", default=None, help="write what the client received (JSONL) here")
    args = ap.parse_args()
    set_tracing_disabled(True)
    os.environ["OPENAI_DEFAULT_MODEL"] = args.model  # the name the SDK's default model asks for
    seen: list[dict[str, Any]] = []
    with open(args.questions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        got = await answer(args.proxy.rstrip("/"), args.provider, str(row["qid"]), row["question"], seen)
        print(f"{row['qid']}: {got}")
    if args.seen:
        with open(args.seen, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in seen)


if __name__ == "__main__":
    asyncio.run(main())
