"""Recorded runs against the sandbox world through the production adapters (in-process ASGI and real loopback)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace import pipeline
from searchtrace.adapters import normalize_url
from searchtrace.adapters.sandbox import (
    ROOT,
    FaultPlan,
    create_app,
    default_world,
    in_process,
    question_rows,
    running,
)
from searchtrace.engine import endpoint_factory, get_prompt, point_at_sandbox, rebuild_messages, record_run
from searchtrace.pipeline._recording import questions_of
from searchtrace.store import (
    AnswerFinal,
    CallRetried,
    DatasetQuestion,
    EventLog,
    FetchCalled,
    FetchCompleted,
    ModelResponded,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    ToolRefused,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.builders import Capture, check_chain, sandbox_config, trajectories

pytestmark = pytest.mark.anyio


async def record(cfg: Any, db: Path, app: Any) -> Any:
    """Records through the in-process sandbox over `app`, or the production transport when `app` is None."""
    log = EventLog(db)
    try:
        return await record_run(cfg, log, endpoint_factory(in_process(app).transport if app is not None else None),
                                questions=questions_of(cfg))
    finally:
        log.close()


def check_trajectory(tid: str, payloads: list[Any], sent: list[list[dict[str, Any]]], counters: Counter[Any],
                     get_blob: Any, provider: str) -> None:
    """Every fact of one trajectory agrees with what the sandbox saw of it."""
    assert isinstance(payloads[0], TrajectoryStarted) and payloads[0].trajectory_id == tid
    done = payloads[-1]
    assert isinstance(done, TrajectoryFinished)
    assert sum(isinstance(p, TrajectoryFinished) for p in payloads) == 1
    # the message lists re-derived from events are exactly the requests the chat route received
    assert rebuild_messages(payloads, get_prompt().text, get_blob) == sent
    replies = [p for p in payloads if isinstance(p, ModelResponded)]
    assert counters[("chat", tid)] == len(replies) == done.iterations
    assert [r.iteration for r in replies] == list(range(1, len(replies) + 1))
    searches = [p for p in payloads if isinstance(p, SearchCalled)]
    assert counters[(provider, tid)] == len(searches)
    assert counters[("jina", tid)] == sum(isinstance(p, FetchCalled) for p in payloads)
    results = [p for p in payloads if isinstance(p, SearchResult)]
    assert [r.doc_id for r in results] == [f"d{i}" for i in range(1, len(results) + 1)]
    assert all(r.url_normalized == normalize_url(r.url) for r in results)
    by_call = Counter(r.call_id for r in results)
    for c in (p for p in payloads if isinstance(p, SearchCompleted)):
        assert c.n_results == by_call[c.call_id] and (c.raw_digest is None or get_blob(c.raw_digest))
    for f in (p for p in payloads if isinstance(p, FetchCompleted)):
        assert f.status != "ok" or get_blob(f.content_digest)
    assert done.usage.input_tokens == sum(r.usage.input_tokens for r in replies)
    assert done.usage.output_tokens == sum(r.usage.output_tokens for r in replies)
    answers = [p for p in payloads if isinstance(p, AnswerFinal)]
    assert (done.reason == "answered") == (len(answers) == 1)
    if answers:
        assert replies[-1].text is not None and answers[0].text in replies[-1].text


async def test_recorded_run_rebuilds_every_trajectory_over_real_loopback(tmp_path: Path) -> None:
    app = Capture(create_app())
    cfg = sandbox_config(tmp_path, n=9)
    with running(app=app) as root:  # type: ignore[arg-type]
        point_at_sandbox(cfg, root)
        summary = await record(cfg, tmp_path / "r.duckdb", None)  # production transport (aiohttp) over TCP
    assert summary.trajectories == 27 and summary.recorded == 27 and summary.finished
    counters: Counter[Any] = app.state.counters
    with EventLog(tmp_path / "r.duckdb", read_only=True) as log:
        trajs = trajectories(log)
        assert len(trajs) == 27
        for tid, payloads in trajs.items():
            provider = tid.split(":")[1]
            check_trajectory(tid, payloads, app.chats[tid], counters, log.get_blob, provider)
        head = [ev.payload for ev in log.read(stream_id="run:t")]
    started = head[0]
    assert isinstance(started, RunStarted) and started.config["prompt"]["sha256"] == get_prompt().sha256
    assert "sandbox-key" not in msgspec.json.encode(started).decode()
    assert sum(isinstance(p, DatasetQuestion) for p in head) == 9
    assert type(head[-1]).__name__ == "RunFinished"
    check_chain(tmp_path / "r.duckdb")
    # the same config again: nothing is called
    before = sum(counters.values())
    with running(app=app) as root:  # type: ignore[arg-type]
        point_at_sandbox(cfg, root)
        again = await record(cfg, tmp_path / "r.duckdb", None)
    assert again.already == 27 and again.recorded == 0 and sum(counters.values()) == before


async def test_max_iterations_and_parallel_calls_in_process(tmp_path: Path) -> None:
    app = Capture(create_app())
    cfg = sandbox_config(tmp_path, n=None, limits={"max_iterations": 2})
    point_at_sandbox(cfg, ROOT)
    summary = await record(cfg, tmp_path / "m.duckdb", app)
    assert summary.reasons.get("max_iterations", 0) > 0
    multi = 0
    with EventLog(tmp_path / "m.duckdb", read_only=True) as log:
        for tid, payloads in trajectories(log).items():
            check_trajectory(tid, payloads, app.chats[tid], app.state.counters, log.get_blob, tid.split(":")[1])
            done = payloads[-1]
            assert isinstance(done, TrajectoryFinished) and done.iterations <= 2
            if done.reason == "max_iterations":
                assert done.iterations == 2 and not any(isinstance(p, AnswerFinal) for p in payloads)
            for i, p in enumerate(payloads):
                if isinstance(p, ModelResponded) and len(p.tool_calls) > 1 and p.iteration < 2:
                    multi += 1  # executed in one turn; recorded in call order
                    called = [q.call_id for q in payloads[i + 1 :] if isinstance(q, (SearchCalled, FetchCalled, ToolRefused))]
                    assert called[: len(p.tool_calls)] == [c.call_id for c in p.tool_calls]
    assert multi > 0


class ForgingChat:
    """The real chat adapter, except that the model's first fetch_page asks for a doc_id it never saw."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.forged: set[str | None] = set()

    async def complete(self, messages: list[dict[str, Any]], **kw: Any) -> Any:
        reply = await self.inner.complete(messages, **kw)
        tid = kw.get("trace_id")
        for c in reply.tool_calls:
            if c.name == "fetch_page" and tid not in self.forged:
                self.forged.add(tid)
                c.arguments = '{"doc_id": "d999"}'
                break
        return reply


