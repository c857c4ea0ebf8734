"""Keys an agent puts in tool arguments or in a fetched URL's query (docs/reliability.md "Keys in tool arguments and
URLs"): planted on every recording path (the agent loop, the proxy, `collect`, `import --from otel` and
`import` of traces.jsonl), none reaches an event, a blob, the database file, a log line, an export or the fetch
cache on disk; each is
replaced by the marker, and a URL is normalised after it is scrubbed (the result and its fetch stay one item)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from searchtrace.adapters import SearchHit, build_fetcher, sandbox_endpoint, scrub_named_text
from searchtrace.adapters.sandbox import running
from searchtrace.engine import TOOL_SCHEMAS, Builder, Trajectory, get_prompt, request_sha256
from searchtrace.engine._agent import Agent, Recorder, Stats
from searchtrace.store import EventLog, FetchCalled, ModelResponded, SearchResult, ToolRefused
from tests.builders import run_cli
from tests.engine.fakes import FakeChat, FakeFetch, FakeSearch, reply
from tests.otel.test_collect_faults import _questions, collecting
from tests.otel.test_otel_hostile import T1, chat, request, span, tool
from tests.proxy.support import proxy, write_questions
from tests.reliability.test_security import store_texts

KEYS = {"apikey": "plantedApikey0a1b2c", "api_key": "plantedApiKey3d4e5f", "token": "plantedToken6a7b8c",
        "access_token": "plantedAccess9d0e1f", "key": "plantedKey2a3b4c5d", "nested": "plantedNested6e7f8a",
        "password": "plantedPassword9b0c", "userinfo": "plantedUserinfo1d2e"}
URL = (f"https://a.example/x?apikey={KEYS['apikey']}&q=1&api_key={KEYS['api_key']}&token={KEYS['token']}"
       f"&access_token={KEYS['access_token']}&key={KEYS['key']}")
ARGS = {"query": "who", "auth": {"api_key": KEYS["nested"]}, "password": KEYS["password"]}
SCRUBBED_URL = "https://a.example/x?apikey=***&q=1&api_key=***&token=***&access_token=***&key=***"


def leaks(*texts: tuple[str, bytes]) -> list[str]:
    return [f"{label}: {name}" for label, data in texts for name, k in KEYS.items() if k.encode() in data]


def files(*paths: Path) -> list[tuple[str, bytes]]:
    """The bytes of every file under these paths (the database file and its WAL as they are on disk)."""
    out = []
    for p in paths:
        for f in [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []:
            if f.is_file():
                out.append((str(f), f.read_bytes()))
    return out


def everywhere(db: Path, tmp: Path, *more: Path, otlp_file: bool = True) -> list[tuple[str, bytes]]:
    """The store (its file bytes, every event column, every blob inflated) and its exports (folder and OTLP)."""
    out_dir, otlp = tmp / f"{db.stem}-export", tmp / f"{db.stem}.otlp.jsonl"
    assert run_cli("export", "--db", str(db), "--out", str(out_dir), "--blobs", str(tmp / f"{db.stem}-blobs")).code == 0
    if otlp_file:
        assert run_cli("export", "--db", str(db), "--otlp-file", str(otlp)).code == 0
    texts = [*files(db, Path(f"{db}.wal"), out_dir, tmp / f"{db.stem}-blobs", otlp, *more), *store_texts(db)]
    assert len(texts) > 10
    return texts


def planted_trace() -> dict[str, Any]:
    """A trace whose model calls a search with keys in its arguments and fetches a URL with keys in its query."""
    user = {"role": "user", "parts": [{"type": "text", "content": "Who?"}]}
    calls = [{"id": "c1", "name": "search_web", "arguments": json.dumps(ARGS)},
             {"id": "c2", "name": "fetch_page", "arguments": json.dumps({"url": URL})}]
    results = json.dumps([{"url": URL, "title": "Alpha", "snippet": "alpha"}])
    return request(
        span(T1, 1, None, 1, **{"gen_ai.operation.name": "invoke_agent", "searchtrace.qid": "q1",
                                "searchtrace.provider": "tavily", "output.value": "FINAL ANSWER: Alpha"}),
        chat(T1, 2, 2, [user], "", calls),
        tool(T1, 3, 3, "search_web", ARGS, results),
        tool(T1, 4, 4, "fetch_page", {"url": URL}, "# Alpha\n\nThe page."),
        chat(T1, 5, 5, [user, {"role": "assistant", "parts": [{"type": "tool_call", **c} for c in calls]}],
             "FINAL ANSWER: Alpha"),
    )


def check_items(db: Path) -> None:
    """The fetched URL is the result's (one item), both scrubbed; the arguments keep their other fields."""
    with EventLog(db, read_only=True) as log:
        events = [e.payload for e in log.read() if e.stream_id.startswith("traj:")]
    fetched = [e for e in events if isinstance(e, FetchCalled)]
    results = [e for e in events if isinstance(e, SearchResult)]
    assert [f.url for f in fetched] == [SCRUBBED_URL] and [r.url for r in results] == [SCRUBBED_URL]
    assert fetched[0].doc_id == results[0].doc_id == "d1"
    args = [json.loads(c.arguments) for m in events if isinstance(m, ModelResponded) for c in m.tool_calls]
    assert args[0] == {"query": "who", "auth": {"api_key": "***"}, "password": "***"}, args


