"""An own agent loop with no library at all (Python's standard library), recorded by `searchtrace proxy`.

It speaks Brave's search wire format, reads pages through Jina Reader and streams the chat replies
(`stream: true`), all under `<proxy>/t/<provider>/<qid>/`; the answer is posted to `…/final`:

    searchtrace proxy --db runs.duckdb --questions questions.jsonl --run-id mine --upstream sandbox &
    python examples/plain_agent.py --proxy http://127.0.0.1:8790 --questions questions.jsonl
"""

from __future__ import annotations

import argparse
import json
import urllib.parse
import urllib.request
from typing import Any

TOOLS = [
    {"type": "function", "function": {
        "name": "search", "description": "Web search; returns the Brave response as JSON.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
    {"type": "function", "function": {
        "name": "open_page", "description": "Fetch and read a page.",
        "parameters": {"type": "object", "properties": {"link": {"type": "string"}}, "required": ["link"]}}},
]


def http(url: str, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return bytes(resp.read())


def streamed_chat(base: str, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One streamed completion, put together from its server-sent chunks."""
    req = urllib.request.Request(f"{base}/openai/v1/chat/completions",
                                 data=json.dumps({"model": model, "messages": messages, "tools": TOOLS,
                                                  "stream": True}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer not-a-key"})
    text, calls = "", {}  # type: ignore[var-annotated]
    with urllib.request.urlopen(req, timeout=60) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[5:]).get("choices", []):
                delta = choice.get("delta", {})
                text += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc["index"], {"id": "", "type": "function",
                                                          "function": {"name": "", "arguments": ""}})
                    slot["id"] = tc.get("id") or slot["id"]
                    fn = tc.get("function") or {}
                    slot["function"]["name"] += fn.get("name") or ""
                    slot["function"]["arguments"] += fn.get("arguments") or ""
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def answer(proxy: str, provider: str, qid: str, question: str, model: str, seen: list[dict[str, Any]]) -> str | None:
    base = f"{proxy}/t/{provider}/{qid}"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Use the tools, then reply `FINAL ANSWER: <answer>`."},
        {"role": "user", "content": question},
    ]
    for _ in range(8):
        msg = streamed_chat(base, model, messages)
        messages.append(msg)
        if not msg.get("tool_calls"):
            text = (msg.get("content") or "").strip()
            if text.startswith("FINAL ANSWER:"):
                final = text[len("FINAL ANSWER:"):].strip()
                http(f"{base}/final", {"answer": final})
                return final
            messages.append({"role": "user", "content": "Continue, or reply with FINAL ANSWER: <answer>."})
            continue
        for call in msg["tool_calls"]:
            args = json.loads(call["function"]["arguments"] or "{}")
            if call["function"]["name"] == "search":
                q = urllib.parse.urlencode({"q": args["q"], "count": 10})
                body = http(f"{base}/brave/res/v1/web/search?{q}", headers={"X-Subscription-Token": "not-a-key"})
                results = (json.loads(body).get("web") or {}).get("results", [])
                seen.append({"qid": qid, "query": args["q"], "results": [
                    {"rank": i, "url": r["url"], "title": r.get("title", "")} for i, r in enumerate(results, start=1)]})
                content = body.decode()
            else:
                content = http(f"{base}/jina/{args['link']}", headers={"Accept": "text/plain"}).decode()
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--proxy", default="http://127.0.0.1:8790")
    ap.add_argument("--questions", required=True, help="JSONL with qid and question")
    ap.add_argument("--provider", default="brave")
    ap.add_argument("--model", default="sandbox-agent")
    ap.add_argument("--seen", default=None, help="write what the client received (JSONL) here")
    args = ap.parse_args()
    seen: list[dict[str, Any]] = []
    with open(args.questions, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        print(f"{row['qid']}: {answer(args.proxy.rstrip('/'), args.provider, str(row['qid']), row['question'], args.model, seen)}")
    if args.seen:
        with open(args.seen, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in seen)


if __name__ == "__main__":
    main()
