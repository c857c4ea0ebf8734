"""Own-agent scripts (examples/) recorded keylessly through `proxy --upstream sandbox`, then judged and reported."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from searchtrace.adapters._search_base import clean_text
from searchtrace.store import (
    ModelResponded,
    SearchCalled,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.proxy.support import cli, proxy, read_jsonl, run_example, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)


def searches(events: list[tuple[int, str, object]]) -> list[list[SearchResult]]:
    """The results of each search call of one trajectory, in call order."""
    calls: dict[str, list[SearchResult]] = {}
    for _, _, p in events:
        if isinstance(p, SearchCalled):
            calls[p.call_id] = []
        elif isinstance(p, SearchResult):
            calls[p.call_id].append(p)
    return list(calls.values())


def test_examples_record_through_the_proxy_and_report(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 3)
    db = tmp_path / "p.duckdb"
    with proxy(db, qfile, "mine") as p:
        out1 = run_example("openai_tavily_agent.py", p.url, qfile, tmp_path / "seen_tavily.jsonl")
        out2 = run_example("plain_agent.py", p.url, qfile, tmp_path / "seen_brave.jsonl")
        # refusals of the proxy itself: one JSON line, nothing recorded
        r = httpx.post(f"{p.url}/t/tavily/no-such-qid/tavily/search", json={"query": "x"}, timeout=HANG_S)
        assert r.status_code == 404 and "no-such-qid" in r.json()["error"]["message"]
        r = httpx.post(f"{p.url}/t/bing/{rows[0]['qid']}/tavily/search", json={"query": "x"}, timeout=HANG_S)
        assert r.status_code == 404 and "bing" in r.json()["error"]["message"]
        r = httpx.post(f"{p.url}/t/tavily/{rows[0]['qid']}/final", json={"answer": "again"}, timeout=HANG_S)
        assert r.status_code == 409  # finished by the script
        r = httpx.get(f"{p.url}/t/tavily/{rows[0]['qid']}/nowhere/x", timeout=HANG_S)
        assert r.status_code == 404
        # reads while the proxy holds the file (docs/how-to/explorer.md): every committed trajectory is seen
        live = cli("sql", "--db", str(db), "--json", "SELECT count(*) AS n FROM events WHERE type = 'answer.final'")
        assert live.returncode == 0 and json.loads(live.stdout)[0]["n"] == 6, live.stderr
        assert p.stop() == 0
    for row in rows:
        assert f"{row['qid']}: {row['answer']}" in out1 and f"{row['qid']}: {row['answer']}" in out2
    recorded = streams(db)
    assert len(recorded) == 6
    for events in recorded.values():
        seqs = [s for s, _, _ in events]
        assert seqs == list(range(len(seqs)))
        assert isinstance(events[0][2], TrajectoryStarted)
        last = events[-1][2]
        assert isinstance(last, TrajectoryFinished) and last.reason == "answered"
        turns = [p for _, _, p in events if isinstance(p, ModelResponded)]
        assert turns and turns[-1].text and turns[0].tool_calls and all(t.usage.input_tokens > 0 for t in turns)
    # what the client received is what was recorded: same URLs, ranks and snippets (Tavily), URLs, ranks, titles (Brave)
    seen_t = read_jsonl(tmp_path / "seen_tavily.jsonl")
    seen_b = read_jsonl(tmp_path / "seen_brave.jsonl")
    for row in rows:
        rec_t = searches(recorded[f"traj:mine:tavily:{row['qid']}"])
        got_t = [s["results"] for s in seen_t if s["qid"] == row["qid"]]
        assert len(rec_t) == len(got_t) >= 1
        for rec, got in zip(rec_t, got_t, strict=True):
            assert [(r.rank, r.url, r.snippet) for r in rec] == [(g["rank"], g["url"], g["snippet"].strip()) for g in got]
            assert all(r.surface_chars == len(r.snippet) for r in rec)  # docs/how-to/providers.md on proxied results too
            assert [r.doc_id for r in rec] == [f"d{i}" for i in range(int(rec[0].doc_id[1:]), int(rec[0].doc_id[1:]) + len(rec))]
        rec_b = searches(recorded[f"traj:mine:brave:{row['qid']}"])
        got_b = [s["results"] for s in seen_b if s["qid"] == row["qid"]]
        assert len(rec_b) == len(got_b) >= 1
        for rec, got in zip(rec_b, got_b, strict=True):
            assert [(r.rank, r.url, r.title) for r in rec] == [(g["rank"], g["url"], clean_text(g["title"])) for g in got]
    # judge and report treat them like any other trajectories
    j = cli("judge", "--db", str(db), "--sandbox", "--json")
    assert j.returncode == 0, j.stderr
    assert json.loads(j.stdout)["valid"] > 0
    rep = cli("report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    providers = json.loads(rep.stdout)["providers"]
    assert set(providers) == {"brave", "tavily"}
    assert all(p["trajectories"] == 3 and p["exact_match"] == 1.0 and p["valid_items"] > 0 for p in providers.values())
    assert cli("verify", "--db", str(db)).returncode == 0
    rp = cli("replay", "--db", str(db))
    assert rp.returncode == 2 and "recorded through `searchtrace proxy`" in rp.stderr
    assert len(rp.stderr.strip().splitlines()) == 1
