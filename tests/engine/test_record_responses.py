"""`[agent] api = "responses"`: `record --sandbox` over the Responses API makes the trajectories it makes over chat
completions (same searches, fetches and answers), recorded with the same `model.responded` fields, judged and
reported alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from searchtrace.store import EventLog
from tests.builders import run_cli

CONFIG = """run_id = "{api}"
[agent]
model = "sandbox-agent"
api = "{api}"
rps = 1000.0
[providers.brave]
rps = 1000.0
[providers.tavily]
rps = 1000.0
[fetch]
cache_dir = ""
rps = 1000.0
[dataset]
path = "sandbox"
[sample]
n = 3
"""
STEPS = ("search.called", "fetch.called", "answer.final", "trajectory.finished")
# what differs between the two APIs: reasoning (so output) tokens are drawn per request, and wall-clock time
_NOT_COMPARED = ("token", "_ms", "latency")


def _rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(args)).fetchall()
    finally:
        con.close()


def _cells(db: Path, run: str, types: tuple[str, ...]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(provider, qid) -> the payloads of those types of its trajectory in `run`, in stream order."""
    starts = {sid: (json.loads(p)["provider"], json.loads(p)["qid"]) for sid, p in _rows(
        db, "SELECT stream_id, payload FROM events WHERE run_id = ? AND type = 'trajectory.started'", run)}
    out: dict[tuple[str, str], list[dict[str, Any]]] = {cell: [] for cell in starts.values()}
    for sid, p in _rows(db, "SELECT stream_id, payload FROM events WHERE run_id = ? AND type IN "
                            f"({', '.join('?' * len(types))}) ORDER BY stream_id, stream_seq", run, *types):
        out[starts[sid]].append(json.loads(p))
    return out


def _steps(db: Path, run: str) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    return {cell: [(p["type"], p.get("query"), p.get("url"), p.get("text"), p.get("reason")) for p in ps]
            for cell, ps in _cells(db, run, STEPS).items()}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store holding the same plan recorded over both APIs (runs `chat` and `responses`), judged."""
    tmp = tmp_path_factory.mktemp("responses")
    store = tmp / "both.duckdb"
    for api in ("chat", "responses"):
        (tmp / f"{api}.toml").write_text(CONFIG.format(api=api))
        code, _, err = run_cli("record", "--config", str(tmp / f"{api}.toml"), "--db", str(store), "--sandbox",
                               "--no-progress")
        assert code == 0, err
    code, _, err = run_cli("judge", "--db", str(store), "--sandbox", "--no-progress")
    assert code == 0, err
    return store


def test_the_same_trajectories_over_both_apis(db: Path) -> None:
    chat, responses = _steps(db, "chat"), _steps(db, "responses")
    assert len(chat) == 6 and chat == responses
    kinds = {step[0] for steps in chat.values() for step in steps}
    assert kinds == set(STEPS)  # searches, fetches and answers all compared
    (chat_cfg,), (resp_cfg,) = (_rows(db, "SELECT payload->'$.config.agent' FROM events WHERE run_id = ? AND "
                                          "type = 'run.started'", run)[0] for run in ("chat", "responses"))
    assert "api" not in json.loads(chat_cfg) and json.loads(resp_cfg)["api"] == "responses"


def test_model_responded_fields_over_responses(db: Path) -> None:
    chat = _cells(db, "chat", ("model.responded",))
    responses = _cells(db, "responses", ("model.responded",))
    log = EventLog(db, read_only=True)
    try:
        raws = {t["raw_digest"]: json.loads(log.get_blob(t["raw_digest"])) for ts in responses.values() for t in ts}
    finally:
        log.close()
    turns = [t for ts in responses.values() for t in ts]
    assert {t["finish_reason"] for t in turns} == {"tool_calls", "stop"}
    assert all(t["usage"]["reasoning_tokens"] > 0 for t in turns) and any(t["usage"]["cached_tokens"] > 0 for t in turns)
    for t in turns:
        raw = raws[t["raw_digest"]]
        assert raw["object"] == "response"
        calls = [o for o in raw["output"] if o["type"] == "function_call"]
        assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
            (c["call_id"], c["name"], c["arguments"]) for c in t["tool_calls"]]
        text = "".join(p["text"] for o in raw["output"] if o["type"] == "message" for p in o["content"])
        assert (t["text"] or "") == text
        assert t["usage"]["output_tokens"] == raw["usage"]["output_tokens"]
        assert t["usage"]["cached_tokens"] == raw["usage"]["input_tokens_details"]["cached_tokens"]
    for cell, ts in chat.items():
        theirs = responses[cell]
        # request_sha256 hashes the messages and tools the agent passed: the first turn's are the same on both APIs
        assert ts[0]["request_sha256"] == theirs[0]["request_sha256"]
        assert [t["usage"]["input_tokens"] for t in ts] == [t["usage"]["input_tokens"] for t in theirs]
        assert [t["finish_reason"] for t in ts] == [t["finish_reason"] for t in theirs]


def test_judged_and_reported_alike(db: Path) -> None:
    reports = {}
    for run in ("chat", "responses"):
        code, out, err = run_cli("report", "--db", str(db), "--run-id", run, "--json")
        assert code == 0, err
        reports[run] = json.loads(out)["providers"]
    assert set(reports["chat"]) == {"brave", "tavily"}
    for provider, figures in reports["chat"].items():
        same = {k: v for k, v in figures.items() if not any(s in k for s in _NOT_COMPARED)}
        theirs = {k: v for k, v in reports["responses"][provider].items() if not any(s in k for s in _NOT_COMPARED)}
        assert same == theirs and figures["valid_items"] > 0 and figures["trajectories"] == 3


def test_a_bad_api_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(CONFIG.format(api="graphql"))
    code, out, err = run_cli("record", "--config", str(tmp_path / "bad.toml"), "--db", str(tmp_path / "x.duckdb"),
                             "--sandbox", "--no-progress")
    assert code == 2 and err.strip().splitlines() == [
        f"searchtrace: error: {tmp_path / 'bad.toml'}: key agent.api: must be one of 'chat', 'responses', 'anthropic', 'gemini', got 'graphql'"]
    assert not (tmp_path / "x.duckdb").exists()


def test_replay_re_executes_a_responses_run(db: Path) -> None:
    code, out, err = run_cli("replay", "--db", str(db))
    assert code == 0, out + err
    assert "12 trajectories, 12 match, 0 diverge" in out + err


@pytest.mark.parametrize("finish", ["tool_calls", "stop", "length"])
def test_a_reply_without_its_raw_body_is_replayed_as_the_same_response(finish: str) -> None:
    from searchtrace.adapters import parse_response
    from searchtrace.replay._reexec import responses_body
    from searchtrace.store import ModelResponded, ToolCall, Usage

    calls = [ToolCall(call_id="call_1", name="search_web", arguments='{"query":"q"}')] if finish == "tool_calls" else []
    m = ModelResponded(iteration=2, text=None if calls else "FINAL ANSWER: 1937", tool_calls=calls,
                       usage=Usage(input_tokens=10, output_tokens=7, reasoning_tokens=3, cached_tokens=2),
                       latency_ms=1.0, finish_reason=finish)
    assert parse_response(responses_body(m, "gpt-x")) == (m.text, calls, m.usage, finish)
