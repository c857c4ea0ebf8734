"""API keys from the environment only, wrapped so their values never reach a log, repr or exception."""

from __future__ import annotations

import os
import re
from typing import Any, TypeVar

import msgspec

from searchtrace.adapters._errors import MissingKey
from searchtrace.store import BadInput

T = TypeVar("T")

# endpoint name -> its key variable: each endpoint's module declares its own and the registry records it here
# (register_key_env); MOONSHOT_API_KEY is the usual alternative key of the chat endpoint
DEFAULT_KEY_ENV: dict[str, str] = {"moonshot": "MOONSHOT_API_KEY"}

_MIN_SECRET = 4  # shorter values are not scrubbed (they would mangle ordinary text)
_KEY_ENVS: set[str] = set(DEFAULT_KEY_ENV.values())  # every key variable known in this process (read_key adds)
# The values of those variables, read once and kept until the next `read_key`: adapters read their keys when a run
# builds them, so every run starts from the environment as it is then (a test's monkeypatched key included),
# while the calls within a run do not read the environment again.
_configured: tuple[Secret, ...] | None = None


def register_key_env(name: str, env_var: str) -> None:
    """Records an endpoint's key variable, so replies echoing its value are scrubbed (keys are never stored: docs/concepts/security.md)."""
    DEFAULT_KEY_ENV[name] = env_var
    _KEY_ENVS.add(env_var)


def default_key_env(name: str) -> str:
    """The key variable of endpoint `name`; `<NAME>_API_KEY` for one nobody declared."""
    return DEFAULT_KEY_ENV.get(name) or f"{name.upper()}_API_KEY"


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
    global _configured
    value = os.environ.get(env_var, "").strip() if env_var else ""
    if env_var:
        _KEY_ENVS.add(env_var)
    _configured = None  # a run is starting (or a new variable is known): read the key variables afresh
    if any(ord(c) < 32 or ord(c) == 127 for c in value):  # would break (or inject into) the request header
        raise BadInput(f"{env_var}: the key holds a line break or another control character; set the key alone")
    if value:
        return Secret(value)
    if fallback:
        return Secret(fallback)
    if required:
        raise MissingKey(provider, env_var or default_key_env(provider))
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


def configured_secrets(*own: Secret | None) -> list[Secret]:
    """`own` plus the value of every key variable configured in this process (a reply may echo any of them)."""
    global _configured
    configured = _configured
    if configured is None:
        values = (os.environ.get(name, "").strip() for name in sorted(_KEY_ENVS))
        configured = _configured = tuple(Secret(v) for v in dict.fromkeys(values) if len(v) >= _MIN_SECRET)
    out = [s for s in own if s is not None]
    out += [c for c in configured if all(c.reveal() != s.reveal() for s in out)]
    return out


def _scrub_any(value: Any, secrets: list[Secret]) -> Any:
    if isinstance(value, str):
        return scrub_text(value, *secrets)
    if isinstance(value, list | tuple):
        return type(value)(_scrub_any(v, secrets) for v in value)
    if isinstance(value, dict):
        return {_scrub_any(k, secrets): _scrub_any(v, secrets) for k, v in value.items()}
    if isinstance(value, msgspec.Struct):
        changes = {f: _scrub_any(getattr(value, f), secrets) for f in value.__struct_fields__}
        return msgspec.structs.replace(value, **changes)
    return value


def scrub_parsed(value: T, secrets: list[Secret]) -> T:
    """Every string inside `value` (Structs, lists, dicts) with each secret replaced by `***`; unchanged when none
    occurs. Parsed replies go through this before they are stored or shown to a model (keys are never stored: docs/concepts/security.md)."""
    live = [s for s in secrets if len(s.reveal()) >= _MIN_SECRET]
    if not live:
        return value
    if all(msgspec.json.encode(s.reveal())[1:-1] == s.reveal().encode() for s in live):  # each appears verbatim
        try:
            text: bytes | None = msgspec.json.encode(value)
        except (TypeError, RecursionError):
            text = None
        if text is not None and not any(s.reveal().encode() in text for s in live):
            return value  # the usual case: one encode and a search, no copy
    result: T = _scrub_any(value, live)
    return result


# -- keys by their names: what an agent put in tool arguments or a URL (docs/reliability.md "Keys in tool arguments
# and URLs")

KEY_MARKER = "***"  # the fixed marker every scrubbed value becomes
_KEY_NAMES = frozenset({"key", "apikey", "token", "accesstoken", "auth", "authorization", "bearer", "secret",
                        "password", "clientsecret", "refreshtoken", "idtoken", "sessiontoken", "subscriptiontoken"})
_KEY_SUFFIXES = ("apikey", "accesstoken", "secret", "password")
# a query or fragment parameter (`?apikey=…`, `&token=…`, `#access_token=…`) and the password of a URL's user
# information; then (a second pass, so a field holding a URL does not hide its parameters) a JSON string field
# (`"api_key": "…"`, also as JSON quoted inside a JSON string: `\"api_key\": \"…\"`)
# a name ending as every key name ends (is_key_name decides): the patterns match few places, so a scan is cheap
_ENDS = r"(?:(?<=key)|(?<=token)|(?<=auth)|(?<=authorization)|(?<=bearer)|(?<=secret)|(?<=password))"
_PARAM = (r"(?P<p>[?&#;])(?P<pn>[A-Za-z0-9_.%-]{1,64})" + _ENDS + r"=(?P<pv>[^&#;\s\"'<>\\]+)"
          r"|(?P<u>://[^/?#@\s:\"'<>\\]*:)(?P<uv>[^/?#@\s\"'<>\\]+)@")
