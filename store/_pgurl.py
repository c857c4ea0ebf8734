"""PostgreSQL URLs as they may be shown: never with their password (in a log line, an event, an error or a blob).

The password is found without a URL parser that could fail or read the URL otherwise than libpq: whatever lies
between the first `:` of the part after `://` and the last `@` of the URL, and any `password=` query value. A
password holding `/`, `#`, `?` or `@` unescaped is refused before anything connects (libpq would read a part of it
as the host or the port and might print that part)."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from searchtrace.store._errors import BadInput

_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)")


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme and `://`, user, password, host and the rest) of a URL with a password in its user part; else None."""
    head, sep, rest = url.partition("://")
    at = rest.rfind("@")
    if not sep or at < 0:
        return None
    user, colon, password = rest[:at].partition(":")
    return (head + sep, user, password, rest[at + 1:]) if colon else None


def _passwords(url: str) -> set[str]:
    """Every password the URL holds (user part and query), as written and percent-decoded."""
    found = [m.group(2) for m in _QUERY_PASSWORD.finditer(url)]
    parts = _split(url)
    if parts is not None:
        found.append(parts[2])
    return {s for p in found for s in (p, unquote(p)) if s}


def redacted(url: str) -> str:
    """The URL as it may be shown: every password replaced by ***."""
    parts = _split(url)
    if parts is not None:
        url = f"{parts[0]}{parts[1]}:***@{parts[3]}"
    return _QUERY_PASSWORD.sub(r"\1***", url)


def scrub(text: str, url: str) -> str:
    """`text` without the URL's password (as written and percent-decoded) and with the URL shown redacted."""
    text = text.replace(url, redacted(url))
    for secret in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def check_url(url: str) -> str:
    """A PostgreSQL URL, or BadInput naming what is wrong (without its password)."""
    shown = redacted(url)
    if not url.startswith(("postgresql://", "postgres://")):
        raise BadInput(f"{shown}: not a PostgreSQL URL (postgresql://user@host/db or "
                       "postgresql:///db?host=/socket/dir)")
    parts = _split(url)
    if parts is not None and any(c in parts[2] for c in "/#?@"):
        raise BadInput(f"{shown}: the password holds / # ? or @ unescaped; write them %2F %23 %3F %40")
    try:
        split = urlsplit(url)
        split.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise BadInput(f"{shown}: not a valid URL ({scrub(str(exc), url)})") from None
    return url