def test_collect_and_import_from_otel_store_no_key(tmp_path: Path) -> None:
    doc = planted_trace()
    cdb, qfile = tmp_path / "collected.duckdb", _questions(tmp_path / "q.jsonl")
    with collecting(cdb, qfile) as (url, _):
        r = httpx.post(url, json=doc)
        assert r.status_code == 200 and r.json() == {}, r.text
    check_items(cdb)
    found = leaks(*everywhere(cdb, tmp_path, cdb.with_suffix(".log")))
    assert not found, found
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps(doc) + "\n")
    idb = tmp_path / "imported.duckdb"
    r2 = run_cli("import", "--db", str(idb), "--from", "otel", "--run-id", "r", str(spans))
    assert r2.code == 0, r2.err
    check_items(idb)
    found = leaks(*everywhere(idb, tmp_path), ("import output", (r2.out + r2.err).encode()))
    assert not found, found


def test_import_of_traces_jsonl_stores_no_key(tmp_path: Path) -> None:
    """A traces.jsonl written elsewhere (here: an export with keys planted back in) is scrubbed as it is imported."""
    src = tmp_path / "src.duckdb"
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps(planted_trace()) + "\n")
    assert run_cli("import", "--db", str(src), "--from", "otel", "--run-id", "r", str(spans)).code == 0
    assert run_cli("export", "--db", str(src), "--out", str(tmp_path / "out")).code == 0
    line = (tmp_path / "out" / "traces.jsonl").read_text()
    planted = line.replace(SCRUBBED_URL, URL).replace('\\"password\\": \\"***\\"',
                                                      f'\\"password\\": \\"{KEYS["password"]}\\"')
    assert planted != line and KEYS["password"] in planted and KEYS["apikey"] in planted
    (tmp_path / "planted.jsonl").write_text(planted)
    db = tmp_path / "traces.duckdb"
    r = run_cli("import", "--db", str(db), str(tmp_path / "planted.jsonl"))
    assert r.code == 0, r.err
    check_items(db)
    found = leaks(*everywhere(db, tmp_path), ("import output", (r.out + r.err).encode()))
    assert not found, found


