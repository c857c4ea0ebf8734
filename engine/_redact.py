"""Scrub secrets (the values of key variables, and key-named URL parameters and JSON fields) from anything about to
be logged or printed."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

from searchtrace.adapters import (
    Secret,
    configured_secrets,
    scrub_named_text,
    scrub_text,
    search_provider_names,
)


def secrets() -> list[Secret]:
    """The values of every key variable the adapters know (each provider module declares its own; read when a run
    builds its adapters) and of those named in SEARCHTRACE_EXTRA_KEY_VARS."""
    search_provider_names()  # the provider modules are found, so their key variables are known
    extra = (os.environ.get(n.strip(), "").strip() for n in os.environ.get("SEARCHTRACE_EXTRA_KEY_VARS", "").split(","))
    return configured_secrets(*(Secret(v) for v in extra if v))


def redact_processor(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    known = secrets()
    for k, v in list(event_dict.items()):
        if isinstance(v, str):
            event_dict[k] = scrub_named_text(scrub_text(v, *known))
        elif isinstance(v, (dict, list, tuple)):
            event_dict[k] = scrub_named_text(scrub_text(repr(v), *known))
    return event_dict
