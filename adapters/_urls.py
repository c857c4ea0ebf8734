"""URL normalisation of docs/concepts/protocol.md: the one key for caching, de-duplication and cross-provider comparison."""

from __future__ import annotations

import functools
import re
from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": "80", "https": "443"}
_DROP = {"gclid", "fbclid"}


def _split_host_port(netloc: str) -> tuple[str, str]:
    """Host and port of a netloc without user information; IPv6 literals keep their brackets."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return netloc, ""
        rest = netloc[end + 1 :]
        return netloc[: end + 1], rest[1:] if rest.startswith(":") else ""
    if ":" in netloc:
        host, port = netloc.rsplit(":", 1)
        return host, port
    return netloc, ""


def _query(query: str) -> str:
    """Split on `&`, each at its first `=`; drop utm_* / gclid / fbclid by name; sort by (name, value) as strings."""
    if not query:
        return ""
    kept: list[tuple[str, str, str]] = []
    for p in query.split("&"):
        name, _, value = p.partition("=")  # a parameter without "=" has the value "" and stays as written
        if name.startswith("utm_") or name in _DROP:
            continue
        kept.append((name, value, p))
    kept.sort()  # (name, value), then the raw text, so "a" and "a=" order the same whatever came first
    return "&".join(p for _, _, p in kept)


def normalize_url(url: str) -> str:
    """Apply docs/concepts/protocol.md steps in their order, repeated until nothing changes, so the result is idempotent.

    One pass suffices for any real URL; a second only matters for pathological input (e.g. whitespace that
    ends up at the end once a dropped parameter is gone). An unparseable URL comes back only stripped.
    """
    out = _normalize_once(url)
    for _ in range(8):
        again = _normalize_once(out)
        if again == out:
            break
        out = again
    return out


def _normalize_once(url: str) -> str:
    s = url.strip()
    try:
        parts = urlsplit(s)
    except ValueError:
        return s
    scheme = parts.scheme.lower()
    netloc = parts.netloc.rsplit("@", 1)[-1]
    host, port = _split_host_port(netloc)
    host = host.lower()
    if port and _DEFAULT_PORTS.get(scheme) == port:
        port = ""
    netloc = f"{host}:{port}" if port else host
    path = parts.path or "/"
    # Normalisation (docs/concepts/protocol.md): strip one trailing "/" from a path longer than "/". Stripping every trailing "/" gives the same
    # result for the usual single slash and keeps the function idempotent for "/a//".
    if len(path) > 1:
        path = path.rstrip("/") or "/"
    if not netloc and path.startswith("//"):
        return s  # no authority but a path that would read as one: leave it alone rather than invent a host
    return urlunsplit((scheme, netloc, path, _query(parts.query), ""))


def domain_of(url: str) -> str:
    """Host of a URL, lowercase, without port or user information."""
    try:
        netloc = urlsplit(url.strip()).netloc.rsplit("@", 1)[-1]
    except ValueError:
        return ""
    return _split_host_port(netloc)[0].lower()


def base_url_problem(url: str) -> str | None:
    """Why a configured base URL cannot be used (None when it can); never repeats a password it holds.

    User information (`user:password@`) is refused rather than stripped: it would otherwise be stored in
    `run.started` / `judge.started`, exported and sent; keys belong in the key variable (`key_env`).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "not a usable URL (its host part cannot be parsed)"
    if "@" in parts.netloc:
        shown = urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))
        return f"{shown!r} holds a user name or password; remove it (keys come from the key variable)"
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        return "holds a control character"
    try:
        _ = parts.port  # a port that is not a number raises here (its text is not repeated: it may be a secret)
    except ValueError:
        return "not a usable URL (its port is not a number)"
    return None


# A URL in docs/concepts/protocol.md normal form but for tracking parameters: lowercase http(s) scheme and host, no port or user,
# a path without a trailing "/" (or none, or just "/"), no fragment, no character urlsplit would strip or split
# on, and a query (if any) of only utm_* / gclid / fbclid parameters. normalize_url drops that query and adds
# the "/" of an empty path, nothing else, so such a URL needs no parsing.
_TRACKER = r"(?:utm_[A-Za-z0-9._~%-]*|gclid|fbclid)(?:=[A-Za-z0-9._~%-]*)?"
_PLAIN = re.compile(
    r"(https?)://([a-z0-9-]+(?:\.[a-z0-9-]+)*)(/(?:[A-Za-z0-9._~%!$&'()*+,;=:@/-]*[A-Za-z0-9._~%!$&'()*+,;=:@-])?)?"
    rf"(\?{_TRACKER}(?:&{_TRACKER})*)?"
)


@functools.lru_cache(maxsize=1 << 16)
def norm_url(url: str) -> str:
    """normalize_url, memoised (a trajectory names its URLs several times), parse-free when nearly normal."""
    m = _PLAIN.fullmatch(url)
    if m is None:
        return normalize_url(url)
    base = url if m.group(4) is None else url[: m.start(4)]
    return base if m.group(3) else base + "/"


@functools.lru_cache(maxsize=1 << 16)
def url_domain(url: str) -> str:
    """domain_of, memoised, parse-free for a URL in normal form (its host as written)."""
    m = _PLAIN.fullmatch(url)
    return m.group(2) if m is not None else domain_of(url)
