"""The DuckDB event log: append-only events, content-addressed blobs, hash chain."""

from searchtrace.store.errors import (
    BadInput,
    ConcurrencyError,
    NotAStore,
    ReadOnlyViolation,
    StoreError,
    StoreLocked,
)
from searchtrace.store.events import (
    NewEvent,
    Payload,
    StoredEvent,
    decode_payload,
    encode_payload,
    stable_event_id,
    type_of,
)
from searchtrace.store.log import EventLog
from searchtrace.store.writer import Writer, open_writer

__all__ = [
    "BadInput",
    "ConcurrencyError",
    "EventLog",
    "NewEvent",
    "NotAStore",
    "Payload",
    "ReadOnlyViolation",
    "StoreError",
    "StoreLocked",
    "StoredEvent",
    "Writer",
    "decode_payload",
    "encode_payload",
    "open_writer",
    "stable_event_id",
    "type_of",
]
