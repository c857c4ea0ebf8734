"""SIGKILL of the proxy in the middle of traffic, then a restart: the store verifies, nothing is duplicated,
acknowledged trajectories are intact, and open ones continue where the store left them."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from searchtrace.store import (
    AnswerFinal,
    FetchCalled,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
)
from tests.proxy.support import cli, proxy, streams, write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

PROVIDERS = ("tavily", "brave", "firecrawl")


def search(client: httpx.Client, base: str, provider: str, query: str) -> str:
    """One search through the trajectory's own provider route; the first result's URL."""
    if provider == "brave":
        r = client.get(f"{base}/brave/res/v1/web/search", params={"q": query, "count": 5})
        r.raise_for_status()
        return str(r.json()["web"]["results"][0]["url"])
    if provider == "firecrawl":
        r = client.post(f"{base}/firecrawl/v2/search", json={"query": query, "limit": 5})
        r.raise_for_status()
        return str(r.json()["data"]["web"][0]["url"])
    r = client.post(f"{base}/{provider}/search", json={"query": query, "max_results": 5})
    r.raise_for_status()
    return str(r.json()["results"][0]["url"])


def one_trajectory(client: httpx.Client, url: str, provider: str, qid: str, question: str, mid: set[str]) -> str:
    """Two searches, a fetch, a chat turn and the final answer; returns the answer once acknowledged."""
    base = f"{url}/t/{provider}/{qid}"
    first = ""
    for q in (question, question + " history"):
        url_ = search(client, base, provider, q)
        first = first or url_
        mid.add(base)  # a reply came: this trajectory is in the store and open
    client.get(f"{base}/jina/{first}", headers={"Accept": "application/json"}).raise_for_status()
    tools = [{"type": "function", "function": {"name": "find", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]
    client.post(f"{base}/openai/v1/chat/completions", json={
        "model": "sandbox-agent", "messages": [{"role": "user", "content": question}], "tools": tools,
    }).raise_for_status()
    answer = f"answer of {provider}/{qid}"
    client.post(f"{base}/final", json={"answer": answer}).raise_for_status()
    mid.discard(base)
    return answer


def check_store(db: Path) -> dict[str, list[object]]:
    assert cli("verify", "--db", str(db)).returncode == 0
    out: dict[str, list[object]] = {}
    for stream, events in streams(db).items():
        payloads = [p for _, _, p in events]
        assert [s for s, _, _ in events] == list(range(len(events)))
        assert isinstance(payloads[0], TrajectoryStarted)
        assert sum(isinstance(p, TrajectoryStarted) for p in payloads) == 1
        assert sum(isinstance(p, TrajectoryFinished) for p in payloads) <= 1
        calls = [p.call_id for p in payloads if isinstance(p, SearchCalled | FetchCalled)]
        assert len(calls) == len(set(calls)), stream  # no call recorded twice
        docs = [p.doc_id for p in payloads if isinstance(p, SearchResult)]
        assert len(docs) == len(set(docs)), stream
        results = Counter(p.call_id for p in payloads if isinstance(p, SearchResult))
        for p in payloads:  # every search is whole: its results, then its completion
            if isinstance(p, SearchCompleted):
                assert results[p.call_id] == p.n_results
        out[stream] = payloads
    return out


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "default"])
def test_sigkill_mid_traffic_then_restart(tmp_path: Path, durable: bool) -> None:
    qfile = tmp_path / "q.jsonl"
    rows = write_questions(qfile, 12)
    db = tmp_path / "crash.duckdb"
    jobs = [(p, r["qid"], r["question"]) for r in rows for p in PROVIDERS]
    acked: dict[str, str] = {}
    mid: set[str] = set()
    lock = threading.Lock()
    extra = ("--durable",) if durable else ()
    with proxy(db, qfile, "crash", extra=extra) as px:
        def worker(mine: list[tuple[str, str, str]]) -> None:
            with httpx.Client(timeout=HANG_S) as client:
                for provider, qid, question in mine:
                    try:
                        answer = one_trajectory(client, px.url, provider, qid, question, mid)
                    except httpx.HTTPError:
                        return
                    with lock:
                        acked[f"traj:crash:{provider}:{qid}"] = answer

        threads = [threading.Thread(target=worker, args=(jobs[i::6],)) for i in range(6)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while (len(acked) < 6 or not mid) and time.monotonic() < deadline:
            time.sleep(0.005)
        px.stop(signal.SIGKILL)  # mid-traffic: the other workers have calls in flight
        for t in threads:
            t.join(30)
    assert 6 <= len(acked) < len(jobs)
    before = check_store(db)
    for stream, answer in acked.items():  # every acknowledged trajectory is there, whole
        payloads = before[stream]
        assert isinstance(payloads[-1], TrajectoryFinished) and payloads[-1].reason == "answered"
        assert [p.text for p in payloads if isinstance(p, AnswerFinal)] == [answer]
        assert sum(isinstance(p, SearchCalled) for p in payloads) == 2
    open_ = [s for s, ps in before.items() if not isinstance(ps[-1], TrajectoryFinished)]
    if durable:  # a reply came for a call of each of these: it was committed before the reply
        assert open_ and all(f"traj:crash:{b.split('/t/')[1].replace('/', ':')}" in before for b in mid)
    # restart: the open trajectories continue (call and doc ids after the recorded ones), finished ones refuse
    with proxy(db, qfile, "crash", extra=extra) as px, httpx.Client(timeout=HANG_S) as client:
        done = next(iter(acked)).split(":")
        r = httpx.post(f"{px.url}/t/{done[2]}/{done[3]}/final", json={"answer": "x"}, timeout=HANG_S)
        assert r.status_code == 409
        for stream in open_[:1]:
            _, _, provider, qid = stream.split(":")
            search(client, f"{px.url}/t/{provider}/{qid}", provider, next(j[2] for j in jobs if j[1] == qid))
            httpx.post(f"{px.url}/t/{provider}/{qid}/final", json={"answer": "late"}, timeout=HANG_S).raise_for_status()
        fresh = next(j for j in jobs if f"traj:crash:{j[0]}:{j[1]}" not in before)
        search(client, f"{px.url}/t/{fresh[0]}/{fresh[1]}", fresh[0], fresh[2])
        assert px.stop() == 0  # SIGTERM: what is still open ends `abandoned`
    after = check_store(db)
    for stream, payloads in before.items():  # nothing recorded before the crash changed
        assert after[stream][: len(payloads)] == payloads
    for stream in open_[:1]:
        assert isinstance(after[stream][-1], TrajectoryFinished) and after[stream][-1].reason == "answered"
    reasons = Counter(ps[-1].reason for ps in after.values() if isinstance(ps[-1], TrajectoryFinished))
    assert reasons["abandoned"] == len(open_[1:]) + 1  # the other open ones, and the fresh one
    assert all(isinstance(ps[-1], TrajectoryFinished) for ps in after.values())