async def test_forged_doc_id_is_refused_without_a_fetch(tmp_path: Path) -> None:
    app = Capture(create_app())
    cfg = sandbox_config(tmp_path, n=4)
    point_at_sandbox(cfg, ROOT)
    base = endpoint_factory(in_process(app).transport)

    async def make(c: Any, stack: Any) -> Any:
        eps = await base(c, stack)
        eps.chat = ForgingChat(eps.chat)
        return eps

    log = EventLog(tmp_path / "f.duckdb")
    try:
        await record_run(cfg, log, make, questions=questions_of(cfg))
        trajs = trajectories(log)
    finally:
        log.close()
    refused = 0
    for tid, payloads in trajs.items():
        for p in payloads:
            if isinstance(p, ToolRefused):
                refused += 1
                assert "d999" in p.reason and p.name == "fetch_page"
                # the model's next request carries the refusal as that call's tool message
                nxt = app.chats[tid][p.iteration]
                msg = next(m for m in nxt if m.get("tool_call_id") == p.call_id)
                assert msg["content"].startswith("Error: unknown doc_id 'd999'")
        assert app.state.counters[("jina", tid)] == sum(isinstance(p, FetchCalled) for p in payloads)
    assert refused > 0


async def test_failing_provider_and_chat_errors_do_not_stop_others(tmp_path: Path) -> None:
    rows = question_rows(default_world().questions)[:6]
    for r in rows[:2]:
        r["question"] = r["question"] + " !fault:500"  # the chat route fails every attempt for these
    qfile = tmp_path / "q.jsonl"
    qfile.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))
    app = create_app(faults=FaultPlan(seed=1, rates={"503": 1.0}, routes=frozenset({"tavily"})))
    cfg = sandbox_config(tmp_path, n=None, dataset=str(qfile), providers={"tavily": {"max_retries": 1}})
    point_at_sandbox(cfg, ROOT)
    summary = await record(cfg, tmp_path / "e.duckdb", app)
    assert summary.recorded == 18 and not summary.finished and summary.to_retry == 6  # the next record retries them
    with EventLog(tmp_path / "e.duckdb", read_only=True) as log:
        trajs = trajectories(log)
    faulty = {r["qid"] for r in rows[:2]}
    for tid, payloads in trajs.items():
        _, provider, qid = tid.split(":")
        done = payloads[-1]
        assert isinstance(done, TrajectoryFinished)
        if qid in faulty:
            assert done.reason == "error" and "500" in (done.error or "") and done.iterations == 0
            assert sum(isinstance(p, CallRetried) for p in payloads) == 2  # the chat's retries are kept
            assert app.state.counters[("chat", tid)] == 3 and not any(isinstance(p, ModelResponded) for p in payloads)
        else:
            assert done.reason in ("answered", "max_iterations")
        if provider == "tavily" and qid not in faulty:
            comps = [p for p in payloads if isinstance(p, SearchCompleted)]
            assert comps and all(c.status == "http_error" and c.http_status == 503 for c in comps)
            assert any(isinstance(p, CallRetried) and p.what.startswith("search:") for p in payloads)
        elif qid not in faulty:
            assert all(p.status == "ok" for p in payloads if isinstance(p, SearchCompleted))


