"""Where a proxied request goes: which endpoint (by the sandbox's sub-path), what it is, and whose key it carries."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal, NamedTuple
from urllib.parse import unquote

import msgspec

from searchtrace.adapters import ANTHROPIC_ENDPOINT as ANTHROPIC
from searchtrace.adapters import (
    ANTHROPIC_PATH,
    FETCHERS,
    SANDBOX_KEY,
    SEARCH_PROVIDERS,
    Secret,
    configured_secrets,
    default_key_env,
    endpoints,
    is_key_name,
    scrub_bytes,
    spec,
    specs,
)
from searchtrace.adapters import ENDPOINT as CHAT
from searchtrace.adapters import GEMINI_ENDPOINT as GEMINI
from searchtrace.engine._config import MAX_EPOCHS

Kind = Literal["search", "fetch", "chat", "other"]

# Request headers that carry a client's credentials (dropped, never forwarded or stored) or belong to one hop.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-subscription-token", "x-api-key", "api-key",
                                "cookie"})
DROP_REQUEST = CREDENTIAL_HEADERS | frozenset({
    "origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user",  # a browser page's
    "host", "content-length", "connection", "transfer-encoding", "accept-encoding", "keep-alive", "te", "upgrade",
    "x-searchtrace-epoch", "x-searchtrace-trajectory",
})
TRAJECTORY_HEADER = "x-searchtrace-trajectory"  # `<provider>/<qid>`, the qid percent-encoded: one base URL for all
EPOCH_HEADER = "x-searchtrace-epoch"  # the epoch of the trajectory a request names (1 when absent)
DROP_RESPONSE = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
                           "set-cookie", "date", "server"})
# A parameter or JSON field whose name (lower case, without '-' and '_') is one of these, or ends with one of the
# suffixes, holds a credential: it is never stored, and its value is scrubbed wherever it reappears. Everything
# under such a field (`auth: {"api_key": ...}`) counts as a credential too.
# request headers whose value is a credential (besides the names above): the proxy drops them, and scrubs their value
_KEY_HEADER = re.compile(r"(?i)(api[-_]?key|token|secret|auth|password|cookie)")
_SCHEME = re.compile(r"(?i)^(bearer|basic|token)\s+")
MIN_SENT_KEY = 8  # a shorter value the agent sends as a key ("none", "test") is dropped, not scrubbed from every text
EPOCH_DIGITS = 4  # `X-Searchtrace-Epoch` is at most MAX_EPOCHS: a longer header is refused before it is converted
# endpoints that take the key as a query parameter, and its name (from each provider's module)
QUERY_KEY = {s.name: s.key_param for s in specs() if s.key_param}


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """One request's destination: the endpoint name (registry.endpoints), its kind, and the path below it."""

    kind: Kind
    endpoint: str
    path: str
    # a model call's wire format: Chat Completions, Responses, Anthropic Messages or Gemini
    api: Literal["chat", "responses", "anthropic", "gemini"] = "chat"
    stream: bool = False  # the path asks for a streamed reply (Gemini's `:streamGenerateContent`)
    model: str | None = None  # the model the path names (Gemini's `models/<model>:…`)


class Selected(NamedTuple):
    """The trajectory a request names (by its path prefix or its header) and the route below it (decoded)."""

    provider: str
    qid: str
    rest: str


def _decoded(part: str, what: str) -> str:
    """A percent-encoded path segment or header part as text (UTF-8); ValueError naming `what` when it is not."""
    try:
        return unquote(part, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"{what} is not percent-encoded UTF-8") from None


def _from_header(value: str) -> tuple[str, str]:
    """`<provider>/<qid>` of the trajectory header, its qid percent-decoded."""
    provider, slash, qid = value.strip().partition("/")
    if not slash or not provider or not qid:
        raise ValueError("header X-Searchtrace-Trajectory must be <provider>/<qid> (the qid percent-encoded)")
    if not value.isascii():
        raise ValueError("header X-Searchtrace-Trajectory: percent-encode the qid's non-ASCII characters")
    return _decoded(provider, "header X-Searchtrace-Trajectory"), _decoded(qid, "header X-Searchtrace-Trajectory")


