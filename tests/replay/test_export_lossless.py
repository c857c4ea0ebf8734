"""docs/concepts/shown.md lossless interchange: a store of several runs (the demo with two epochs, and a proxied run) exported with
--blobs and imported into a fresh store gives every trajectory's payloads byte for byte, run ids, run configs and
blobs included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from searchtrace.store import EventLog
from tests.builders import run_cli, write_jsonl
from tests.proxy.support import proxy, run_example, write_questions


def _streams(db: Path, like: str) -> dict[str, list[tuple[str, str]]]:
    """Per stream matching `like`: (run_id, payload JSON) in stream order."""
    with EventLog(db, read_only=True) as log:
        cur = log.cursor()
        try:
            rows = cur.execute("SELECT stream_id, run_id, payload FROM events WHERE stream_id LIKE ? "
                               "ORDER BY stream_id, stream_seq", [like]).fetchall()
        finally:
            cur.close()
    out: dict[str, list[tuple[str, str]]] = {}
    for stream, run, payload in rows:
        out.setdefault(stream, []).append((run, payload))
    return out


def _named_blobs(streams: dict[str, list[tuple[str, str]]]) -> set[str]:
    """Every blob digest a trajectory payload names (raw bodies, pages, request messages, tool lists)."""
    out: set[str] = set()
    for events in streams.values():
        for _, payload in events:
            p: dict[str, Any] = json.loads(payload)
            out.update(d for k in ("raw_digest", "content_digest", "tools_digest") if isinstance(d := p.get(k), str))
            out.update(p.get("request_messages") or [])
    return out


def _blob_bytes(db: Path, digests: set[str]) -> dict[str, bytes]:
    with EventLog(db, read_only=True) as log:
        return {d: log.get_blob(d) for d in sorted(digests) if log.has_blob(d)}


def test_a_store_of_several_runs_round_trips_byte_for_byte(tmp_path: Path) -> None:
    db = tmp_path / "src.duckdb"
    code, _, err = run_cli("demo", "--db", str(db), "--out", str(tmp_path / "demo"), "--n", "2", "--epochs", "2")
    assert code == 0, err
    qfile = tmp_path / "q.jsonl"
    write_questions(qfile, 2)
    with proxy(db, qfile, "mine") as p:
        run_example("plain_agent.py", p.url, qfile, tmp_path / "seen.jsonl")
        assert p.stop() == 0
    out, blobs = tmp_path / "out", tmp_path / "blobs"
    code, text, err = run_cli("export", "--db", str(db), "--out", str(out), "--blobs", str(blobs))
    assert code == 0, err
    back = tmp_path / "back.duckdb"
    code, text, err = run_cli("import", "--db", str(back), str(out / "traces.jsonl"), "--blobs", str(blobs),
                              "--judgments", str(out / "judgments.jsonl"))
    assert code == 0, err

    src, dst = _streams(db, "traj:%"), _streams(back, "traj:%")
    runs = {run for events in src.values() for run, _ in events}
    assert len(runs) == 2 and "mine" in runs and len(src) == 3 * 2 * 2 + 2  # 2 epochs x 3 providers, 2 proxied
    turns = [json.loads(p) for events in src.values() for _, p in events if '"model.responded"' in p]
    assert turns and all("request_messages" in t for t in turns) and any(t["text"] for t in turns)
    assert any(t["tool_calls"] for t in turns) and any(t.get("raw_digest") for t in turns)
    for stream, events in src.items():
        assert dst.get(stream) == events, stream  # run id and payload bytes, event by event
    assert dst.keys() == src.keys()
    # the runs keep their ids and configs (a proxied run imports as itself, not as `import`)
    src_runs, dst_runs = _streams(db, "run:%"), _streams(back, "run:%")
    assert src_runs.keys() == dst_runs.keys() == {f"run:{r}" for r in runs}
    for stream, events in src_runs.items():
        assert dst_runs[stream] == events, stream
    named = _named_blobs(src)
    assert len(named) > len(turns)
    assert _blob_bytes(back, named) == _blob_bytes(db, named) and len(_blob_bytes(db, named)) == len(named)

    # again into either store: nothing new; the fresh store exports the same files
    for target in (back, db):
        code, text, err = run_cli("import", "--db", str(target), str(out / "traces.jsonl"), "--blobs", str(blobs))
        assert code == 0 and "0 new trajectories" in text and "0 new events" in text, (text, err)
    again = tmp_path / "again"
    code, _, err = run_cli("export", "--db", str(back), "--out", str(again), "--blobs", str(tmp_path / "blobs2"))
    assert code == 0, err
    for name in ("traces.jsonl", "run.jsonl"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    assert sorted(x.name for x in (tmp_path / "blobs2").iterdir()) == sorted(x.name for x in blobs.iterdir())

    # without the folder the raw bodies named cannot be imported: one line, nothing written
    fresh = tmp_path / "fresh.duckdb"
    code, _, err = run_cli("import", "--db", str(fresh), str(out / "traces.jsonl"))
    assert code == 2 and "raw_digest" in err and "--blobs" in err and len(err.strip().splitlines()) == 1, err
    assert not fresh.exists()


def test_one_doc_id_for_two_urls_is_refused(tmp_path: Path) -> None:
    """docs/concepts/shown.md: a doc_id names one URL in a trajectory; two would move judge items silently."""
    steps = [
        {"kind": "search", "iteration": 1, "call_id": "s1", "query": "q",
         "results": [{"doc_id": "d1", "rank": 1, "url": "https://a.example/x"}]},
        {"kind": "search", "iteration": 2, "call_id": "s2", "query": "q2",
         "results": [{"doc_id": "d1", "rank": 1, "url": "https://b.example/y"}]},
    ]
    line = {"trajectory_id": "t1", "provider": "brave", "qid": "q1", "question": "Q?", "gold_answer": "A",
            "final_answer": None, "stop_reason": "max_iterations", "steps": steps}
    traces = write_jsonl(tmp_path / "t.jsonl", [line])
    db = tmp_path / "d.duckdb"
    code, out, err = run_cli("import", "--db", str(db), str(traces))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "line 1" in err and "steps[1].results[0].doc_id" in err and "'d1' already names another URL" in err
    assert "Traceback" not in err and not db.exists()


def test_turns_of_a_hand_written_line_are_requests_as_evidence(tmp_path: Path) -> None:
    """A line's turns give model.responded in full; each request message is stored once, `kept` shares a prefix."""
    import hashlib

    from searchtrace.engine import canonical

    system, user = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search", "arguments": "{\"query\": \"q\"}"}}]}
    tool = {"role": "tool", "tool_call_id": "c1", "content": "[d1] A https://a.example/x"}
    steps = [
        {"kind": "model", "iteration": 1},
        {"kind": "search", "iteration": 1, "call_id": "c1", "query": "q",
         "results": [{"doc_id": "d1", "rank": 1, "url": "https://a.example/x", "title": "A"}]},
        {"kind": "model", "iteration": 2},
    ]
    turns = [
        {"iteration": 1, "tool_calls": [{"call_id": "c1", "name": "search", "arguments": "{\"query\": \"q\"}"}],
         "usage": {"input_tokens": 10, "output_tokens": 2, "cached_tokens": 4}, "finish_reason": "tool_calls",
         "messages": [system, user], "tools": [{"type": "function", "function": {"name": "search"}}]},
        {"iteration": 2, "text": "FINAL ANSWER: A", "kept": 2, "messages": [call, tool],
         "tools": [{"type": "function", "function": {"name": "search"}}]},
    ]
    line = {"trajectory_id": "t1", "provider": "brave", "qid": "q1", "question": "Q?", "gold_answer": "A",
            "final_answer": "A", "stop_reason": "answered", "steps": steps, "turns": turns, "run_id": "elsewhere"}
    db = tmp_path / "t.duckdb"
    code, _, err = run_cli("import", "--db", str(db), str(write_jsonl(tmp_path / "t.jsonl", [line])))
    assert code == 0, err
    events = _streams(db, "traj:%")["traj:t1"]
    assert {run for run, _ in events} == {"elsewhere"}
    model = [json.loads(p) for _, p in events if '"model.responded"' in p]
    digest = [hashlib.sha256(canonical(m)).hexdigest() for m in (system, user, call, tool)]
    assert [m["request_messages"] for m in model] == [digest[:2], digest]
    assert model[0]["usage"]["cached_tokens"] == 4 and model[1]["text"] == "FINAL ANSWER: A"
    assert _blob_bytes(db, set(digest)) == {hashlib.sha256(canonical(m)).hexdigest(): canonical(m)
                                            for m in (system, user, call, tool)}
    # a turn that shares more than the previous request had, or one turn too few, is refused in one line
    for bad, needle in ((dict(line, turns=[turns[0], dict(turns[1], kept=3)]), "turns[1].kept"),
                        (dict(line, turns=turns[:1]), "1 turns for 2 model steps")):
        code, _, err = run_cli("import", "--db", str(tmp_path / "bad.duckdb"),
                               str(write_jsonl(tmp_path / "bad.jsonl", [bad])))
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
