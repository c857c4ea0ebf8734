"""docs/concepts/shown.md through the proxy: an agent that hands its model only the top 2 results of each search gets exactly
those results as judge items, and the report's shown_share is 2 / returned."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from searchtrace.analytics import judge_items
from searchtrace.store import EventLog, SearchResult
from tests.proxy.support import cli, proxy, streams, write_questions

KEEP = 2
TOOLS = [{"type": "function", "function": {
    "name": "web_search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def _search(base: str, query: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{base}/tavily/search", data=json.dumps({"query": query, "max_results": 10}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer tvly-not-a-key"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        out: dict[str, Any] = json.loads(resp.read())
    return out


def trimming_agent(proxy_url: str, qid: str, question: str) -> None:
    """A plain openai-client tool loop that keeps only the top KEEP results of every search for its model."""
    from openai import OpenAI
    base = f"{proxy_url}/t/tavily/{qid}"
    with OpenAI(base_url=f"{base}/openai/v1", api_key="not-a-key") as chat:
        messages: list[dict[str, Any]] = [{"role": "system", "content": "Answer with FINAL ANSWER: <answer>."},
                                          {"role": "user", "content": question}]
        for turn in range(6):
            reply = chat.chat.completions.create(model="sandbox-agent", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            msg = reply.choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls or turn == 5:  # the last turn's tool calls are not run: no model would see them
                break
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments or "{}")  # type: ignore[union-attr]
                if call.function.name == "web_search":  # type: ignore[union-attr]
                    found = _search(base, args["query"])
                    content = json.dumps({"results": [{"title": r["title"], "url": r["url"], "content": r["content"]}
                                                      for r in found["results"][:KEEP]]})
                else:
                    content = "this agent only searches"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def test_a_trimming_agent_is_judged_on_what_its_model_saw(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 2)
    db = tmp_path / "trim.duckdb"
    with proxy(db, qfile, "trim") as p:
        for row in rows:
            trimming_agent(p.url, row["qid"], row["question"])
        assert p.stop() == 0
    top: dict[str, set[str]] = {}
    returned = kept = 0
    for stream, events in streams(db).items():
        results = [e for _, _, e in events if isinstance(e, SearchResult)]
        returned += len(results)
        tops = [r for r in results if r.rank <= KEEP]
        kept += len(tops)
        top[stream.removeprefix("traj:")] = {r.url_normalized for r in tops}
    assert returned > kept > 0  # the sandbox returned more than the agent kept
    judged = cli("judge", "--db", str(db), "--sandbox", "--json")
    assert judged.returncode == 0, judged.stderr
    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        items = judge_items(cur)
        cur.close()
    got: dict[str, set[str]] = {}
    for it in items:
        got.setdefault(it.trajectory_id, set()).add(it.url_normalized)
    assert got == top
    rep = cli("report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    assert "without their model requests" not in rep.stderr
    t = json.loads(rep.stdout)["providers"]["tavily"]
    assert (t["results_returned"], t["results_shown"]) == (returned, kept)
    assert t["shown_share"] == kept / returned
    assert t["items"] == sum(len(u) for u in top.values())