def select(raw_path: str, header: str | None) -> Selected | None:
    """The trajectory of a request: from `/t/<provider>/<qid>/<route>` (each segment percent-decoded on its own, so
    a qid may hold `/`, `?`, `#` … as %2F, %3F, %23), else from the header with `/<route>`; None: neither names
    one. ValueError (one line) for an undecodable part, or a header naming another trajectory than the path."""
    named = _from_header(header) if header is not None else None
    if raw_path.startswith("/t/"):
        parts = raw_path[3:].split("/", 2)
        if len(parts) < 3:
            return None
        provider, qid = _decoded(parts[0], "the provider"), _decoded(parts[1], "the qid")
        if named is not None and named != (provider, qid):
            raise ValueError(f"header X-Searchtrace-Trajectory names {'/'.join(named)!r}, the path {provider}/{qid!r}")
        return Selected(provider, qid, _decoded(parts[2], "the route"))
    if named is None:
        return None
    return Selected(named[0], named[1], _decoded(raw_path.lstrip("/"), "the route"))


class Chosen(NamedTuple):
    """The trajectory a request names, the route below it and the epoch it names."""

    provider: str
    qid: str
    rest: str
    epoch: int


def choose_trajectory(raw_path: str, headers: Mapping[str, str]) -> Chosen | str | None:
    """The trajectory a request names by its path or trajectory header (`select`) and its epoch header (`headers`
    keyed in lower case); None when it names none; the one line that refuses an undecodable part or epoch."""
    try:
        sel = select(raw_path, headers.get(TRAJECTORY_HEADER))
    except ValueError as exc:
        return str(exc)
    if sel is None:
        return None
    epoch = epoch_of(headers.get(EPOCH_HEADER, "1"), MAX_EPOCHS)
    return epoch if isinstance(epoch, str) else Chosen(sel.provider, sel.qid, sel.rest, epoch)


def tool_arguments(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], list[Secret]]:
    """A tool call's arguments as stored (key-named fields left out, at any depth) and every key to scrub from what
    the call returns (the configured ones and any the arguments carry)."""
    return without_keys(dict(arguments)), request_secrets({}, (), arguments, own=None)


def route_of(raw_path: str) -> str:
    """The route of a request that names no trajectory: its whole path, decoded (ValueError when it does not)."""
    return _decoded(raw_path.lstrip("/"), "the route")


def _decodable() -> frozenset[str]:
    """The content codings httpx decodes as it reads: always identity, gzip and deflate; br and zstd only with the
    package httpx uses for them (its documented optional dependencies)."""
    have = {"identity", "gzip", "deflate"}
    if importlib.util.find_spec("brotli") or importlib.util.find_spec("brotlicffi"):
        have.add("br")
    if importlib.util.find_spec("zstandard"):
        have.add("zstd")
    return frozenset(have)


DECODABLE = _decodable()


def undecodable(encodings: Iterable[str]) -> str | None:
    """Why a reply's Content-Encoding cannot be relayed (httpx decodes the others as it reads; the proxy asks for
    `identity`, so a server that encodes anyway uses gzip or deflate in practice), or None."""
    unknown = [e for e in (v.strip().lower() for v in encodings) if e and e not in DECODABLE]
    if not unknown:
        return None
    return f"upstream sent Content-Encoding {', '.join(unknown)}, which the proxy cannot decode (it asked for identity)"


def _prefixes() -> list[tuple[str, str]]:
    """(sandbox sub-path, endpoint name), longest first so `openai/v1` wins over a shorter prefix."""
    return sorted(((e.sandbox_path, name) for name, e in endpoints().items()), key=lambda p: -len(p[0]))


def classify(rest: str) -> Target | None:
    """The route below `/t/<provider>/<qid>/`: None when it names no endpoint the sandbox serves."""
    for sub, name in _prefixes():
        if rest == sub or rest.startswith(sub + "/"):
            path = rest[len(sub) + 1:] if rest != sub else ""
            kind: Kind
            if name in SEARCH_PROVIDERS:
                kind = "search"
            elif name in FETCHERS:
                kind = "fetch" if path else "other"
            elif name == CHAT.name and path.rstrip("/") in ("chat/completions", "responses"):
                api: Literal["chat", "responses"] = "chat" if path.rstrip("/") == "chat/completions" else "responses"
                return Target(kind="chat", endpoint=name, path=path, api=api)
            elif name == ANTHROPIC.name and path.rstrip("/") == ANTHROPIC_PATH:
                return Target(kind="chat", endpoint=name, path=path, api="anthropic")
            elif name == GEMINI.name and (m := _GEMINI_CALL.fullmatch(path)):
                return Target(kind="chat", endpoint=name, path=path, api="gemini",
                              stream=m.group(2) == "streamGenerateContent", model=m.group(1))
            else:
                kind = "other"
            return Target(kind=kind, endpoint=name, path=path)
    return None


