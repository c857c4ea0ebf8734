"""Keys come from the environment only and never appear in logs, output, exceptions, raw bodies or --help."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import partial
from typing import Any

import anyio
import httpx
import msgspec
import pytest
import structlog

from searchtrace.adapters import (
    ChatError,
    MissingKey,
    Secret,
    build_chat,
    build_fetcher,
    build_search,
    configured_secrets,
    default_endpoint,
    read_key,
    scrub_text,
)
from searchtrace.adapters.sandbox import running
from searchtrace.cli import main
from searchtrace.engine import configure_logging
from tests.adapters.support import KEY_VARS, echo_app

GOOD = "sk-GOODSECRET-4f1a9c"
BAD = "bad-BADSECRET-77e0d2"


def test_missing_key_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(MissingKey) as info:
        build_search("tavily", default_endpoint("tavily"))
    assert str(info.value) == "Tavily: no API key; set the environment variable TAVILY_API_KEY"
    monkeypatch.delenv("MOONSHOT_API_KEY", raising=False)
    with pytest.raises(MissingKey, match="MOONSHOT_API_KEY"):
        build_chat("kimi-k2", default_endpoint("openai", key_env="MOONSHOT_API_KEY"))
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    assert build_fetcher("jina")._key is None  # Reader works without a key (lower limits)


def test_secret_never_formats() -> None:
    s = Secret(GOOD)
    assert GOOD not in repr(s) + str(s) + f"{s}" + repr([s]) and s.reveal() == GOOD
    assert read_key("X", "NO_SUCH_VAR_SET", required=False) is None


def test_configured_keys_are_read_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls of a run share one reading of the key variables; the next run's `read_key` reads them afresh,
    so a key set later in the process (a custom variable included) is still scrubbed."""
    monkeypatch.setenv("TAVILY_API_KEY", GOOD)
    own = read_key("Tavily", "TAVILY_API_KEY")
    assert [s.reveal() for s in configured_secrets(own)].count(GOOD) == 1  # own key once, not twice
    monkeypatch.setenv("BRAVE_API_KEY", BAD)
    monkeypatch.setenv("ST_TEST_CUSTOM_KEY", "custom-key-value")
    assert BAD not in {s.reveal() for s in configured_secrets(own)}  # mid-run: the run's reading stands
    read_key("Custom", "ST_TEST_CUSTOM_KEY")  # the next run builds its adapters
    values = {s.reveal() for s in configured_secrets(None)}
    assert {GOOD, BAD, "custom-key-value"} <= values
    assert scrub_text(f"echo {BAD} and custom-key-value", *configured_secrets(None)) == "echo *** and ***"