def test_the_proxy_stores_no_key_from_a_fetched_url_or_tool_arguments(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "proxied.duckdb"
    call = {"id": "c1", "type": "function", "function": {"name": "fetch_page", "arguments": json.dumps(
        {"url": URL, **ARGS})}}
    with proxy(db, qfile, "keys") as p, httpx.Client(base_url=p.url, timeout=30) as c:
        base = f"/t/tavily/{qid}"
        page = c.get(f"{base}/jina/{URL}")  # through the proxy's reader route (the sandbox knows no such page)
        assert page.status_code in (200, 422), page.text
        chat_r = c.post(f"{base}/openai/v1/chat/completions", json={"model": "sandbox-agent", "messages": [
            {"role": "user", "content": "Who?"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": f"fetched {URL}"}]})
        assert chat_r.status_code == 200, chat_r.text
        assert p.stop() == 0
        log_text = p.log.read_bytes()
    with EventLog(db, read_only=True) as log:
        events = [e.payload for e in log.read() if e.stream_id.startswith("traj:")]
    fetched = [e.url for e in events if isinstance(e, FetchCalled)]
    assert fetched and all(KEYS["apikey"] not in u and "apikey=***" in u for u in fetched), fetched
    assert [bool(m.request_messages) for m in events if isinstance(m, ModelResponded)] == [True]
    found = leaks(*everywhere(db, tmp_path), ("proxy log", log_text))
    assert not found, found


@pytest.mark.anyio
async def test_the_agent_loop_records_no_key_and_still_sends_the_arguments(tmp_path: Path) -> None:
    """The model sees its own arguments as it wrote them; what is stored is scrubbed, and a replay's request
    fingerprint (taken of the request as stored) still matches."""
    def policy(messages: list[dict[str, Any]], turn: int) -> Any:
        if turn == 1:
            return reply(calls=[("s", "search_web", json.dumps(ARGS)),
                                ("z", "open_url", json.dumps({"url": URL}))])
        if turn == 2:
            return reply(calls=[("f", "fetch_page", '{"doc_id": "d1"}')])
        return reply(f"FINAL ANSWER: Ada (see {URL})")

    traj = Trajectory(run_id="r", provider="fake", qid="q1", question="Who built the tower?", gold_answer="Ada")
    chat_model = FakeChat(policy)
    rec = Recorder(traj)
    await Agent(chat=chat_model, search=FakeSearch(), fetch=FakeFetch(), prompt=get_prompt(), stats=Stats()).run(traj, rec)
    sent = json.dumps(chat_model.received)
    assert KEYS["password"] in sent and KEYS["apikey"] in sent  # the model got its own arguments back
    stored = [("payloads", json.dumps([repr(p) for p in rec.payloads]).encode()),
              *((f"blob {d}", b) for d, b in rec.blobs.items())]
    assert not leaks(*stored), leaks(*stored)
    refused = [p for p in rec.payloads if isinstance(p, ToolRefused)]
    assert refused and "access_token=***" in refused[0].arguments
    turns = [p for p in rec.payloads if isinstance(p, ModelResponded)]
    assert [t.request_sha256 for t in turns] == [request_sha256(m, TOOL_SCHEMAS) for m in chat_model.received]
    db = tmp_path / "loop.duckdb"
    with EventLog(db) as log:
        log.append(rec.events(), blobs=list(rec.blobs.values()))
    assert not leaks(*files(db), *store_texts(db))


def test_a_url_keeps_its_identity_once_scrubbed() -> None:
    """A result and its fetch whose URLs differ only in a key's value are one item: scrubbed, then normalised."""
    b = Builder("t")
    b.start(qid="q", provider="p")
    hit = SearchHit(rank=1, title="t", url=URL, domain="", snippet="s", metadata={})
    b.search(query="q", provider="p", status="ok", hits=[hit], latency_ms=1.0)
    other = URL.replace(KEYS["token"], "anotherTokenValue99")
    done = b.fetch(url=other, status="ok", content="page", n_tokens=1, latency_ms=1.0)
    assert done.doc_id == "d1" and b.doc_of(URL) == "d1"
    assert scrub_named_text(scrub_named_text(URL)) == scrub_named_text(URL) == SCRUBBED_URL
    assert scrub_named_text("https://u:" + KEYS["userinfo"] + "@h.example/p") == "https://u:***@h.example/p"
    for fine in ("https://h.example/?q=monkey&keyword=k&max_tokens=5", '{"query": "token economy", "tokens": "12"}'):
        assert scrub_named_text(fine) == fine


def test_import_of_an_inspect_log_stores_no_key(tmp_path: Path) -> None:
    """An Inspect log whose agent passed keys in its tool arguments and fetched a result URL holding one."""
    inspect_log = pytest.importorskip("inspect_ai.log")
    logs = Path(__file__).resolve().parents[1] / "data" / "inspect" / "logs"
    log = inspect_log.read_eval_log(str(sorted(logs.glob("*.eval"))[0]))
    planted = 0
    for s in log.samples or []:
        for e in s.events:
            if e.event != "tool":
                continue
            if e.function == "web_search":
                e.arguments["api_key"] = KEYS["api_key"]
                result = json.loads(str(e.result))
                for r in result["results"]:
                    r["url"] = r["url"] + ("&" if "?" in r["url"] else "?") + f"token={KEYS['token']}"
                e.result = json.dumps(result)
                planted += 1
            elif e.function == "read_page" and isinstance(e.arguments.get("url"), str):
                u = e.arguments["url"]
                e.arguments["url"] = u + ("&" if "?" in u else "?") + f"token={KEYS['token']}"
    assert planted
    path = tmp_path / "planted.json"
    inspect_log.write_eval_log(log, str(path))
    assert KEYS["token"].encode() in path.read_bytes()
    db = tmp_path / "inspect.duckdb"
    r = run_cli("import", "--db", str(db), "--from", "inspect", "--run-id", "i", str(path))
    assert r.code == 0, r.err
    with EventLog(db, read_only=True) as elog:
        events = [e.payload for e in elog.read() if e.stream_id.startswith("traj:")]
    assert any(isinstance(e, FetchCalled) and "token=***" in e.url and e.doc_id for e in events)
    found = leaks(*everywhere(db, tmp_path), ("import output", (r.out + r.err).encode()))
    assert not found, found


@pytest.mark.anyio
async def test_the_fetch_cache_on_disk_holds_no_key(tmp_path: Path) -> None:
    """A page fetched through the real sandbox (loopback HTTP) with keys in its URL's query and user information:
    no cache file holds a key, in its name or its content; the scrubbed URL finds the page again (a hit)."""
    page = "almanac-central.example/entries/elmwyn-athletic"
    urls = [f"https://{page}?apikey={KEYS['apikey']}&q=1&api_key={KEYS['api_key']}&token={KEYS['token']}"
            f"&access_token={KEYS['access_token']}&key={KEYS['key']}",
            f"https://reader:{KEYS['userinfo']}@{page}?password={KEYS['password']}"]
    cache = tmp_path / "cache"
    with running() as root:
        async with build_fetcher("jina", sandbox_endpoint("jina", root), cache_dir=cache,
                                 key_fallback="sandbox") as fetcher:
            first = [await fetcher.fetch(u) for u in urls]
            again = [await fetcher.fetch(u) for u in urls]
    assert [(r.status, r.cache_hit) for r in first] == [("ok", False)] * 2
    assert [(r.status, r.cache_hit) for r in again] == [("ok", True)] * 2
    stored = [(str(f), f.name.encode() + gzip.decompress(f.read_bytes())) for f in sorted(cache.rglob("*"))
              if f.is_file()]
    assert len(stored) == 2 and all(b"***" in data for _, data in stored)
    assert leaks(*stored) == []
