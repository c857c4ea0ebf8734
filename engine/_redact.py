"""Scrub secrets (the values of key variables) from anything about to be logged or printed."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

from searchtrace.adapters import configured_secrets, search_provider_names

_MIN_SECRET = 4  # shorter values would mangle ordinary text


def secrets() -> list[str]:
    """The values of every key variable the adapters know (each provider module declares its own; read when a run
    builds its adapters) and of those named in SEARCHTRACE_EXTRA_KEY_VARS."""
    search_provider_names()  # the provider modules are found, so their key variables are known
    extra = (os.environ.get(n.strip(), "").strip() for n in os.environ.get("SEARCHTRACE_EXTRA_KEY_VARS", "").split(","))
    return [s.reveal() for s in configured_secrets()] + [v for v in extra if len(v) >= _MIN_SECRET]


def scrub(text: str) -> str:
    for s in secrets():
        text = text.replace(s, "***")
    return text


def redact_processor(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for k, v in list(event_dict.items()):
        if isinstance(v, str):
            event_dict[k] = scrub(v)
        elif isinstance(v, (dict, list, tuple)):
            event_dict[k] = scrub(repr(v))
    return event_dict
