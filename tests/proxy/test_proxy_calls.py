"""docs/concepts/shown.md, the proxy never loses or mislabels a call: a reply is recorded whole when its agent leaves mid-stream,
encoded upstream bodies reach the agent decoded, another provider's route is a 404, `final` waits for the calls in
flight and a call after it is a 409, any qid works (path or header), and `--final last-reply`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from searchtrace.adapters.sandbox import running
from searchtrace.store import (
    AnswerFinal,
    CallFailed,
    FetchCompleted,
    ModelResponded,
    Payload,
    SearchCalled,
    SearchCompleted,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.proxy.support import proxy, streams
from tests.proxy.world import World, questions_with, streamed_text, wait_until

WEIRD = ["a/b", "what?x=1", "n#1", "two words", "ünï/cödé ✓", "50%", "a/../b"]


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[World, str]]:
    w = World()
    with running(w.app) as root:
        yield w, root


def _payloads(db: Path) -> dict[str, list[Payload]]:
    return {s: [p for _, _, p in evs] for s, evs in streams(db).items()}


def _one_line(r: httpx.Response) -> str:
    assert r.headers["content-type"].startswith("application/json"), r.headers
    assert len(r.text.strip().splitlines()) == 1, r.text
    return str(json.loads(r.text)["error"]["message"])


def test_an_agent_that_leaves_mid_stream_does_not_lose_the_reply(tmp_path: Path, world: tuple[World, str]) -> None:
    w, root = world
    qfile = tmp_path / "q.jsonl"
    qid = questions_with(qfile, [])[0]
    db = tmp_path / "left.duckdb"
    done_before = w.streams_done
    with proxy(db, qfile, "left", upstream="live", env=w.env(root)) as p:
        base = f"{p.url}/t/tavily/{qid}"
        with httpx.stream("POST", f"{base}/openai/v1/chat/completions", timeout=30, json={
                "model": "m", "stream": True, "messages": [{"role": "user", "content": "stream please"}]}) as r:
            assert r.status_code == 200
            first = next(r.iter_raw())
            assert first.startswith(b"data: ")
        # the agent is gone after one chunk; `final` waits for the call in flight: recorded before the answer
        assert httpx.post(f"{base}/final", json={"answer": "a"}, timeout=30).status_code == 200
        assert w.streams_done == done_before + 1  # the upstream reply was read to its end before `final` answered
        assert p.stop() == 0
        assert "Traceback" not in p.log.read_text()
    (events,) = _payloads(db).values()
    (turn,) = [e for e in events if isinstance(e, ModelResponded)]
    assert turn.text == streamed_text() and turn.client_disconnected is True
    assert turn.usage.output_tokens == 20 and turn.raw_digest is not None
    assert [type(e).__name__ for e in events[-3:]] == ["ModelResponded", "AnswerFinal", "TrajectoryFinished"]


def test_encoded_upstream_bodies_reach_the_agent_decoded(tmp_path: Path, world: tuple[World, str]) -> None:
    w, root = world
    qfile = tmp_path / "q.jsonl"
    qid = questions_with(qfile, [])[0]
    db = tmp_path / "gz.duckdb"
    direct = httpx.post(f"{root}/tavily/search", json={"query": "x"}, headers={"Accept-Encoding": "identity"})
    assert direct.headers["content-encoding"] == "gzip"  # the world encodes whatever it is asked
    w.accept.clear()
    with proxy(db, qfile, "gz", upstream="live", env=w.env(root)) as p, \
            httpx.Client(base_url=f"{p.url}/t/tavily/{qid}", timeout=30) as c:
        r = c.post("/tavily/search", json={"query": "founding year"}, headers={"Accept-Encoding": "gzip"})
        raw = r.read()
        assert r.status_code == 200 and "content-encoding" not in r.headers
        assert int(r.headers["content-length"]) == len(raw) and not raw.startswith(b"\x1f\x8b")
        assert [x["url"] for x in json.loads(raw)["results"]] == [f"https://world.example/{i}" for i in range(1, 4)]
        page = c.get("/jina/https://world.example/1")
        assert page.status_code == 200 and "content-encoding" not in page.headers
        assert b"founding year is 1911" in page.content
        with c.stream("POST", "/openai/v1/chat/completions", json={
                "model": "m", "stream": True, "messages": [{"role": "user", "content": "GZ stream"}]}) as s:
            assert "content-encoding" not in s.headers
            streamed = b"".join(s.iter_raw())  # raw: what the agent's socket got, not decoded by httpx here
        assert streamed.endswith(b"data: [DONE]\n\n") and b"w19 " in streamed
        bad = c.post("/tavily/search", json={"query": "BROTLI"})
        assert bad.status_code == 502 and "Content-Encoding br" in _one_line(bad)
        assert p.stop() == 0
    assert w.accept == ["identity"] * 4  # asked for unencoded bodies every time
    (events,) = _payloads(db).values()
    done = [e for e in events if isinstance(e, SearchCompleted)]
    assert [(d.status, d.n_results) for d in done] == [("ok", 3), ("bad_response", 0)]
    assert "cannot decode" in (done[1].error or "")
    fetched = next(e for e in events if isinstance(e, FetchCompleted))
    assert fetched.status == "ok" and fetched.doc_id == "d1"
    turn = next(e for e in events if isinstance(e, ModelResponded))
    assert turn.text == streamed_text() and turn.client_disconnected is not True


def test_routes_name_their_trajectory_exactly(tmp_path: Path) -> None:
    """Another provider's search route is a 404; a qid of any characters, percent-encoded in the path or in the
    X-Searchtrace-Trajectory header on one base URL, is that trajectory; a header that contradicts the path is a 400."""
    qfile = tmp_path / "q.jsonl"
    qids = questions_with(qfile, WEIRD)
    db = tmp_path / "routes.duckdb"
    with proxy(db, qfile, "routes") as p, httpx.Client(base_url=p.url, timeout=30) as c:
        q0 = qids[0]
        for method, path, kw in (("POST", f"/t/brave/{q0}/tavily/search", {"json": {"query": "Elmwyn"}}),
                                 ("GET", f"/t/tavily/{q0}/brave/res/v1/web/search?q=Elmwyn", {}),
                                 ("POST", f"/t/tavily/{q0}/firecrawl/v2/search", {"json": {"query": "Elmwyn"}})):
            r = c.request(method, path, **kw)
            assert r.status_code == 404 and "provider" in _one_line(r), (path, r.text)
        for qid in WEIRD:
            enc = quote(qid, safe="")
            r = c.post(f"/t/tavily/{enc}/tavily/search", json={"query": "Elmwyn Athletic founded"})
            assert r.status_code == 200, (qid, r.text)
            # the same trajectory by header, on the base URL of the route itself
            h = {"X-Searchtrace-Trajectory": f"tavily/{enc}"}
            assert c.post("/tavily/search", json={"query": "Elmwyn history"}, headers=h).status_code == 200
            assert c.post("/final", json={"answer": qid}, headers=h).status_code == 200
            assert c.post("/tavily/search", json={"query": "late"}, headers=h).status_code == 409
        # header only, with the OpenAI client's base URL being the proxy's route itself
        h = {"X-Searchtrace-Trajectory": f"tavily/{q0}"}
        r = c.post("/openai/v1/chat/completions", headers=h,
                   json={"model": "sandbox-agent", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        conflict = c.post(f"/t/tavily/{q0}/tavily/search", json={"query": "x"},
                          headers={"X-Searchtrace-Trajectory": f"tavily/{qids[1]}"})
        assert conflict.status_code == 400 and "X-Searchtrace-Trajectory" in _one_line(conflict)
        for bad in ("tavily", "tavily/", "tavily/%ff", "/q"):
            r = c.post("/tavily/search", json={"query": "x"}, headers={"X-Searchtrace-Trajectory": bad})
            assert r.status_code in (400, 404), (bad, r.text)
            _one_line(r)
        r = c.post("/tavily/search", json={"query": "x"})  # no trajectory named at all
        assert r.status_code == 404 and "X-Searchtrace-Trajectory" in _one_line(r)
        assert p.stop() == 0
    by = _payloads(db)
    started = {s: ps[0] for s, ps in by.items()}
    assert all(isinstance(s, TrajectoryStarted) and s.provider == "tavily" for s in started.values())
    got = {s.qid: ps for s, ps in zip(started.values(), by.values(), strict=True) if isinstance(s, TrajectoryStarted)}
    assert set(got) == {*WEIRD, q0}  # nothing for the refused routes (no brave trajectory, no second qid)
    for qid in WEIRD:
        ps = got[qid]
        assert sum(isinstance(e, SearchCalled) for e in ps) == 2
        assert [e.text for e in ps if isinstance(e, AnswerFinal)] == [qid]
        assert isinstance(ps[-1], TrajectoryFinished) and ps[-1].reason == "answered"
    assert any(isinstance(e, ModelResponded) for e in got[q0])


def test_final_waits_for_calls_in_flight_and_later_calls_get_409(tmp_path: Path, world: tuple[World, str]) -> None:
    w, root = world
    qfile = tmp_path / "q.jsonl"
    qids = questions_with(qfile, [f"race{i}" for i in range(6)])
    db = tmp_path / "race.duckdb"
    with proxy(db, qfile, "race", upstream="live", env=w.env(root)) as p:
        def slow(qid: str, out: list[int]) -> None:
            r = httpx.post(f"{p.url}/t/tavily/{qid}/tavily/search", json={"query": "SLOW one"}, timeout=30)
            out.append(r.status_code)

        racers = qids[2:]
        codes: list[int] = []
        threads = [threading.Thread(target=slow, args=(q, codes)) for q in racers for _ in range(2)]
        started = w.slow_started
        for t in threads:
            t.start()
        wait_until(lambda: w.slow_started >= started + len(threads), "the searches to be upstream")
        finals = [httpx.post(f"{p.url}/t/tavily/{racers[0]}/final", json={"answer": "a"}, timeout=30)]
        answered = w.slow_finished  # the first final waited for its trajectory's two searches to be answered
        finals += [httpx.post(f"{p.url}/t/tavily/{q}/final", json={"answer": "a"}, timeout=30) for q in racers[1:]]
        for t in threads:
            t.join(30)
        assert [f.status_code for f in finals] == [200] * len(racers) and codes == [200] * len(threads)
        assert answered >= 2, answered  # event order, not milliseconds
        for q in racers:  # after final: 409, nothing forwarded or recorded
            r = httpx.post(f"{p.url}/t/tavily/{q}/tavily/search", json={"query": "after"}, timeout=30)
            assert r.status_code == 409 and "finished" in _one_line(r)
            again = httpx.post(f"{p.url}/t/tavily/{q}/final", json={"answer": "b"}, timeout=30)
            assert again.status_code == 409
        # two finals at once: one answers, the other is a 409 (the trajectory is closing)
        q = qids[0]
        hold: list[int] = []
        th = threading.Thread(target=slow, args=(q, hold))
        started = w.slow_started
        th.start()
        wait_until(lambda: w.slow_started > started, "the held search to be upstream")
        both: list[httpx.Response] = []
        pair = [threading.Thread(target=lambda a=a: both.append(  # type: ignore[misc]
            httpx.post(f"{p.url}/t/tavily/{q}/final", json={"answer": a}, timeout=30))) for a in ("x", "y")]
        for t in pair:
            t.start()
        for t in [*pair, th]:
            t.join(30)
        assert sorted(r.status_code for r in both) == [200, 409] and hold == [200]
        assert p.stop() == 0
    for ps in _payloads(db).values():
        finished = [i for i, e in enumerate(ps) if isinstance(e, TrajectoryFinished)]
        assert finished == [len(ps) - 1], ps  # nothing after trajectory.finished
        assert sum(isinstance(e, AnswerFinal) for e in ps) == 1
        calls = [e for e in ps if isinstance(e, SearchCalled)]
        assert len(calls) == (2 if ps[0].qid in racers else 1)  # type: ignore[union-attr]
        assert all(e.query != "after" for e in calls)
        last_call = max(i for i, e in enumerate(ps) if isinstance(e, SearchCompleted))
        assert isinstance(ps[last_call + 1], AnswerFinal)


def test_final_last_reply(tmp_path: Path, world: tuple[World, str]) -> None:
    """`--final last-reply`: a trajectory closed without an answer takes its last model reply without tool calls —
    at `final {}`, or when the proxy stops; without such a reply `final {}` is a 400 and a stop abandons it."""
    w, root = world
    qfile = tmp_path / "q.jsonl"
    a, b, c_, d = questions_with(qfile, ["c", "d"])
    db = tmp_path / "last.duckdb"

    def chat(base: str, content: str) -> dict[str, Any]:
        r = httpx.post(f"{base}/openai/v1/chat/completions", timeout=30,
                       json={"model": "m", "messages": [{"role": "user", "content": content}]})
        assert r.status_code == 200, r.text
        return dict(r.json())

    with proxy(db, qfile, "last", upstream="live", env=w.env(root), extra=("--final", "last-reply")) as p:
        t = {q: f"{p.url}/t/tavily/{q}" for q in (a, b, c_, d)}
        chat(t[a], "first")
        chat(t[a], "TOOL please")  # the last reply has tool calls: the one before is the answer
        chat(t[b], "only")
        assert httpx.post(f"{t[b]}/final", json={}, timeout=30).status_code == 200
        chat(t[c_], "TOOL only")
        r = httpx.post(f"{t[c_]}/final", json={}, timeout=30)
        assert r.status_code == 400 and "no model reply without tool calls" in _one_line(r)
        assert httpx.post(f"{t[d]}/final", json={"answer": "given"}, timeout=30).status_code == 200
        assert p.stop() == 0
    by = {ps[0].qid: ps for ps in _payloads(db).values()}  # type: ignore[union-attr]
    finals = {q: [(e.iteration, e.text) for e in ps if isinstance(e, AnswerFinal)] for q, ps in by.items()}
    reasons = {q: ps[-1].reason for q, ps in by.items() if isinstance(ps[-1], TrajectoryFinished)}
    assert finals == {a: [(1, "reply to first")], b: [(1, "reply to only")], c_: [], d: [(0, "given")]}
    assert reasons == {a: "answered", b: "answered", c_: "abandoned", d: "answered"}
    assert not any(isinstance(e, CallFailed) for ps in by.values() for e in ps)

