"""`searchtrace doctor`: the set-up checked with one call per endpoint, against the sandbox world, before any run."""

from __future__ import annotations

from pathlib import Path

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