def test_missing_key_cli_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["search", "--provider", "brave", "anything"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["searchtrace: error: Brave: no API key; set the environment variable BRAVE_API_KEY"]


@pytest.fixture(autouse=True)
def _reset_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()  # configure_logging bound the captured stderr; later tests must not write to it


@pytest.fixture
def server() -> Iterator[str]:
    with running(echo_app()) as root:
        yield root


def _drive_all(root: str, transport_root: str | None = None) -> list[Any]:
    """Every adapter through success, a 5xx failure with retries, and (with a bad key) a key rejection."""
    seen: list[Any] = []

    async def run() -> None:
        limits: dict[str, Any] = {"rps": 0.0, "max_retries": 1, "max_wait_s": 0.01, "timeout_s": 5.0}
        for name in ("brave", "tavily", "firecrawl"):
            async with build_search(name, default_endpoint(name, base_url=f"{root}/{name}", **limits)) as s:
                seen.append(s)
                seen.append(await s.search("hello"))
                seen.append(await s.search("hello !500"))
        async with build_fetcher("jina", default_endpoint("jina", base_url=f"{root}/jina", **limits)) as f:
            seen.append(f)
            seen.append(await f.fetch("https://example.com/"))
            seen.append(await f.fetch("https://example.com/!500"))
        async with build_chat("m", default_endpoint("openai", base_url=f"{root}/openai/v1", **limits)) as c:
            seen.append(c)
            try:
                seen.append(await c.complete([{"role": "user", "content": "hi"}]))
                seen.append(await c.complete([{"role": "user", "content": "!500"}]))
            except ChatError as exc:
                seen.append(exc)

    anyio.run(run, backend="asyncio")
    return seen


def _texts(objs: list[Any]) -> str:
    out = []
    for o in objs:
        out.append(repr(o))
        out.append(str(o))
        if isinstance(o, msgspec.Struct):
            out.append(msgspec.json.encode(o).decode("utf-8", "replace"))
            raw = getattr(o, "raw", None)
            if raw:
                out.append(raw.decode("utf-8", "replace"))
    return "\n".join(out)


def test_no_key_anywhere(server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    configure_logging(json=True, verbosity=2)  # the CLI's structlog set-up, at debug
    collected: list[str] = []
    for secret in (GOOD, BAD):
        for var in KEY_VARS:
            monkeypatch.setenv(var, secret)
        objs = _drive_all(server)
        statuses = [getattr(o, "status", None) for o in objs]
        if secret == GOOD:
            assert statuses.count("ok") == 4 and statuses.count("http_error") == 5  # success and failure
            assert any(isinstance(o, ChatError) and o.http_status == 500 for o in objs)
        else:
            errors = [o for o in objs if getattr(o, "status", None) == "http_error" and not isinstance(o, ChatError)]
            assert len(errors) == 8 and all("rejected the key in" in (e.error or "") for e in errors)
            assert any(isinstance(o, ChatError) and o.auth and "OPENAI_API_KEY" in o.message for o in objs)
        collected.append(_texts(objs))
        for argv in (["search", "-p", "tavily", "--base-url", f"{server}/tavily", "q"],
                     ["search", "-p", "brave", "--max-retries", "1", "--base-url", f"{server}/brave", "q !500"],
                     ["fetch", "--no-cache", "--base-url", f"{server}/jina", "https://example.com/"],
                     ["--help"], ["search", "--help"], ["fetch", "--help"]):
            try:
                main(["-vv", "--log-json", *argv])
            except SystemExit as exc:
                assert exc.code in (0, 1, 2)
    out = capsys.readouterr()
    everything = "\n".join(collected) + out.out + out.err + caplog.text
    assert "rejected the key in TAVILY_API_KEY" in out.err  # the CLI's one line for a bad key
    assert "invalid key ***" in everything and "boom while serving ***" in everything  # scrubbed, not dropped
    assert GOOD not in everything and BAD not in everything
    assert '"event": "search"' in out.err  # logs were really captured


@pytest.mark.anyio
async def test_echoed_key_is_scrubbed_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRECRAWL_API_KEY", BAD)
    transport = httpx.ASGITransport(app=echo_app())
    ep = default_endpoint("firecrawl", base_url="http://echo/firecrawl", rps=0.0)
    async with build_search("firecrawl", ep, transport=transport) as s:
        resp = await s.search("q")
    assert resp.status == "http_error" and resp.http_status == 401
    assert resp.raw is not None and BAD.encode() not in resp.raw and b"***" in resp.raw
    assert resp.error is not None and BAD not in resp.error and "FIRECRAWL_API_KEY" in resp.error


def test_no_key_anywhere_against_the_sandbox(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             caplog: pytest.LogCaptureFixture) -> None:
    """The same search through the real sandbox over 127.0.0.1: success, faults, and its own 401 replies."""
    sandbox = pytest.importorskip("searchtrace.adapters.sandbox")
    from tests.adapters.sandbox_support import TARGETS, call

    caplog.set_level(logging.DEBUG)
    configure_logging(json=True, verbosity=2)
    seen: list[Any] = []
    with sandbox.running(sandbox.create_app(hang_s=2.0)) as root:
        for secret in (GOOD, BAD):
            for var in KEY_VARS:
                monkeypatch.setenv(var, secret)
            for target in TARGETS:
                for marker in ("", "!fault:500", "!fault:429x1", "!fault:timeout", "!fault:401"):
                    run = partial(call, target, root, None, marker, timeout_s=0.1, max_retries=1)
                    seen.append(anyio.run(run, backend="asyncio"))
            for argv in (["search", "-p", "brave", "--sandbox", "q"], ["fetch", "--sandbox", "--no-cache", "https://x.example/"]):
                try:
                    main(["-vv", "--log-json", *argv])
                except SystemExit as exc:
                    assert exc.code in (0, 1)
    assert {o.status for o in seen} == {"ok", "http_error", "timeout"}
    assert sum(1 for o in seen if o.error and "rejected the key in" in o.error) >= 10
    out = capsys.readouterr()
    everything = "\n".join(repr(o) for o in seen) + out.out + out.err + caplog.text
    assert '"event": "retrying"' in out.err
    assert GOOD not in everything and BAD not in everything
