"""`searchtrace mcp --sandbox` driven by the `mcp` SDK's client, over stdio and over streamable HTTP (both protocol
eras), through the sandbox's scripted agent; then judged, graded and reported beside a `record` run of the same
provider on the same questions: same calls, same results, same items, same figures (docs/how-to/mcp.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.builders import run_cli
from tests.mcp.support import http_server, rows, scripted_agent, stdio_server, tool_steps
from tests.proxy.support import write_questions

HANG_S = 120  # seconds: a hang guard for calls to our own loopback servers (a loaded machine answers late)

pytestmark = pytest.mark.slow
N = 3


def _config(path: Path, questions: Path) -> Path:
    path.write_text(f'run_id = "rec"\n[agent]\nmodel = "sandbox-agent"\n[providers.brave]\n'
                    f'[dataset]\npath = "{questions}"\n')
    return path


async def _stdio_runs(db: Path, qfile: Path, qs: list[dict[str, str]]) -> list[str | None]:
    """One stdio server per question: the first two named by --qid, the last by its first call's `question`."""
    out = []
    for i, q in enumerate(qs):
        by_qid = i < len(qs) - 1
        params = stdio_server(db, qfile, "mcp-stdio", *(("--qid", q["qid"]) if by_qid else ()))
        async with Client(params, mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == ["search_web", "fetch_page", "final_answer"]
            out.append(await scripted_agent(client, q["question"], None if by_qid else {"question": q["question"]}))
    return out


async def _http_runs(url: str, qs: list[dict[str, str]]) -> list[str | None]:
    """Over HTTP: a session (2025 era) per path, the modern stateless era, and one base URL with the header."""
    out = []
    for i, q in enumerate(qs):
        if i == 0:
            async with Client(f"{url}/t/brave/{q['qid']}/mcp", mode="legacy") as client:
                out.append(await scripted_agent(client, q["question"]))
        elif i == 1:
            async with Client(f"{url}/t/brave/{q['qid']}/mcp", mode="2026-07-28") as client:
                out.append(await scripted_agent(client, q["question"]))
        else:
            async with httpx2.AsyncClient(headers={"X-Searchtrace-Trajectory": f"brave/{q['qid']}"}) as http, \
                    Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                out.append(await scripted_agent(client, q["question"]))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("mcp")
    qfile = tmp / "q.jsonl"
    qs = write_questions(qfile, N)
    db = tmp / "m.duckdb"
    seen: dict[str, Any] = {}
    code, _, err = run_cli("record", "--config", str(_config(tmp / "r.toml", qfile)), "--sandbox", "--db", str(db))
    assert code == 0, err
    seen["stdio"] = anyio.run(_stdio_runs, db, qfile, qs)
    with http_server(db, qfile, "mcp-http") as server:
        seen["http"] = anyio.run(_http_runs, server.url, qs)
        # refusals before the SDK sees the request: one JSON line, nothing recorded
        seen["refused"] = [
            (r.status_code, r.json()["error"]) for r in (
                httpx.post(f"{server.url}/mcp", json={}, timeout=HANG_S),
                httpx.post(f"{server.url}/t/tavily/{qs[0]['qid']}/mcp", json={}, timeout=HANG_S),
                httpx.post(f"{server.url}/t/brave/no-such-qid/mcp", json={}, timeout=HANG_S),
                httpx.post(f"{server.url}/t/brave/{qs[0]['qid']}/mcp", json={}, headers={"Host": "evil.example"}, timeout=HANG_S),
            )]
        assert server.stop() == 0
        seen["stderr"] = server.log.read_text()
    for argv in (("judge", "--db", str(db), "--sandbox"), ("grade", "--db", str(db))):
        code, _, err = run_cli(*argv)
        assert code == 0, err
    return db, qs, seen


def test_every_question_is_answered_through_the_sdk_client(store: tuple[Path, list[dict[str, str]], dict[str, Any]]
                                                           ) -> None:
    db, qs, seen = store
    for transport in ("stdio", "http"):
        assert all(a is not None and a.startswith("FINAL ANSWER:") for a in seen[transport]), seen[transport]
    finished = rows(db, "SELECT run_id, payload->>'reason', count(*) FROM events WHERE type = 'trajectory.finished' "
                        "GROUP BY ALL ORDER BY ALL")
    assert finished == [("mcp-http", "answered", N), ("mcp-stdio", "answered", N), ("rec", "answered", N)]


def test_mcp_runs_record_what_the_agent_loop_records(store: tuple[Path, list[dict[str, str]], dict[str, Any]]) -> None:
    """Same searches (query, provider, params), same results (doc_id, rank, URL, title, snippet, surface), same
    fetches (doc_id, page blob), same final answers, question by question."""
    db, qs, _ = store
    rec = tool_steps(db, "rec")
    assert set(rec) == {q["qid"] for q in qs}
    assert sum(1 for steps in rec.values() for s in steps if s[0] == "fetch.completed") >= 1
    assert tool_steps(db, "mcp-stdio") == rec
    assert tool_steps(db, "mcp-http") == rec


def test_report_by_run_gives_the_same_surface_and_items(store: tuple[Path, list[dict[str, str]], dict[str, Any]]
                                                         ) -> None:
    db, _, _ = store
    code, out, err = run_cli("report", "--db", str(db), "--json", "--by", "run", "--bootstrap", "0")
    assert code == 0, err
    arms = json.loads(out)["arms"]
    assert sorted(arms) == ["mcp-http", "mcp-stdio", "rec"]
    keys = ("trajectories", "accuracy", "exact_match", "valid_items", "results_returned", "results_shown",
            "surface_support_rate", "page_support_rate", "mean_surface_chars", "median_surface_chars")
    for key in keys:
        if key in arms["rec"]:
            assert arms["mcp-stdio"][key] == arms["rec"][key] == arms["mcp-http"][key], key
    assert arms["rec"]["trajectories"] == N and arms["rec"]["valid_items"] > 0


def test_refusals_record_nothing_and_the_stop_is_clean(store: tuple[Path, list[dict[str, str]], dict[str, Any]]
                                                        ) -> None:
    db, qs, seen = store
    statuses = [s for s, _ in seen["refused"]]
    assert statuses == [404, 404, 404, 421]
    assert "unknown provider 'tavily'" in seen["refused"][1][1] and "no-such-qid" in seen["refused"][2][1]
    assert rows(db, "SELECT count(*) FROM events WHERE payload->>'qid' = 'no-such-qid'") == [(0,)]
    assert "0 open trajectories abandoned" in seen["stderr"]


def test_replay_names_the_command_that_recorded(store: tuple[Path, list[dict[str, str]], dict[str, Any]]) -> None:
    db, qs, _ = store
    code, out, err = run_cli("replay", "--db", str(db), "--trajectory", f"mcp-stdio:brave:{qs[0]['qid']}", "--json")
    assert "was recorded through `searchtrace mcp`" in out + err, (out, err)
