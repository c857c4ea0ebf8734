"""docs/concepts/shown.md guardrails: `proxy --max-turns N --max-tokens T --max-usd D --prices FILE` per trajectory. The call
that would exceed a limit is a 400 of type `limit` (the official openai client raises BadRequestError and does not
retry), nothing is forwarded, and the trajectory finishes with reason `limit`, the limit named in `error`."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from searchtrace.adapters.sandbox import running
from searchtrace.store import ModelResponded, Payload, SearchCalled, TrajectoryFinished
from tests.proxy.support import cli, proxy, streams
from tests.proxy.world import World, questions_with
from tests.replay.test_prompt_file import run

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

PRICES = """as_of = "2026-01-01"
[search]
tavily = 100.0
[fetch]
jina = 0.0
[models.cheap]
input = 0.0
output = 0.0
[models.pricey]
input = 10000.0
output = 10000.0
"""


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[World, str]]:
    w = World()
    with running(w.app) as root:
        yield w, root


def _by_qid(db: Path) -> dict[str, list[Payload]]:
    return {ps[0].qid: ps for ps in ({s: [p for _, _, p in evs] for s, evs in streams(db).items()}).values()}  # type: ignore[attr-defined]


def _limit_of(ps: list[Payload]) -> str:
    last = ps[-1]
    assert isinstance(last, TrajectoryFinished) and last.reason == "limit", last
    return last.error or ""


def test_max_turns_with_the_openai_client(tmp_path: Path, world: tuple[World, str]) -> None:
    import openai
    w, root = world
    qfile = tmp_path / "q.jsonl"
    qid = questions_with(qfile, [])[0]
    db = tmp_path / "turns.duckdb"
    sent: list[str] = []
    with proxy(db, qfile, "turns", upstream="live", env=w.env(root), extra=("--max-turns", "2")) as p:
        chats_before = w.chats
        hooks = {"request": [lambda req: sent.append(str(req.url))]}
        with httpx.Client(event_hooks=hooks, timeout=HANG_S) as http:
            client = openai.OpenAI(base_url=f"{p.url}/t/tavily/{qid}/openai/v1", api_key="sk-client-000000",
                                   max_retries=2, http_client=http)
            for i in range(2):
                client.chat.completions.create(model="cheap", messages=[{"role": "user", "content": f"turn {i}"}])
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(model="cheap", messages=[{"role": "user", "content": "turn 3"}])
            assert caught.value.status_code == 400
            body = caught.value.body
            assert isinstance(body, dict) and body.get("type") == "limit" and "max-turns 2" in str(body["message"])
            assert len(sent) == 3  # no retry of the 400
            # the trajectory is finished at its limit: a later call is that 400 again (no retry either)
            with pytest.raises(openai.BadRequestError):
                client.chat.completions.create(model="cheap", messages=[{"role": "user", "content": "turn 4"}])
            assert len(sent) == 4
        assert w.chats - chats_before == 2  # the refused calls were never forwarded
        search = httpx.post(f"{p.url}/t/tavily/{qid}/tavily/search", json={"query": "x"}, timeout=30)
        assert search.status_code == 400 and json.loads(search.text)["error"]["type"] == "limit"
        assert p.stop() == 0
    (ps,) = _by_qid(db).values()
    assert sum(isinstance(e, ModelResponded) for e in ps) == 2 and not any(isinstance(e, SearchCalled) for e in ps)
    assert "max-turns 2" in _limit_of(ps)
    # readers take the new reason: the report runs over the store
    out = cli("report", "--db", str(db))
    assert out.returncode == 0, out.stderr


def test_max_tokens_and_max_usd(tmp_path: Path, world: tuple[World, str]) -> None:
    w, root = world
    qfile = tmp_path / "q.jsonl"
    big, pricey, searcher, unpriced, resumed = questions_with(qfile, ["searcher", "unpriced", "resumed"])
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    db = tmp_path / "spend.duckdb"
    extra = ("--max-tokens", "300", "--max-usd", "0.35", "--prices", str(prices), "--durable")

    def chat(qid: str, model: str, content: str) -> httpx.Response:
        return httpx.post(f"{p.url}/t/tavily/{qid}/openai/v1/chat/completions", timeout=30,
                          json={"model": model, "messages": [{"role": "user", "content": content}]})

    with proxy(db, qfile, "spend", upstream="live", env=w.env(root), extra=extra) as p:
        # 155 tokens a turn: the third would pass 300 (310 used is already past it after two)
        codes = [chat(big, "cheap", "BIG").status_code for _ in range(3)]
        assert codes == [200, 200, 400]
        # 15 tokens at 0.01 USD each: 0.15 a turn; the third's input (about 10 tokens, 0.10) would pass 0.35
        codes = [chat(pricey, "pricey", "hi").status_code for _ in range(3)]
        assert codes == [200, 200, 400]
        # searches at 0.10 USD each: the fourth would pass 0.35
        codes = [httpx.post(f"{p.url}/t/tavily/{searcher}/tavily/search", json={"query": "q"}, timeout=30).status_code
                 for _ in range(4)]
        assert codes == [200, 200, 200, 400]
        # a model --prices does not name: --max-usd cannot price it, refused (not a limit), nothing forwarded
        chats_before = w.chats
        r = chat(unpriced, "unknown-model", "hi")
        assert r.status_code == 400 and "no price for model 'unknown-model'" in r.json()["error"]["message"]
        assert r.json()["error"]["type"] == "searchtrace_proxy" and w.chats == chats_before
        assert [chat(resumed, "pricey", "hi").status_code for _ in range(2)] == [200, 200]
        p.stop(signal.SIGKILL)  # durable: both turns are committed; the restart counts their 0.30 USD
    with proxy(db, qfile, "spend", upstream="live", env=w.env(root), extra=extra) as p:
        r = chat(resumed, "pricey", "hi")
        assert r.status_code == 400 and r.json()["error"]["type"] == "limit"
        assert p.stop() == 0
    by = _by_qid(db)
    assert "max-tokens 300" in _limit_of(by[big])
    assert "max-usd 0.35" in _limit_of(by[pricey]) and "max-usd 0.35" in _limit_of(by[searcher])
    assert sum(isinstance(e, SearchCalled) for e in by[searcher]) == 3
    assert "max-usd 0.35: 0.300000 USD spent" in _limit_of(by[resumed])
    last = by[unpriced][-1]
    assert isinstance(last, TrajectoryFinished) and last.reason == "abandoned"


def test_guardrail_options_are_checked_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qfile = tmp_path / "q.jsonl"
    questions_with(qfile, [])
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    db = tmp_path / "never.duckdb"
    base = ("proxy", "--db", str(db), "--questions", str(qfile), "--run-id", "x", "--port", "0")
    for extra, says in ((("--max-usd", "1"), "--max-usd needs --prices"),
                        (("--prices", str(prices)), "--max-usd needs --prices"),
                        (("--max-usd", "nan", "--prices", str(prices)), "finite"),
                        (("--max-usd", "-1", "--prices", str(prices)), "finite"),
                        (("--max-usd", "1", "--prices", str(tmp_path / "none.toml")), "cannot read price file")):
        rc, _, err = run(capsys, *base, *extra)  # in this process: the refusal comes before anything is served
        assert rc == 2, (extra, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], (extra, err)
    assert not db.exists()


def test_a_restarted_proxy_reads_the_model_of_every_reply_shape() -> None:
    """The model a recorded reply names (priced again after a restart): a body, chat chunks, typed Responses events."""
    from searchtrace.engine.proxy._limits import model_named

    assert model_named(b'{"model": "m1", "choices": []}') == "m1"
    chunks = b'data: {"model": "m2", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\ndata: [DONE]\n'
    assert model_named(chunks) == "m2"
    typed = (b'event: response.created\ndata: {"type": "response.created", "response": {"model": "m3", "output": []}}\n\n'
             b'event: response.completed\ndata: {"type": "response.completed", "response": {"model": "m3", "output": []}}\n')
    assert model_named(typed) == "m3"
    assert model_named(b"not json") is None
