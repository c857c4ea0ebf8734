"""PostgreSQL URLs as they may be shown: never with their password (in a log line, an event, an error or a blob)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from searchtrace.store._errors import BadInput


def redacted(url: str) -> str:
    """The URL as it may be shown: its password replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def scrub(text: str, url: str) -> str:
    """`text` without the URL's password (as written and percent-decoded) and with the URL shown redacted."""
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    text = text.replace(url, redacted(url))
    for secret in {password, unquote(password)} if password else set():
        if secret:
            text = text.replace(secret, "***")
    return text


def check_url(url: str) -> str:
    """A PostgreSQL URL, or BadInput naming what is wrong (without its password)."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise BadInput(f"{scrub(url, url)}: not a PostgreSQL URL (postgresql://user@host/db or "
                       "postgresql:///db?host=/socket/dir)")
    return url
