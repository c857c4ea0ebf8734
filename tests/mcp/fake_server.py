"""A stdio MCP server written by hand (no SDK), so it can misbehave on cue: it answers the four providers' search
tools with their fixtures' results, `echo` with its arguments, and for special queries writes a frame that is not
JSON before its reply, a reply over any cap, a reply that is not the server's format, or exits mid-call.

Run as `python fake_server.py`; newline-delimited JSON-RPC on stdin/stdout (the stdio transport, 2025-11-25)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
TOOLS = ["brave_web_search", "tavily_search", "web_search_exa", "firecrawl_search"]


def send(msg: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(tool: str, args: dict[str, object]) -> dict[str, object]:
    query = str(args.get("query", ""))
    if query == "die":
        os._exit(3)
    if query == "malformed":
        sys.stdout.write("this is not {json\n")
        sys.stdout.flush()
    if query == "huge":
        return {"content": [{"type": "text", "text": "x" * (3 << 20)}], "isError": False}
    if query == "garbled":
        return {"content": [{"type": "text", "text": "Something went wrong, but not as an error"}], "isError": False}
    if query == "failing":
        return {"content": [{"type": "text", "text": "Search error (401): invalid key"}], "isError": True}
    if tool in TOOLS:
        doc = json.loads((FIXTURES / f"{tool}.json").read_text())
        return dict(doc["result"])
    return {"content": [{"type": "text", "text": json.dumps({"echo": args})}], "isError": False}


def main() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue  # a notification
        method = msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-search", "version": "1.0"}}})
        elif method == "tools/list":
            tools = [{"name": t, "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}
                     for t in [*TOOLS, "echo"]]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
        elif method == "tools/call":
            params = msg["params"]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result(params["name"], params.get("arguments") or {})})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
