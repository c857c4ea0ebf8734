"""Judge runs against the sandbox judge over events built with the store's own structs (docs/concepts/judge.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.adapters import normalize_url
from searchtrace.replay import JudgeOptions, run_judge
from searchtrace.replay._judge import stream_of
from searchtrace.store import (
    AnswerFinal,
    BadInput,
    CallFailed,
    CallRetried,
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeStarted,
    JudgeVerdict,
    ModelResponded,
    NewEvent,
    Payload,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    ToolCall,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.builders import run_cli

QUESTION = "What is the founding year of Zembla Works?"
GOLD = "1987"

# (url, snippet); page: markdown when fetched ok, "" when the fetch failed, None when not fetched
DOCS: list[tuple[str, str, str | None]] = [
    ("https://a.example/zembla", "The founding year of Zembla Works is 1987.", None),
    ("https://b.example/old", "The founding year of Zembla Works is 1991.", None),
    ("https://c.example/food", "Cooking recipes for every season.", None),
    ("https://d.example/about", "Zembla Works is a company in the north.", "The founding year of Zembla Works is 1987."),
    ("https://e.example/down", "Zembla Works history.", ""),
    ("https://f.example/prose", "Zembla Works notes !fault:prose", None),
    ("https://g.example/trunc", "Zembla Works notes !fault:badjson", None),
    ("https://h.example/shape", "Zembla Works notes !fault:wrongshape", None),
    ("https://i.example/mismatch", "Zembla Works notes !fault:pagemismatch", None),
]


def trajectory_payloads(tid: str, docs: list[tuple[str, str, str | None]], blobs: dict[str, bytes]) -> list[Payload]:
    """One trajectory's events: a search returning `docs` (plus a repeat of the first URL), fetches, an answer."""
    import hashlib

    out: list[Payload] = [TrajectoryStarted(trajectory_id=tid, qid="q1", provider="brave", question=QUESTION, gold_answer=GOLD)]
    out.append(ModelResponded(iteration=1, text=None, tool_calls=[ToolCall(call_id="c1", name="search_web", arguments="{}")]))
    out.append(SearchCalled(call_id="c1", iteration=1, query="zembla works founded"))
    rows = [*docs, (docs[0][0] + "?utm_source=x", "a second appearance of the first URL", None)]
    for rank, (url, snippet, _) in enumerate(rows, start=1):
        out.append(
            SearchResult(call_id="c1", doc_id=f"d{rank}", rank=rank, title=f"Title {rank}", url=url,
                         url_normalized=normalize_url(url), domain=url.split("/")[2], snippet=snippet, metadata={"age": "2y"})
        )
    out.append(SearchCompleted(call_id="c1", status="ok", n_results=len(rows), latency_ms=5.0))
    for rank, (url, _, page) in enumerate(docs, start=1):
        if page is None:
            continue
        cid = f"f{rank}"
        out.append(FetchCalled(call_id=cid, iteration=2, doc_id=f"d{rank}", url=url))
        if page:
            d = hashlib.sha256(page.encode()).hexdigest()
            blobs[d] = page.encode()
            out.append(FetchCompleted(call_id=cid, doc_id=f"d{rank}", status="ok", content_digest=d, n_bytes=len(page),
                                      n_tokens=len(page) // 4, cache_hit=False, latency_ms=3.0))
        else:
            out.append(FetchCompleted(call_id=cid, doc_id=f"d{rank}", status="http_error", content_digest=None, n_bytes=0,
                                      n_tokens=0, cache_hit=False, latency_ms=3.0, http_status=500))
    out.append(AnswerFinal(iteration=3, text="1987"))
    out.append(TrajectoryFinished(reason="answered", iterations=3))
    return out


def build_store(path: Path, trajectories: dict[str, list[tuple[str, str, str | None]]]) -> None:
    blobs: dict[str, bytes] = {}
    events = []
    for tid, docs in trajectories.items():
        events += [NewEvent(stream_id=f"traj:{tid}", run_id="r1", payload=p) for p in trajectory_payloads(tid, docs, blobs)]
    with EventLog(path) as log:
        log.append(events, blobs=list(blobs.values()))


def sandbox_chat(app: Any, *, model: str = "sandbox-judge", **limits: Any) -> Any:
    from searchtrace.adapters import SANDBOX_KEY, build_chat, sandbox_endpoint
    from searchtrace.adapters.sandbox import in_process

    fields = {"max_retries": 2, "max_wait_s": 0.05, **limits}
    box = in_process(app)
    return build_chat(model, sandbox_endpoint("openai", box.root, **fields), transport=box.transport,
                      key_fallback=SANDBOX_KEY)


def verdicts(log: EventLog, judge_run_id: str) -> dict[str, JudgeVerdict]:
    out: dict[str, JudgeVerdict] = {}
    for ev in log.read(types=["judge.verdict"], stream_id=stream_of(judge_run_id)):
        assert isinstance(ev.payload, JudgeVerdict)
        key = f"{ev.payload.item.trajectory_id}|{ev.payload.item.url_normalized}"
        assert key not in out, f"two verdicts for {key}"
        out[key] = ev.payload
    return out


def n_verdicts(log: EventLog, judge_run_id: str) -> int:
    return sum(1 for _ in log.read(types=["judge.verdict"], stream_id=stream_of(judge_run_id)))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "st.duckdb"
    build_store(path, {"t1": DOCS, "t2": DOCS[:4]})
    return path


@pytest.fixture
def app() -> Any:
    from searchtrace.adapters.sandbox import create_app

    return create_app()


@pytest.mark.anyio
async def test_full_judge_run(store: Path, app: Any) -> None:
    chat = sandbox_chat(app)
    with EventLog(store) as log:
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1", concurrency=4), chat=chat)
        await chat.aclose()
        got = verdicts(log, "j1")
        n_items = len(DOCS) + 4  # the repeated URL is the same item as its first appearance
        assert stats.items == n_items == len(got) == n_verdicts(log, "j1")
        assert stats.done == n_items and stats.failed == 0 and stats.already == 0
        assert stats.invalid == 4 and stats.valid == n_items - 4
        started = [e.payload for e in log.read(types=["judge.started"])]
        assert len(started) == 1 and isinstance(started[0], JudgeStarted)
        assert started[0].model == "sandbox-judge" and started[0].prompt_version == "judge/1" and len(started[0].prompt_sha256) == 64
        for key, v in got.items():
            assert v.raw_digest is not None and log.has_blob(v.raw_digest), key
            assert v.latency_ms > 0 and v.usage.input_tokens > 0, key
            # docs/reference/prices.md: the provider's time and our own waits, each within the total
            assert isinstance(v.provider_ms, float) and isinstance(v.queue_ms, float), key
            assert 0 < v.provider_ms <= v.latency_ms and 0 <= v.queue_ms <= v.latency_ms, key
    url = {u: f"t1|{normalize_url(u)}" for u, _, _ in DOCS}
    a, b, c = (got[url[DOCS[i][0]]] for i in range(3))
    assert a.valid and a.labels is not None and a.labels.snippet.supports_gold and a.labels.page is None
    assert a.labels.supports_final_answer and a.surface == "snippet"
    assert b.labels is not None and b.labels.snippet.contradicts_gold and not b.labels.snippet.supports_gold
    assert c.labels is not None and not c.labels.snippet.relevant
    d = got[url[DOCS[3][0]]]  # fetched, page visible: both snippet and page labels
    assert d.valid and d.surface == "page" and d.labels is not None and d.labels.page is not None
    assert d.labels.page.supports_gold and not d.labels.snippet.supports_gold and d.labels.snippet.relevant
    e = got[url[DOCS[4][0]]]  # fetched, but no ok fetch: snippet only
    assert e.valid and e.surface == "snippet" and e.labels is not None and e.labels.page is None
    reasons = {k: got[url[DOCS[i][0]]].invalid_reason for i, k in ((5, "prose"), (6, "badjson"), (7, "wrongshape"), (8, "mismatch"))}
    assert all(not got[url[DOCS[i][0]]].valid and got[url[DOCS[i][0]]].labels is None for i in range(5, 9))
    assert reasons["prose"] is not None and reasons["prose"].startswith("not a JSON object")
    assert reasons["badjson"] is not None and reasons["badjson"].startswith("not valid JSON")
    assert reasons["wrongshape"] is not None and reasons["wrongshape"].startswith("wrong shape")
    assert reasons["mismatch"] == "page is not null but the item was not page-visible"
    # the sandbox saw every item exactly once, under the judge's trace id
    chat_traces = Counter({t: n for (route, t), n in app.state.counters.items() if route == "chat"})
    assert set(chat_traces) == {f"j1|{k}" for k in got} and set(chat_traces.values()) == {1}


@pytest.mark.anyio
async def test_resume_calls_only_missing_items_and_second_run_is_separate(store: Path, app: Any) -> None:
    chat = sandbox_chat(app)
    with EventLog(store) as log:
        all_items = (await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1"), chat=chat)).items
        # a judge run that stopped half-way: its first verdicts only (same stream, same event ids)
        first = list(log.read(types=["judge.verdict"], stream_id=stream_of("j1")))
    half = store.parent / "half.duckdb"
    build_store(half, {"t1": DOCS, "t2": DOCS[:4]})
    with EventLog(half) as log:
        kept = first[: len(first) // 2]
        log.append([NewEvent(stream_id=e.stream_id, run_id=e.run_id, payload=e.payload, event_id=e.event_id) for e in kept])
        before = sum(app.state.totals.values())
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1"), chat=chat)
        assert stats.already == len(kept) and stats.done == all_items - len(kept)
        assert sum(app.state.totals.values()) - before == all_items - len(kept)
        assert n_verdicts(log, "j1") == all_items
        # again: nothing left to call
        before = sum(app.state.totals.values())
        again = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1"), chat=chat)
        assert again.done == 0 and again.already == all_items and sum(app.state.totals.values()) == before
        # a second judge run leaves the first untouched
        snapshot = [(e.position, e.hash) for e in log.read(stream_id=stream_of("j1"))]
        other = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j2"), chat=chat)
        assert other.done == all_items and n_verdicts(log, "j2") == all_items
        assert [(e.position, e.hash) for e in log.read(stream_id=stream_of("j1"))] == snapshot
        with pytest.raises(BadInput, match="was started with model"):
            await run_judge(log, JudgeOptions(model="another-model", judge_run_id="j1"), chat=chat)
    await chat.aclose()


@pytest.mark.anyio
async def test_retries_are_recorded_and_failures_stay_pending(tmp_path: Path, app: Any) -> None:
    path = tmp_path / "st.duckdb"
    docs: list[tuple[str, str, str | None]] = [
        ("https://a.example/x", "The founding year of Zembla Works is 1987. !fault:503x1", None),
        ("https://b.example/y", "Zembla Works. !fault:500", None),
    ]
    build_store(path, {"t1": docs})
    chat = sandbox_chat(app, max_retries=1)
    with EventLog(path) as log:
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1"), chat=chat)
        assert stats.items == 2 and stats.done == 1 and stats.failed == 1 and stats.retried == 2
        got = verdicts(log, "j1")
        assert list(got) == [f"t1|{normalize_url(docs[0][0])}"] and next(iter(got.values())).valid
        retries = [e.payload for e in log.read(types=["call.retried"], stream_id=stream_of("j1"))]
        assert len(retries) == 2 and all(isinstance(r, CallRetried) and r.what == "chat:sandbox-judge" for r in retries)
        assert {r.call_id for r in retries if isinstance(r, CallRetried)} == {f"j1|t1|{normalize_url(u)}" for u, _, _ in docs}
        failed = [e.payload for e in log.read(types=["call.failed"], stream_id=stream_of("j1"))]
        assert len(failed) == 1 and isinstance(failed[0], CallFailed)
        assert (failed[0].what, failed[0].call_id, failed[0].http_status, failed[0].attempts) == (
            "chat:sandbox-judge", f"j1|t1|{normalize_url(docs[1][0])}", 500, 2)
        # the failed item is retried by the next invocation of the same judge run (and fails again here)
        again = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1"), chat=chat)
        assert again.already == 1 and again.pending == 1 and again.failed == 1
    await chat.aclose()


@pytest.mark.anyio
async def test_rejected_key_stops_the_run(store: Path, app: Any) -> None:
    from searchtrace.adapters import OpenAIChat, Secret, sandbox_endpoint
    from searchtrace.adapters.sandbox import in_process

    box = in_process(app)
    chat = OpenAIChat(sandbox_endpoint("openai", box.root, max_retries=0), "sandbox-judge",
                      transport=box.transport, key=Secret("bad-key-123456"))
    with EventLog(store) as log, pytest.raises(BadInput) as info:
        await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1", concurrency=2), chat=chat)
    await chat.aclose()
    assert "HTTP 401" in str(info.value) and "bad-key" not in str(info.value)
    with EventLog(store) as log:
        assert n_verdicts(log, "j1") == 0


def test_cli_judge_sandbox(store: Path) -> None:
    from click.testing import CliRunner

    from searchtrace.cli import cli

    runner = CliRunner()
    res = runner.invoke(cli, ["judge", "--db", str(store), "--sandbox", "--json", "--rps", "0"])
    assert res.exit_code == 0, res.output
    stats = msgspec.json.decode(res.stdout)
    assert stats["judge_run_id"] == "sandbox-judge@judge/1" and stats["done"] == stats["items"] > 0
    assert stats["invalid"] == 4
    res2 = runner.invoke(cli, ["judge", "--db", str(store), "--sandbox"])
    assert res2.exit_code == 0 and "0 judged now" in res2.stdout
    code, _, err = run_cli("judge", "--db", str(store))  # through the entry point, as the installed command runs
    assert code == 2 and err == "searchtrace: error: --model is required (or use --sandbox)\n"


@pytest.mark.anyio
async def test_a_run_of_failures_stops_the_judge_run_with_the_reason(tmp_path: Path, app: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import searchtrace.replay._judge as judge_module

    monkeypatch.setattr(judge_module, "MAX_CONSECUTIVE_FAILURES", 5)
    path = tmp_path / "down.duckdb"
    docs: list[tuple[str, str, str | None]] = [
        (f"https://down{i:02d}.example/x", f"Zembla Works {i}. !fault:500", None) for i in range(12)]
    build_store(path, {"t1": docs})
    chat = sandbox_chat(app, max_retries=0)
    with EventLog(path) as log:
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1", concurrency=1), chat=chat)
        assert stats.items == 12 and stats.failed == 5 and stats.done == 0
        assert stats.stopped is not None and "5 judge calls in a row failed" in stats.stopped and "500" in stats.stopped
        assert app.state.totals["chat"] == 5  # the other 7 items were never called
        assert n_verdicts(log, "j1") == 0
    await chat.aclose()


@pytest.mark.anyio
async def test_fewer_failures_than_the_limit_do_not_stop_the_run(tmp_path: Path, app: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import searchtrace.replay._judge as judge_module

    monkeypatch.setattr(judge_module, "MAX_CONSECUTIVE_FAILURES", 5)
    path = tmp_path / "flaky.duckdb"
    docs: list[tuple[str, str, str | None]] = [
        (f"https://f{i:02d}.example/x", f"Zembla Works {i}. !fault:500", None) for i in range(4)]
    docs.append(("https://ok.example/x", "The founding year of Zembla Works is 1987.", None))
    build_store(path, {"t1": docs})
    chat = sandbox_chat(app, max_retries=0)
    with EventLog(path) as log:
        stats = await run_judge(log, JudgeOptions(model="sandbox-judge", judge_run_id="j1", concurrency=1), chat=chat)
        assert stats.stopped is None and stats.failed == 4 and stats.done == 1
    await chat.aclose()
