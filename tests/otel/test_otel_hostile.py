"""`import --from otel` on hostile spans (docs/how-to/otel.md): missing attributes and unparseable tool output give typed
events; duplicated span ids, huge attributes, deep JSON, bad ids and broken protobuf are one-line refusals (exit 2)
that write nothing; the same spans imported twice add nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from searchtrace.store import EventLog, ModelResponded, SearchCompleted, SearchResult, TrajectoryFinished
from tests.builders import run_cli, trajectories

T1, T2 = "1" * 32, "2" * 32


def kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        return {"stringValue": v if isinstance(v, str) else json.dumps(v)}
    return [{"key": k, "value": value(v)} for k, v in attrs.items()]


def span(trace: str, sid: int, parent: int | None, start: int, **attrs: Any) -> dict[str, Any]:
    return {"traceId": trace, "spanId": f"{sid:016x}", **({"parentSpanId": f"{parent:016x}"} if parent else {}),
            "name": str(attrs.get("gen_ai.operation.name", "span")), "startTimeUnixNano": str(start * 1_000_000),
            "endTimeUnixNano": str(start * 1_000_000 + 500_000), "attributes": kv(attrs)}


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": kv({"service.name": "hostile"})},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def chat(trace: str, sid: int, start: int, messages: list[dict[str, Any]] | None, text: str,
         calls: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 10,
                             "gen_ai.usage.output_tokens": 5,
                             "gen_ai.output.messages": [{"role": "assistant", "parts": [
                                 {"type": "text", "content": text},
                                 *({"type": "tool_call", **c} for c in calls)]}]}
    if messages is not None:
        attrs["gen_ai.input.messages"] = messages
    return span(trace, sid, 1, start, **attrs)


def tool(trace: str, sid: int, start: int, name: str, args: dict[str, Any], result: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                             "gen_ai.tool.call.arguments": args}
    if result is not None:
        attrs["gen_ai.tool.call.result"] = result
    return span(trace, sid, 1, start, **attrs)


RESULTS = json.dumps([{"url": "https://a.example/x", "title": "Alpha page about the question", "snippet": "alpha"},
                      {"url": "https://b.example/y", "title": "Beta", "content": "beta"}])


def good_trace(trace: str = T1, qid: str = "q1") -> dict[str, Any]:
    user = {"role": "user", "parts": [{"type": "text", "content": "Who?"}]}
    return request(
        span(trace, 1, None, 1, **{"gen_ai.operation.name": "invoke_agent", "searchtrace.qid": qid,
                                   "searchtrace.provider": "tavily", "searchtrace.gold_answer": "Alpha",
                                   "output.value": "FINAL ANSWER: Alpha"}),
        chat(trace, 2, 2, [user], "", [{"id": "c1", "name": "search_web", "arguments": '{"query": "who"}'}]),
        tool(trace, 3, 3, "search_web", {"query": "who"}, "<html>rate limited</html>"),  # not search results
        tool(trace, 4, 4, "search_web", {"query": "who 2"}, RESULTS),
        tool(trace, 5, 5, "search_web", {"query": "who 3"}, None),  # no output attribute at all
        tool(trace, 6, 6, "web_search", {"query": "deep"}, "[" * 200 + "]" * 200),  # nested past the cap
        chat(trace, 7, 7, [user, {"role": "tool", "parts": [{"type": "tool_call_response",
                                                              "response": "see https://a.example/x"}]}],
             "FINAL ANSWER: Alpha"),
        chat(trace, 8, 8, None, "no request recorded"),  # an LLM span without its input messages
        tool(trace, 9, 9, "fetch_page", {"url": "https://a.example/x"}, "# Alpha\n\nThe page."),
    )


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def refused(db: Path, *files: Path, says: str) -> None:
    r = run_cli("import", "--db", str(db), "--from", "otel", *map(str, files))
    assert r.code == 2, (r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err and says in r.err, r.err
    assert not db.exists()  # nothing written, no store left behind


def test_hostile_spans_give_typed_events_and_reimport_adds_nothing(tmp_path: Path) -> None:
    f = write(tmp_path / "t.jsonl", good_trace(), good_trace(T2, "q2"))
    db = tmp_path / "s.duckdb"
    r = run_cli("import", "--db", str(db), "--from", "otel", str(f))
    assert r.code == 0, r.err
    again = run_cli("import", "--db", str(db), "--from", "otel", str(f))
    assert again.code == 0 and again.out.rstrip().endswith(" 0 new events"), again.out
    with EventLog(db, read_only=True) as log:
        got = trajectories(log)
    assert sorted(got) == ["otel:tavily:q1", "otel:tavily:q2"]
    events = got["otel:tavily:q1"]
    done = [e for e in events if isinstance(e, SearchCompleted)]
    assert [d.status for d in done] == ["bad_response", "ok", "bad_response", "bad_response"]
    assert "not search results" in (done[0].error or "") and "no tool output" in (done[2].error or "")
    assert "deeper than" in (done[3].error or "")
    results = [e for e in events if isinstance(e, SearchResult)]
    assert [(r.doc_id, r.url, r.snippet) for r in results] == [("d1", "https://a.example/x", "alpha"),
                                                               ("d2", "https://b.example/y", "beta")]
    turns = [e for e in events if isinstance(e, ModelResponded)]
    assert [bool(t.request_messages) for t in turns] == [True, True, False]
    assert turns[0].tool_calls[0].name == "search_web" and turns[0].usage.input_tokens == 10
    fin = events[-1]
    assert isinstance(fin, TrajectoryFinished) and fin.reason == "answered"
    # docs/concepts/shown.md from the chat spans' input messages: a by its URL; b only by the later span without messages
    shown = run_cli("sql", "--db", str(db), "--json", "SELECT url, shown_by FROM v_shown "
                    "WHERE trajectory_id = 'otel:tavily:q1' ORDER BY url")
    assert json.loads(shown.out) == [{"url": "https://a.example/x", "shown_by": "url"},
                                     {"url": "https://b.example/y", "shown_by": "assumed"}]


def test_hostile_files_are_one_line_refusals(tmp_path: Path) -> None:
    db = tmp_path / "none.duckdb"
    twice = good_trace()
    other = json.loads(json.dumps(twice))
    other["resourceSpans"][0]["scopeSpans"][0]["spans"][3]["name"] = "changed"
    refused(db, write(tmp_path / "dup.jsonl", twice, other), says="appears twice with other content")
    huge = good_trace()
    huge["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["attributes"] += kv({"output.value": "x" * (17 << 20)})
    refused(db, write(tmp_path / "huge.jsonl", huge), says="over the 16 MiB cap")
    deep = tmp_path / "deep.json"
    deep.write_text('{"resourceSpans": ' + "[" * 100 + "]" * 100 + "}")
    refused(db, deep, says="nested deeper than 64")
    bad_id = good_trace()
    bad_id["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "not-hex"
    refused(db, write(tmp_path / "id.jsonl", bad_id), says="is not a 16-byte hex id")
    anonymous = good_trace()
    anonymous["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = []
    refused(db, write(tmp_path / "anon.jsonl", anonymous), says="no qid or provider")
    (tmp_path / "broken.pb").write_bytes(b"\x0a\xff\xff\xff\x0f")
    refused(db, tmp_path / "broken.pb", says="not a protobuf ExportTraceServiceRequest")
    refused(db, write(tmp_path / "dupcell.jsonl", good_trace(), good_trace(T2)), says="one trace is one trajectory")


def test_a_bad_carried_audit_writes_none_of_the_spans(tmp_path: Path) -> None:
    """What a trace carries (here the root's semantic_match) is validated before its trajectory is written: an
    audit the store contradicts stops the import (exit 2) and adds no event."""
    def judged(trace: str, match: bool) -> Path:
        doc = good_trace(trace)
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] += kv({"searchtrace.semantic_match": match})
        return write(tmp_path / f"{trace[0]}.jsonl", doc)

    db = tmp_path / "a.duckdb"
    first = run_cli("import", "--db", str(db), "--from", "otel", str(judged(T1, False)))
    assert first.code == 0 and "1 audits carried" in first.out, first.err
    with EventLog(db, read_only=True) as log:
        before = log.head
    bad = run_cli("import", "--db", str(db), "--from", "otel", "--run-id", "again", str(judged(T2, True)))
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1 and "another audit" in bad.err, bad.err
    with EventLog(db, read_only=True) as log:
        assert log.head == before and "again:tavily:q1" not in trajectories(log)


def test_otlp_json_and_the_demo_path_load_no_protobuf(tmp_path: Path) -> None:
    """The `otel` extra is needed for protobuf only: OTLP JSON imports without it, and `demo` never loads it."""
    key = "sk-configured-key-0123456789"  # docs/concepts/security.md: a configured key in an attribute reaches no event or blob
    doc = good_trace()
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"] += kv({"gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": f"Who? (key {key})"}]}]})
    f = write(tmp_path / "t.jsonl", doc)
    code = ("import sys\nfrom searchtrace.cli import main\nimport searchtrace.pipeline._sandbox_demo\n"
            f"try:\n    main(['import', '--db', {str(tmp_path / 's.duckdb')!r}, '--from', 'otel', {str(f)!r}])\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "print(sorted(m for m in sys.modules if m.startswith(('google.protobuf', 'opentelemetry'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OPENAI_API_KEY": key})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    with EventLog(tmp_path / "s.duckdb", read_only=True) as log:
        cur = log.cursor()
        payloads = [r[0] for r in cur.execute("SELECT payload FROM events").fetchall()]
        stored = [log.get_blob(r[0]) for r in cur.execute("SELECT sha256 FROM blobs").fetchall()]
        cur.close()
    assert any(b"Who? (key ***)" in b for b in stored)  # the message is kept, its key replaced
    assert not any(key in p for p in payloads) and not any(key.encode() in b for b in stored)


def test_a_restarted_collector_continues_a_trace_as_one_import_records_it(tmp_path: Path) -> None:
    """Spans of one trace over two `collect` lives (the store restores the open trajectory) give the events one
    import of all of them gives; a re-sent request adds nothing."""
    from searchtrace.engine import Question
    from searchtrace.replay.interchange import Collector, decode_spans, import_spans

    spans = decode_spans(json.dumps(good_trace()).encode(), "t")
    root, rest = spans[0], spans[1:]
    questions = [Question(qid="q1", question="Who?", answer="Alpha")]
    with EventLog(tmp_path / "c.duckdb") as log:
        for part in (rest[:4], rest[4:] + [root], rest[4:] + [root]):  # the last: an exporter's retry
            c = Collector("otel", questions, provider="tavily")  # the question is found by its text
            c.restore(log)
            events, blobs, rejected, _ = c.add(part)
            assert rejected == 0
            log.append(events, blobs=blobs)
        collected = trajectories(log)
    with EventLog(tmp_path / "i.duckdb") as log:
        import_spans(log, [("t", spans)], run_id="otel", questions=questions)
        imported = trajectories(log)
    assert collected == imported and len(collected["otel:tavily:q1"]) > 10