_FIELD = r"(?P<q>\\*\")(?P<fn>[A-Za-z0-9_.-]{1,64})" + _ENDS + r"(?P=q)\s*:\s*(?P=q)(?P<fv>[^\"\\]+)(?P=q)"
_WORDS = ("key", "token", "auth", "authorization", "bearer", "secret", "password")  # every key name ends so
_WORDS_BYTES = tuple(w.encode() for w in _WORDS)
_NAMED_TEXT = (re.compile(_PARAM, re.IGNORECASE), re.compile(_FIELD, re.IGNORECASE))
_NAMED_BYTES = (re.compile(_PARAM.encode(), re.IGNORECASE), re.compile(_FIELD.encode(), re.IGNORECASE))


def is_key_name(name: str) -> bool:
    """Whether a parameter or field called `name` carries a credential (`api_key`, `apiKey`, `token`, `auth` …)."""
    n = name.lower().replace("-", "").replace("_", "")
    return n in _KEY_NAMES or n.endswith(_KEY_SUFFIXES)


def _named_key(m: re.Match[Any]) -> bool:
    """Whether a match of _NAMED is a key (a user-info password always is)."""
    name = m.groupdict().get("pn") or m.groupdict().get("fn")
    if name is None:  # a user-info password
        return True
    return is_key_name(name.decode("ascii") if isinstance(name, bytes) else name)


def _value_group(m: re.Match[Any]) -> str:
    return next(g for g in ("pv", "fv", "uv") if m.groupdict().get(g) is not None)


def _mark_text(m: re.Match[str]) -> str:
    if not _named_key(m):
        return m.group(0)
    value = _value_group(m)
    return m.string[m.start(0):m.start(value)] + KEY_MARKER + m.string[m.end(value):m.end(0)]


def _mark_bytes(m: re.Match[bytes]) -> bytes:
    if not _named_key(m):
        return m.group(0)
    value = _value_group(m)
    return m.string[m.start(0):m.start(value)] + KEY_MARKER.encode() + m.string[m.end(value):m.end(0)]


def _hinted(data: Any, words: tuple[Any, ...], strip: Any, seps: tuple[Any, Any], userinfo: tuple[Any, Any],
            short: re.Pattern[Any]) -> bool:
    """Whether `data` may hold a match: a key word followed (past quotes and spaces) by `=` or `:`, or a URL with
    user information. One small pattern on a short text, a few substring searches on a long one, so most texts
    skip the patterns."""
    low = data.lower()
    if len(low) <= _SHORT:
        if short.search(low):
            return True
    else:
        for w in words:
            i = low.find(w)
            while i >= 0:
                i += len(w)
                if low[i:i + 8].lstrip(strip)[:1] in seps:
                    return True
                i = low.find(w, i)
    return userinfo[0] in data and userinfo[1] in data


_SHORT = 1024  # bytes up to which one pattern is cheaper than the substring searches
_SHORT_HINT = r"(?:key|token|auth(?:orization)?|bearer|secret|password)[\\\" ]*[=:]"
_TEXT_HINT = (_WORDS, '\\" ', ("=", ":"), ("://", "@"), re.compile(_SHORT_HINT))
_BYTES_HINT = (_WORDS_BYTES, b'\\" ', (b"=", b":"), (b"://", b"@"), re.compile(_SHORT_HINT.encode()))


def scrub_named_text(text: str) -> str:
    """`text` with the value of every key-named URL parameter or JSON field, and every URL password, replaced by
    KEY_MARKER; the rest byte for byte as it was (a URL keeps its place in normalisation: scrub, then normalise)."""
    if not _hinted(text, *_TEXT_HINT):
        return text
    return _NAMED_TEXT[1].sub(_mark_text, _NAMED_TEXT[0].sub(_mark_text, text))


def scrub_named_bytes(data: bytes) -> bytes:
    """`scrub_named_text` for raw bodies and blobs."""
    if not _hinted(data, *_BYTES_HINT):
        return data
    return _NAMED_BYTES[1].sub(_mark_bytes, _NAMED_BYTES[0].sub(_mark_bytes, data))


def _has_named(data: bytes) -> bool:
    if not _hinted(data, *_BYTES_HINT):
        return False
    return any(_named_key(m) for pattern in _NAMED_BYTES for m in pattern.finditer(data))


def _scrub_named_any(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_named_text(value)
    if isinstance(value, list | tuple):
        return type(value)(_scrub_named_any(v) for v in value)
    if isinstance(value, dict):
        return {k: KEY_MARKER if isinstance(k, str) and is_key_name(k) and isinstance(v, str | int | float)
                and not isinstance(v, bool) else _scrub_named_any(v) for k, v in value.items()}
    if isinstance(value, msgspec.Struct):
        changes = {f: _scrub_named_any(getattr(value, f)) for f in value.__struct_fields__}
        return msgspec.structs.replace(value, **changes)
    return value


def scrub_named(value: T) -> T:
    """Every string inside `value` (Structs, lists, dicts) through `scrub_named_text`, and a key-named dict field's
    value replaced; `value` itself when nothing in it is a key (the usual case: one encode and a scan, no copy)."""
    try:
        data = msgspec.json.encode(value)
    except (TypeError, RecursionError):
        data = None
    if data is not None and not _has_named(data):
        return value
    result: T = _scrub_named_any(value)
    return result
