"""The same app as a real HTTP server on 127.0.0.1, and the `searchtrace sandbox` commands."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from searchtrace.adapters.sandbox import base_urls, create_app, default_world, running
from searchtrace.cli import main
from tests.adapters.sandbox.harness import HEADERS


def test_real_server_start_request_stop() -> None:
    app = create_app()
    q = default_world().questions[0]
    with running(app) as root:
        assert root.startswith("http://127.0.0.1:")
        b = base_urls(root)
        with httpx.Client(timeout=5) as c:
            r = c.get(f"{b['brave']}/res/v1/web/search", params={"q": q.question, "count": 5},
                      headers={**HEADERS["brave"], "X-Searchtrace-Trace": "t-real"})
            assert r.status_code == 200 and len(r.json()["web"]["results"]) == 5
            url = r.json()["web"]["results"][0]["url"]
            page = c.get(f"{b['jina']}/{url}")
            assert page.status_code == 200 and page.text.startswith("Title: ")
            index = c.get(root + "/").json()
            assert index["base_urls"] == b and index["questions"] == len(default_world().questions)
            with pytest.raises(httpx.ReadTimeout):  # hanging requests, then the client gives up
                c.get(f"{b['jina']}/https://faults.sandbox.test/!fault:timeout", timeout=0.3)
            with pytest.raises(httpx.ReadTimeout):
                c.post(f"{b['tavily']}/search", json={"query": "x !fault:timeout"}, headers=HEADERS["tavily"], timeout=0.3)
            with c.stream("GET", f"{b['jina']}/https://faults.sandbox.test/x?!fault:oversized") as big:
                read = 0
                for chunk in big.iter_raw():
                    read += len(chunk)
                    if read > 2 * 1024 * 1024:
                        break  # a reader with a 2 MB cap stops here and closes the connection
            assert 2 * 1024 * 1024 < read < 3 * 1024 * 1024
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 60  # stopping does not wait for the hanging request (an hour): a hang guard
    assert app.state.counters[("brave", "t-real")] == 1
    with pytest.raises(httpx.ConnectError):
        httpx.get(root + "/", timeout=1)


def test_questions_command_writes_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "q.jsonl"
    main(["sandbox", "questions", str(out)])
    assert "wrote 36 questions" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(default_world().questions) >= 30
    assert set(rows[0]) == {"qid", "question", "answer", "freshness", "search_results", "topic"}
    assert len({r["qid"] for r in rows}) == len(rows)


def test_serve_rejects_bad_fault_rates(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["sandbox", "serve", "--fault-rate", "meteor=0.5"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "meteor" in err and len(err.strip().splitlines()) == 1
