"""`searchtrace doctor`: the set-up checked with one call per endpoint, against the sandbox world, before any run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.adapters.sandbox import free_port
from tests.builders import run_cli

CONFIG = """
run_id = "doc"
[agent]
model = "sandbox-agent"
max_retries = {retries}
[fetch]
max_retries = {retries}
[providers.brave]
max_retries = {retries}
[providers.tavily]
max_retries = {retries}
[dataset]
path = "{dataset}"
"""
KEYS = ("OPENAI_API_KEY", "BRAVE_API_KEY", "TAVILY_API_KEY", "JINA_API_KEY")


def config(tmp_path: Path, dataset: str = "sandbox", retries: int = 2) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(CONFIG.format(dataset=dataset, retries=retries), encoding="utf-8")
    return path


def test_every_check_passes_on_the_sandbox(tmp_path: Path) -> None:
    ran = run_cli("doctor", "--config", str(config(tmp_path)), "--sandbox", "--json")
    assert ran.code == 0, ran.err
    checks = {c["what"]: c for c in msgspec.json.decode(ran.out)}
    assert set(checks) == {"dataset", "keys", "search brave", "search tavily", "fetch", "agent model sandbox-agent"}
    assert all(c["ok"] for c in checks.values())
    assert checks["dataset"]["detail"].endswith("questions") and checks["search brave"]["detail"].endswith("results")
    assert not list(tmp_path.glob("*.duckdb"))  # nothing recorded


def test_missing_keys_are_all_named_and_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    ran = run_cli("doctor", "--config", str(config(tmp_path)))
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert lines[0].startswith("ok    dataset")
    assert lines[1].startswith("FAIL  keys:") and all(k in lines[1] for k in ("OPENAI_API_KEY", "BRAVE_API_KEY",
                                                                                "TAVILY_API_KEY"))
    assert ran.err.count("\n") == 1 and "doctor: 1 check(s) failed (keys)" in ran.err


def test_unreachable_endpoints_and_unreadable_dataset_fail_with_reasons(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "one?"}\n{not json\n', encoding="utf-8")
    ran = run_cli("doctor", "--config", str(config(tmp_path, dataset=str(broken), retries=0)), "--sandbox-url", closed, "--json")
    assert ran.code == 1 and "Traceback" not in ran.err
    checks = {c["what"]: c for c in msgspec.json.decode(ran.out)}
    assert not checks["dataset"]["ok"] and "broken.jsonl" in checks["dataset"]["detail"]
    assert not checks["search brave"]["ok"] and not checks["fetch"]["ok"]
    assert not checks["agent model sandbox-agent"]["ok"]


# ---------------------------------------------------------------- docs/concepts/security.md: bounded, and honest about the fetch backend


def _hostile(fetch: str) -> Any:
    """Every search and chat route asks to retry in 100000 s; the fetch route answers as `fetch` says."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def handle(request: Request) -> Response:
        path = request.url.path
        if path.startswith("/jina/"):
            if fetch == "500":
                return Response("upstream broke", status_code=500)
            if fetch == "html":
                return Response("<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>", media_type="text/html")
            if fetch == "404":
                return Response('{"code": 404, "message": "target page not found"}', status_code=404,
                                media_type="application/json")
            return Response("Title: Example\n\nMarkdown Content:\nThis domain is for use in examples.",
                            media_type="text/plain")
        return Response('{"error": "slow down"}', status_code=429, headers={"Retry-After": "100000"},
                        media_type="application/json")

    return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "POST"])])


def test_doctor_gives_up_at_its_budget_against_retry_after_100000(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from searchtrace.adapters.sandbox import running
    from searchtrace.pipeline import _doctor

    # docs/concepts/security.md's "doctor within 30 s overall" is the endpoint calls' default budget plus start-up ...
    assert _doctor.doctor.__kwdefaults__ == {"budget_s": _doctor.BUDGET_S} and _doctor.BUDGET_S <= 25.0
    # ... and the command gives up there, whatever an endpoint asks: each one that asked to retry in 100000 s is
    # named as unanswered when the budget ends (1 s here: the deadline, not a clock, is what the test waits for)
    monkeypatch.setitem(_doctor.doctor.__kwdefaults__, "budget_s", 1.0)
    with running(_hostile("500")) as root:
        ran = run_cli("doctor", "--config", str(config(tmp_path, retries=5)), "--sandbox-url", root, "--json")
    assert ran.code == 1 and "Traceback" not in ran.err, ran.err
    checks = {c["what"]: c for c in msgspec.json.decode(ran.out)}
    assert checks["dataset"]["ok"] and checks["keys"]["ok"]
    for what in ("search brave", "search tavily", "agent model sandbox-agent"):
        assert checks[what] == {"what": what, "ok": False, "detail": "no answer within 1 s (slow, or asks to retry later)"}
    assert not checks["fetch"]["ok"]  # retrying its 500s (the 500 named with retries=0: the test below)


@pytest.mark.parametrize(("fetch", "healthy", "words"), [
    ("500", False, "HTTP 500"), ("html", False, "HTML page"), ("404", True, "reachable"), ("text", True, "reachable"),
])
def test_the_fetch_backend_is_healthy_only_when_it_answers_as_a_reader(tmp_path: Path, fetch: str, healthy: bool,
                                                                       words: str) -> None:
    import anyio

    from searchtrace.adapters.sandbox import running
    from searchtrace.engine import load_config
    from searchtrace.pipeline import aim, doctor

    cfg = load_config(config(tmp_path, retries=0))
    with running(_hostile(fetch)) as root:
        transport = aim(cfg, sandbox=False, sandbox_url=root)
        checks = {c.what: c for c in anyio.run(lambda: doctor(cfg, transport, budget_s=5.0), backend="asyncio")}
    assert checks["fetch"].ok is healthy and words in checks["fetch"].detail, checks["fetch"]
    brave = checks["search brave"]
    assert not brave.ok and ("5 s" in brave.detail or "429" in brave.detail), brave
