"""Log lines never carry a key: every provider's key variable (each declared in its own module) is scrubbed."""

from __future__ import annotations

import pytest

from searchtrace.adapters import build_search, search_provider_names, spec
from searchtrace.engine._redact import redact_processor


def test_every_providers_key_is_scrubbed_from_log_events(monkeypatch: pytest.MonkeyPatch) -> None:
    names = search_provider_names()
    values = {spec(n).key_env: f"key-of-{n}-0123456789" for n in names}
    values["OPENAI_API_KEY"] = "sk-openai-0123456789"
    values["MY_GATEWAY_TOKEN"] = "gateway-0123456789"
    for var, value in values.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("SEARCHTRACE_EXTRA_KEY_VARS", "MY_GATEWAY_TOKEN")
    for n in names:  # a run builds its adapters, and with them reads the key variables afresh
        build_search(n)
    line = " ".join(values.values())
    event = redact_processor(None, "info", {"event": f"called with {line}", "params": {"q": line}})
    assert len(set(values)) >= len(names) + 1
    assert not [v for v in values.values() if v in event["event"] or v in event["params"]]
    assert event["event"].startswith("called with ***")
