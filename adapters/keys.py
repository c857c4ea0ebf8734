"""API keys from the environment only, wrapped so their values never reach a log, repr or exception."""

from __future__ import annotations

import os

from searchtrace.adapters.errors import MissingKey

DEFAULT_KEY_ENV: dict[str, str] = {
    "brave": "BRAVE_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "firecrawl": "FIRECRAWL_API_KEY",
    "jina": "JINA_API_KEY",
    "exa": "EXA_API_KEY",
    "perplexity": "PERPLEXITY_API_KEY",
    "serpapi": "SERPAPI_API_KEY",
    "serper": "SERPER_API_KEY",
    "parallel": "PARALLEL_API_KEY",
    "youcom": "YDC_API_KEY",
    "linkup": "LINKUP_API_KEY",
    "jina_search": "JINA_API_KEY",
    "openai": "OPENAI_API_KEY",
    "moonshot": "MOONSHOT_API_KEY",
}

_MIN_SECRET = 4  # shorter values are not scrubbed (they would mangle ordinary text)


class Secret:
    """A key value; `repr`/`str` show only `***` so it cannot leak through formatting or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The value, for the one place that needs it: the request header."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(***)"

    __str__ = __repr__


def read_key(provider: str, env_var: str | None, *, required: bool = True, fallback: str | None = None) -> Secret | None:
    """The key for `provider` from `env_var`; `fallback` (e.g. the sandbox's dummy key) when unset; else MissingKey."""
    value = os.environ.get(env_var, "").strip() if env_var else ""
    if value:
        return Secret(value)
    if fallback:
        return Secret(fallback)
    if required:
        raise MissingKey(provider, env_var or DEFAULT_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY"))
    return None


def json_headers(key: Secret | None, *, json_body: bool = True) -> dict[str, str]:
    """Accept JSON (and send it, with `json_body`), authenticated by `Authorization: Bearer <key>` when there is one."""
    headers = {"Accept": "application/json"}
    if json_body:
        headers["Content-Type"] = "application/json"
    if key is not None:
        headers["Authorization"] = f"Bearer {key.reveal()}"
    return headers


def scrub_text(text: str, *secrets: Secret | None) -> str:
    """Replace every given key value in `text` with `***` (providers may echo a key in an error body)."""
    for s in secrets:
        if s is not None and len(s.reveal()) >= _MIN_SECRET:
            text = text.replace(s.reveal(), "***")
    return text


def scrub_bytes(body: bytes, *secrets: Secret | None) -> bytes:
    """`scrub_text` for raw bodies kept as blobs."""
    for s in secrets:
        if s is not None and len(s.reveal()) >= _MIN_SECRET:
            body = body.replace(s.reveal().encode(), b"***")
    return body
