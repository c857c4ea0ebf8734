"""Every injected fault, through the real adapters into the sandbox app in-process: its status and its retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from searchtrace.adapters._jina import READ_CAP
from tests.adapters.sandbox_support import TARGETS, call

sandbox = pytest.importorskip("searchtrace.adapters.sandbox")


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BRAVE_API_KEY", "TAVILY_API_KEY", "FIRECRAWL_API_KEY", "JINA_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def app() -> Iterator[Any]:
    yield sandbox.create_app()


def _transport(app: Any) -> httpx.AsyncBaseTransport:
    return sandbox.in_process(app).transport


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
async def test_success(app: Any, target: str) -> None:
    out = await call(target, sandbox.ROOT, _transport(app), trace_id=f"ok-{target}")
    assert (out.status, out.http_status, out.retries) == ("ok", 200, [])
    if target == "jina":
        assert out.content and "Elmwyn" in out.content and out.n_bytes > 0
    else:
        assert out.n_results >= 1  # search hits, or the agent's tool call
    assert app.state.counters[(target, f"ok-{target}")] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind,reason", [("429", "429"), ("500", "5xx"), ("503", "5xx")])
async def test_retryable_http_faults_exhaust_retries(app: Any, target: str, kind: str, reason: str) -> None:
    trace = f"{target}-{kind}"
    out = await call(target, sandbox.ROOT, _transport(app), f"!fault:{kind}", trace_id=trace)
    assert (out.status, out.http_status) == ("http_error", int(kind))
    assert [(r.attempt, r.reason) for r in out.retries] == [(1, reason), (2, reason)]
    assert all(r.what.endswith(target if target != "chat" else "sandbox-agent") for r in out.retries)
    assert out.error  # the provider's own message is kept
    assert app.state.counters[(target, trace)] == 3


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind,reason", [("429", "429"), ("500", "5xx"), ("503", "5xx"), ("timeout", "timeout")])
async def test_first_attempt_fault_recovers(app: Any, target: str, kind: str, reason: str) -> None:
    trace = f"{target}-{kind}x1"
    out = await call(target, sandbox.ROOT, _transport(app), f"!fault:{kind}x1", trace_id=trace, timeout_s=0.3)
    assert (out.status, [r.reason for r in out.retries]) == ("ok", [reason])
    assert app.state.counters[(target, trace)] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
async def test_timeout_every_attempt(app: Any, target: str) -> None:
    out = await call(target, sandbox.ROOT, _transport(app), "!fault:timeout", trace_id="t", timeout_s=0.15, max_retries=1)
    assert (out.status, [r.reason for r in out.retries]) == ("timeout", ["timeout"])
    assert app.state.counters[(target, "t")] == 2


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["malformed", "truncated"])
async def test_broken_bodies_are_bad_response(app: Any, target: str, kind: str) -> None:
    """Search and fetch keep a broken body as `bad_response`; a broken chat body is no answer and is retried."""
    out = await call(target, sandbox.ROOT, _transport(app), f"!fault:{kind}", trace_id="b")
    retried = target == "chat"
    assert out.status == "bad_response"
    assert [r.reason for r in out.retries] == (["bad_body", "bad_body"] if retried else [])
    assert app.state.counters[(target, "b")] == (3 if retried else 1)


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
async def test_slow_is_ok_and_takes_its_time(app: Any, target: str) -> None:
    out = await call(target, sandbox.ROOT, _transport(app), "!fault:slow")
    assert (out.status, out.retries) == ("ok", []) and out.latency_ms >= 240


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
async def test_401_names_the_key_variable_and_is_not_retried(app: Any, target: str) -> None:
    out = await call(target, sandbox.ROOT, _transport(app), "!fault:401", trace_id="k")
    assert (out.status, out.http_status, out.retries) == ("http_error", 401, [])
    var = {"chat": "OPENAI_API_KEY"}.get(target, f"{target.upper()}_API_KEY")
    assert out.error is not None and f"rejected the key in {var}" in out.error
    assert app.state.counters[(target, "k")] == 1


@pytest.mark.anyio
@pytest.mark.parametrize("target", TARGETS)
async def test_bad_key_from_the_environment(app: Any, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    var = {"chat": "OPENAI_API_KEY"}.get(target, f"{target.upper()}_API_KEY")
    monkeypatch.setenv(var, "bad-key-for-test")
    out = await call(target, sandbox.ROOT, _transport(app))
    assert out.status == "http_error" and out.http_status in (401, 422)
    assert out.error is not None and f"rejected the key in {var}" in out.error and "bad-key-for-test" not in out.error


@pytest.mark.anyio
async def test_oversized_page_is_too_large(app: Any) -> None:
    out = await call("jina", sandbox.ROOT, _transport(app), "!fault:oversized")
    assert (out.status, out.content, out.retries) == ("too_large", None, [])
    assert out.n_bytes > READ_CAP


@pytest.mark.anyio
async def test_fetch_cache_hit_on_second_call(app: Any, tmp_path: Any) -> None:
    first = await call("jina", sandbox.ROOT, _transport(app), trace_id="c1", cache_dir=tmp_path)
    second = await call("jina", sandbox.ROOT, _transport(app), trace_id="c2", cache_dir=tmp_path)
    assert first.status == second.status == "ok" and first.content == second.content
    assert app.state.counters[("jina", "c1")] == 1 and app.state.counters[("jina", "c2")] == 0


@pytest.mark.anyio
async def test_chaos_plan_is_absorbed_by_retries() -> None:
    app = sandbox.create_app(faults=sandbox.FaultPlan(seed=7, rates={"429": 0.3, "500": 0.2}))
    outs = [await call("tavily", sandbox.ROOT, _transport(app), f"q{i}", max_retries=6) for i in range(12)]
    assert all(o.status == "ok" for o in outs)
    assert sum(len(o.retries) for o in outs) >= 1  # at 50% fault rate some call needed a retry
