"""The DuckDB event log: append-only events, content-addressed blobs, hash chain.

Public surface (imported lazily, so reaching `store.errors` from the command line loads neither DuckDB nor Arrow):
- `BadInput`, `ConcurrencyError`, `NotAStore`, `ReadOnlyViolation`, `StoreError`, `StoreLocked` (store.errors)
- `NewEvent`, `Payload`, `StoredEvent`, `decode_payload`, `encode_payload`, `stable_event_id`, `type_of`
  (store.events)
- `EventLog` (store.log); `Writer`, `open_writer` (store.writer)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
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

_EXPORTS = {
    "BadInput": "searchtrace.store.errors",
    "ConcurrencyError": "searchtrace.store.errors",
    "NotAStore": "searchtrace.store.errors",
    "ReadOnlyViolation": "searchtrace.store.errors",
    "StoreError": "searchtrace.store.errors",
    "StoreLocked": "searchtrace.store.errors",
    "NewEvent": "searchtrace.store.events",
    "Payload": "searchtrace.store.events",
    "StoredEvent": "searchtrace.store.events",
    "decode_payload": "searchtrace.store.events",
    "encode_payload": "searchtrace.store.events",
    "stable_event_id": "searchtrace.store.events",
    "type_of": "searchtrace.store.events",
    "EventLog": "searchtrace.store.log",
    "Writer": "searchtrace.store.writer",
    "open_writer": "searchtrace.store.writer",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'searchtrace.store' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