@pytest.mark.parametrize(("var", "says"), [("BRAVE_API_KEY", "Brave rejected the key in BRAVE_API_KEY"),
                                           ("OPENAI_API_KEY", "rejected the key in OPENAI_API_KEY")])
async def test_a_rejected_key_stops_the_run_with_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               var: str, says: str) -> None:
    from searchtrace.store import BadInput

    monkeypatch.setenv(var, "bad-key-for-test")
    cfg = sandbox_config(tmp_path, n=3)
    point_at_sandbox(cfg, ROOT)
    with pytest.raises(BadInput) as err:
        await pipeline.record(cfg, tmp_path / "k.duckdb", in_process().transport, progress=False)
    assert says in str(err.value) and "bad-key-for-test" not in str(err.value)
    monkeypatch.delenv(var)
    done = await pipeline.record(cfg, tmp_path / "k.duckdb", in_process().transport, progress=False)
    assert done.finished and done.already + done.recorded == 9
    with EventLog(tmp_path / "k.duckdb", read_only=True) as log:
        assert all(not (p.reason == "error") for ps in trajectories(log).values() for p in ps if isinstance(p, TrajectoryFinished))


async def test_tool_calls_of_one_turn_run_at_the_same_time(tmp_path: Path) -> None:
    # every search takes 250 ms; two searches of one turn must overlap, not queue
    app = Capture(create_app(faults=FaultPlan(seed=0, rates={"slow": 1.0}, routes=frozenset({"brave"}))))
    cfg = sandbox_config(tmp_path, n=None, limits={"max_iterations": 2})
    cfg.providers = {"brave": cfg.providers["brave"]}
    point_at_sandbox(cfg, ROOT)
    await record(cfg, tmp_path / "p.duckdb", app)
    with EventLog(tmp_path / "p.duckdb", read_only=True) as log:
        trajs = trajectories(log)
    pairs = 0
    for tid, payloads in trajs.items():
        first = next(p for p in payloads if isinstance(p, ModelResponded))
        if len([c for c in first.tool_calls if c.name == "search_web"]) < 2:
            continue
        times = [t for trace, path, t in app.arrivals if trace == tid and "/brave/" in path][:2]
        assert len(times) == 2 and abs(times[1] - times[0]) < 0.2, (tid, times)
        pairs += 1
    assert pairs > 0
