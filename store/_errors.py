"""Errors the store raises; each message is one line that says what and where."""


class StoreError(Exception):
    """Base of store errors (the command line maps them to exit 2)."""


class ConcurrencyError(StoreError):
    """An expected stream sequence no longer holds; nothing of the batch was written."""


class StoreLocked(StoreError):
    """Another process holds the DuckDB file."""


class NotAStore(StoreError):
    """The file is not a searchtrace store."""


class ReadOnlyViolation(StoreError):
    """A statement through the read-only SQL path tried to write."""


class BadInput(Exception):
    """Bad usage or bad input anywhere in the project: one line naming what and where; exit code 2."""


class EventConflict(StoreError):
    """An event_id already stored (or appended twice) with other bytes: nothing of its batch was written."""


SHOWN_CHARS = 80  # a user value quoted in an error line: at most this many characters of it
LINE_CHARS = 1000  # an error line: at most this many characters


def shown(value: object, limit: int = SHOWN_CHARS, *, quoted: bool = True) -> str:
    """A user value as an error line quotes it (repr for text, unless not `quoted`): whole when short, else its
    start and its length, so a hostile value (a 100,000-character key, a 64 MiB cell) never makes a line of its size."""
    text = repr(value) if isinstance(value, str) and quoted else str(value)
    if len(text) <= limit:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else f"{len(text):,} characters shown"
    return f"{text[:limit]}… ({size})"


def one_line(text: object, limit: int = 200) -> str:
    """A remote or library message as one line of an error or event: whitespace runs as one space, cut to `limit`."""
    return " ".join(str(text).split())[:limit]


def bounded_line(message: str, limit: int = LINE_CHARS) -> str:
    """An error line cut to `limit` characters (the net under `shown`, for a value quoted whole somewhere)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message) - limit:,} more characters left out)"
