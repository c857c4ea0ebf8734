"""Replay: the production agent re-runs over recorded answers only; divergences and misses are reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from searchtrace.replay import ReplayMiss, ReplayTransport, Tape, load_recorded, replay_trajectories
from searchtrace.store import (
    EventLog,
    NewEvent,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    StoredEvent,
)
from tests.builders import Ran, run_cli

CONFIG = """
[agent]
model = "sandbox-agent"
[providers.brave]
[providers.tavily]
[providers.firecrawl]
[dataset]
path = "sandbox"
[sample]
n = 2
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording: the scripted sandbox agent over 2 questions x 3 providers, in-process."""
    import anyio

    from searchtrace import pipeline
    from searchtrace.adapters.sandbox import in_process
    from searchtrace.engine import load_config, point_at_sandbox

    root = tmp_path_factory.mktemp("rec")
    (root / "run.toml").write_text(CONFIG)
    cfg = load_config(root / "run.toml")
    cfg.fetch.cache_dir = str(root / "cache")
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = root / "rec.duckdb"
    summary = anyio.run(lambda: pipeline.record(cfg, db, box.transport, progress=False))
    assert summary.recorded == 6 and summary.fetch_calls > 0 and summary.search_calls > 0
    return db


def copy_store(src: Path, dst: Path, edit: Callable[[StoredEvent], Payload | None]) -> None:
    """Another store holding the same events (and blobs), each passed through `edit` (None drops it)."""
    with EventLog(src, read_only=True) as a:
        events = list(a.read())
        cur = a.cursor()
        digests = [r[0] for r in cur.execute("SELECT sha256 FROM blobs").fetchall()]
        blobs = [a.get_blob(d) for d in digests]
    out = []
    for ev in events:
        payload = edit(ev)
        if payload is not None:
            out.append(NewEvent(stream_id=ev.stream_id, run_id=ev.run_id, payload=payload, event_id=ev.event_id))
    with EventLog(dst) as b:
        b.append(out, blobs=blobs)


def replay_cli(*args: str) -> Ran:
    """`searchtrace replay ...` in-process (exit codes as the installed command gives them)."""
    return run_cli("replay", *args)


@pytest.mark.anyio
async def test_unchanged_recording_replays_exactly(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"replay tried to open a connection: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    with EventLog(recorded, read_only=True) as log:
        recs = load_recorded(log)
        report = await replay_trajectories(log, recs)
        n_calls = sum(
            1 for r in recs for p in r.payloads if type(p).__name__ in ("ModelResponded", "SearchCompleted", "FetchCompleted")
        )
    assert report.ok and report.trajectories == 6 and report.matched == 6
    assert all(o.ok and o.divergence is None and o.steps > 5 for o in report.outcomes)
    assert report.requests_served == n_calls  # every recorded call was answered from events, exactly once


def test_cli_replay_exit_codes(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok = replay_cli("--db", str(recorded))
    assert ok.code == 0, (ok.out + ok.err)
    assert "6 trajectories, 6 match, 0 diverge" in ok.out
    with EventLog(recorded, read_only=True) as log:
        one = load_recorded(log)[0].trajectory_id
    single = replay_cli("--db", str(recorded), "--trajectory", one, "--json")
    assert single.code == 0 and msgspec.json.decode(single.out)["trajectories"] == 1
    unknown = replay_cli("--db", str(recorded), "--trajectory", "nope")
    assert unknown.code == 2 and "nope" in (unknown.out + unknown.err)

    import searchtrace.engine._prompts as prompts

    original = prompts._PROMPTS["agent/1"]
    monkeypatch.setitem(prompts._PROMPTS, "agent/1", original.replace("careful research assistant", "hasty assistant"))
    changed = replay_cli("--db", str(recorded), "--trajectory", one)
    assert changed.code == 1
    assert f"trajectory {one}: first divergent step 2 (iteration 1, model request)" in changed.out
    assert "system prompt" in changed.out and "0 match, 1 diverge" in changed.out


@pytest.mark.anyio
async def test_another_prompt_version_names_the_step_with_a_diff(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import searchtrace.engine._prompts as prompts

    monkeypatch.setitem(prompts._PROMPTS, "agent/test", prompts._PROMPTS["agent/1"].replace("careful", "careless"))
    with EventLog(recorded, read_only=True) as log:
        report = await replay_trajectories(log, load_recorded(log), prompt_version="agent/test")
    assert report.diverged == 6 and report.matched == 0
    for o in report.outcomes:
        assert o.divergence is not None and "first divergent step 2 (iteration 1, model request)" in o.divergence
        assert "-    You are a careful research" in o.divergence and "+    You are a careless research" in o.divergence


@pytest.mark.anyio
async def test_changed_event_is_the_first_divergent_step(recorded: Path, tmp_path: Path) -> None:
    target: dict[str, Any] = {}

    def edit(ev: StoredEvent) -> Payload | None:
        p = ev.payload
        if isinstance(p, SearchResult) and not target and p.rank == 2:
            target.update(stream=ev.stream_id, seq=ev.stream_seq)
            return msgspec.structs.replace(p, title=p.title + " (edited)")
        return p

    db = tmp_path / "edited.duckdb"
    copy_store(recorded, db, edit)
    with EventLog(db, read_only=True) as log:
        report = await replay_trajectories(log, load_recorded(log))
    bad = [o for o in report.outcomes if not o.ok]
    assert len(bad) == 1 and bad[0].divergence is not None
    assert f"first divergent step {target['seq'] + 1} (iteration 1, search.result)" in bad[0].divergence
    assert "title: recorded" in bad[0].divergence and "(edited)" in bad[0].divergence


def test_replay_miss_fails_loudly(recorded: Path, tmp_path: Path) -> None:
    dropped: list[str] = []

    def edit(ev: StoredEvent) -> Payload | None:
        p = ev.payload
        if isinstance(p, SearchCalled) and not dropped:
            dropped.append(p.call_id)
            return msgspec.structs.replace(p, query=p.query + " (not what the agent asks)")
        return p

    db = tmp_path / "miss.duckdb"
    copy_store(recorded, db, edit)
    res = replay_cli("--db", str(db))
    assert res.code == 1
    assert "replay miss: " in res.out and "no recorded search for query" in res.out
    assert "5 match, 1 diverge" in res.out


@pytest.mark.anyio
async def test_transport_never_answers_what_was_not_recorded() -> None:
    tape = Tape.from_payloads("t1", [SearchCalled(call_id="c1", iteration=1, query="q"),
                                     SearchCompleted(call_id="c1", status="ok", n_results=0, latency_ms=1.0, raw_digest="x")])
    transport = ReplayTransport({"t1": tape}, lambda d: b'{"web": {"results": []}}')
    async with httpx.AsyncClient(transport=transport, base_url="https://api.search.brave.com") as client:
        r = await client.get("/res/v1/web/search", params={"q": "q"}, headers={"X-Searchtrace-Trace": "t1"})
        assert r.status_code == 200 and r.json() == {"web": {"results": []}}
        for call in (
            lambda: client.get("/res/v1/web/search", params={"q": "q"}, headers={"X-Searchtrace-Trace": "t1"}),  # used up
            lambda: client.get("/res/v1/web/search", params={"q": "q"}, headers={"X-Searchtrace-Trace": "t2"}),
            lambda: client.post("https://api.openai.com/v1/chat/completions", json={"messages": []},
                                headers={"X-Searchtrace-Trace": "t1"}),
            lambda: client.get("https://r.jina.ai/https://example.org/", headers={"X-Searchtrace-Trace": "t1"}),
            lambda: client.delete("/anything", headers={"X-Searchtrace-Trace": "t1"}),
        ):
            with pytest.raises(ReplayMiss):
                await call()
    assert len(transport.misses) == 5 and transport.requests == 6


def test_imported_traces_are_skipped_not_replayed(tmp_path: Path) -> None:
    from searchtrace.replay.interchange import import_files

    line = {
        "trajectory_id": "x1", "provider": "brave", "qid": "q1", "question": "Q?", "gold_answer": "A",
        "final_answer": "A", "stop_reason": "answered",
        "steps": [{"kind": "model", "iteration": 1, "usage": {"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": 0},
                   "latency_ms": 1}],
    }
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(msgspec.json.encode(line) + b"\n")
    db = tmp_path / "imported.duckdb"
    with EventLog(db) as log:
        import_files(log, [traces], [], [])
    res = replay_cli("--db", str(db))
    assert res.code == 2 and "nothing to replay" in (res.out + res.err) and "run.started" in (res.out + res.err)


@pytest.mark.anyio
async def test_recording_under_faults_replays_exactly(tmp_path: Path) -> None:
    """Retries, failed searches and fetches, broken bodies and errored trajectories replay step for step."""
    from searchtrace import pipeline
    from searchtrace.adapters.sandbox import FaultPlan, create_app, in_process
    from searchtrace.engine import load_config, point_at_sandbox

    (tmp_path / "run.toml").write_text(CONFIG.replace("n = 2", "n = 3") + "\n[fetch]\ncache_dir = \"\"\nmax_retries = 1\n")
    cfg = load_config(tmp_path / "run.toml")
    cfg.agent.max_retries = 1
    for p in cfg.providers.values():
        p.max_retries = 1
    box = in_process(create_app(faults=FaultPlan(seed=7, rates={"500": 0.3, "malformed": 0.08, "truncated": 0.05})))
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "faults.duckdb"
    summary = await pipeline.record(cfg, db, box.transport, progress=False)
    assert summary.retries > 0  # the recording did go through faults
    with EventLog(db, read_only=True) as log:
        recs = load_recorded(log)
        statuses = {getattr(p, "status", "ok") for r in recs for p in r.payloads}
        report = await replay_trajectories(log, recs)
    assert statuses - {"ok"}, "no failed call was recorded; the fault plan did nothing"
    assert report.ok and report.matched == len(recs) == 9, [o.divergence for o in report.outcomes if not o.ok]
