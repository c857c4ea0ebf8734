"""An own agent loop with the plain `openai` and `tavily-python` clients, recorded by `searchtrace proxy`.

Nothing here knows about searchtrace except the base URLs: every question's calls go under
`<proxy>/t/<provider>/<qid>/`, and the answer is posted to `…/final`. Keyless against `proxy --upstream sandbox`:

    searchtrace proxy --db runs.duckdb --questions questions.jsonl --run-id mine --upstream sandbox &
    python examples/openai_tavily_agent.py --proxy http://127.0.0.1:8790 --questions questions.jsonl

With `--upstream live` the proxy adds its own keys; pass a real `--model`.
"""

from __future__ import annotations

import argparse
import json
import urllib.request
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
    """A page through the Jina Reader route of the proxy (markdown as text)."""
    req = urllib.request.Request(f"{base}/jina/{url}", headers={"Accept": "text/plain"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(resp.read().decode("utf-8", "replace"))


def answer(proxy: str, provider: str, qid: str, question: str, model: str, seen: list[dict[str, Any]]) -> str | None:
    """One question, one trajectory: the usual tool loop, at most 8 model turns."""
    base = f"{proxy}/t/{provider}/{qid}"
    chat = OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key")  # the proxy drops it and adds its own
    search = TavilyClient(api_key="tvly-not-a-key", api_base_url=f"{base}/tavily")
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    final = None
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
            args = json.loads(call.function.arguments or "{}")
            if call.function.name == "web_search":
                result = search.search(args["query"], max_results=10)
                seen.append({"qid": qid, "query": args["query"], "results": [
                    {"rank": i, "url": r["url"], "snippet": r.get("content", "")}
                    for i, r in enumerate(result.get("results", []), start=1)]})
                content = json.dumps(result)
            else:
                content = read_url(base, args["url"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    if final is not None:
        body = json.dumps({"answer": final}).encode()
        urllib.request.urlopen(urllib.request.Request(f"{base}/final", data=body, method="POST",
                                                      headers={"Content-Type": "application/json"}), timeout=30)
    return final


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--proxy", default="http://127.0.0.1:8790")
    ap.add_argument("--questions", required=True, help="JSONL with qid and question")
    ap.add_argument("--provider", default="tavily")
    ap.add_argument("--model", default="sandbox-agent")
    ap.add_argument("--seen", default=None, help="write what the client received (JSONL) here")
    args = ap.parse_args()
    seen: list[dict[str, Any]] = []
    with open(args.questions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        final = answer(args.proxy.rstrip("/"), args.provider, str(row["qid"]), row["question"], args.model, seen)
        print(f"{row['qid']}: {final}")
    if args.seen:
        with open(args.seen, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in seen)


if __name__ == "__main__":
    main()
