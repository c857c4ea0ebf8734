"""Scrub secrets (the values of key variables) from anything about to be logged or printed."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any

KEY_VARS = (
    "OPENAI_API_KEY",
    "BRAVE_API_KEY",
    "TAVILY_API_KEY",
    "FIRECRAWL_API_KEY",
    "JINA_API_KEY",
    "MOONSHOT_API_KEY",
)


def secrets() -> list[str]:
    """Current values of every key variable (plus SEARCHTRACE_EXTRA_KEY_VARS), long enough to matter."""
    names = list(KEY_VARS) + [n for n in os.environ.get("SEARCHTRACE_EXTRA_KEY_VARS", "").split(",") if n]
    return [v for n in names if (v := os.environ.get(n)) and len(v) >= 4]


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