# a Gemini model call below its base URL: v1beta/models/<model>:generateContent or :streamGenerateContent
_GEMINI_CALL = re.compile(r"v1(?:beta|alpha)?/models/([^/:]+):(generateContent|streamGenerateContent)")


def key_env(endpoint: str) -> str:
    return default_key_env(endpoint)


def upstream_key(endpoint: str, live: bool) -> str | None:
    """The proxy's own key for an endpoint: its environment when live, the sandbox's dummy key otherwise."""
    if not live:
        return SANDBOX_KEY
    return os.environ.get(key_env(endpoint), "").strip() or None


def live_base(endpoint: str) -> str:
    """The real endpoint's base URL, or the one its base-URL variable names."""
    e = endpoints()[endpoint]
    return (os.environ.get(e.base_url_env, "").strip() or e.default_base_url).rstrip("/")


def auth_header(endpoint: str, key: str) -> tuple[str, str] | None:
    """The header that carries `key` to `endpoint` (None: it goes in the query, QUERY_KEY); the fetch and OpenAI
    endpoints take `Authorization: Bearer`, Anthropic `x-api-key`, Gemini `x-goog-api-key`, each search provider
    the way its module says."""
    if endpoint == ANTHROPIC.name:
        return "x-api-key", key
    if endpoint == GEMINI.name:
        return "x-goog-api-key", key
    if endpoint not in SEARCH_PROVIDERS:
        return "Authorization", f"Bearer {key}"
    s = spec(endpoint)
    return None if s.key_param else (s.auth_header, s.auth_format.format(key=key))


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


def _key_values(value: Any) -> Iterable[str]:
    """The string values under every key-named field of a JSON document, at any depth."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and is_key_name(k):
                yield from _leaves(v)
            else:
                yield from _key_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from _key_values(v)


def request_secrets(headers: Mapping[str, str], query: Iterable[tuple[str, str]], body: Any, *,
                    own: str | None) -> list[Secret]:
    """Every key one request involves: the proxy's own for its endpoint, every configured key, and whatever the
    agent sent in a credential header, a key-named query parameter or a key-named JSON field (at any depth)."""
    sent: list[str] = []
    for name, value in headers.items():
        if name.lower() in CREDENTIAL_HEADERS or _KEY_HEADER.search(name):
            sent.append(value)
            sent.append(_SCHEME.sub("", value))
            if name.lower() == "cookie":
                sent += [c.split("=", 1)[1] for c in value.split(";") if "=" in c]
    sent += [v for k, v in query if is_key_name(k)]
    sent += list(_key_values(body))
    values = dict.fromkeys(v.strip() for v in sent if len(v.strip()) >= MIN_SENT_KEY)
    return configured_secrets(Secret(own) if own else None, *(Secret(v) for v in values))


def without_keys(value: Any) -> Any:
    """A JSON document without its key-named fields (at any depth): what is stored as a search's params."""
    if isinstance(value, dict):
        return {k: without_keys(v) for k, v in value.items() if not (isinstance(k, str) and is_key_name(k))}
    if isinstance(value, list):
        return [without_keys(v) for v in value]
    return value


async def scrub_stream(chunks: AsyncIterator[bytes], secrets: list[Secret]) -> AsyncIterator[bytes]:
    """`scrub_bytes` for a reply relayed chunk by chunk: the last (longest key - 1) bytes are held back until the
    next chunk, so a key split across two chunks is still found."""
    hold = max((len(s.reveal().encode()) for s in secrets), default=1) - 1
    buf = b""
    async for chunk in chunks:
        buf = scrub_bytes(buf + chunk, *secrets)
        if len(buf) > hold:
            cut = len(buf) - hold
            out, buf = buf[:cut], buf[cut:]
            yield out
    if buf:
        yield scrub_bytes(buf, *secrets)


def epoch_of(raw: str, max_epochs: int) -> int | str:
    """The `X-Searchtrace-Epoch` header as an epoch (1 … max_epochs), or the one line that refuses it."""
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or len(value) > EPOCH_DIGITS or not 1 <= int(value) <= max_epochs:
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"header X-Searchtrace-Epoch: {shown!r} is not an epoch (an integer from 1 to {max_epochs})"
    return int(value)
