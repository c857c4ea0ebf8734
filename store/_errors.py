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
