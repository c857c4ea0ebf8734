"""The DuckDB event log: append-only events, content-addressed blobs, hash chain.

Public surface (imported lazily, so reaching `store._errors` from the command line loads neither DuckDB nor Arrow):
- `BadInput`, `ConcurrencyError`, `NotAStore`, `ReadOnlyViolation`, `StoreError`, `StoreLocked` (store._errors)
- `NewEvent`, `Payload`, `StoredEvent`, `decode_payload`, `encode_payload`, `stable_event_id`, `type_of`
  (store._events)
- `EventLog` (store._log); `Writer`, `open_writer` (store._writer)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    import searchtrace.store._blobs as blobs
    from searchtrace.store._blobs import digest
    from searchtrace.store._cursor import Cursor
    from searchtrace.store._errors import (
        BadInput,
        ConcurrencyError,
        NotAStore,
        ReadOnlyViolation,
        StoreError,
        StoreLocked,
    )
    from searchtrace.store._events import (
        AnswerFinal,
        AuditAnswer,
        AuditCase,
        AuditDesign,
        AuditLabel,
        AuditStratum,
        CallFailed,
        CallRetried,
        DatasetQuestion,
        FetchCalled,
        FetchCompleted,
        FetchStatus,
        JudgeItemRef,
        JudgeStarted,
        JudgeVerdict,
        Labels,
        ModelResponded,
        NewEvent,
        Payload,
        RunFinished,
        RunStarted,
        SearchCalled,
        SearchCompleted,
        SearchResult,
        SearchStatus,
        StoredEvent,
        ToolCall,
        ToolRefused,
        TrajectoryFinished,
        TrajectoryReason,
        TrajectoryStarted,
        Usage,
        Verdict,
        decode_payload,
        encode_payload,
        epoch_of,
        judge_stream,
        stable_event_id,
        surface_chars,
        trajectory_stream,
        type_of,
    )
    from searchtrace.store._interrupt import close_when_free, interruptible, time_limit
    from searchtrace.store._log import EventLog
    from searchtrace.store._readonly import open_read_only, read_statements
    from searchtrace.store._readserver import (
        TIMEOUT_S,
        ReadsEnded,
        ReadServer,
        RemoteStore,
        open_remote,
        read_connection,
        while_held,
    )
    from searchtrace.store._schema import DDL, OFFLINE, first_line, require_database
    from searchtrace.store._tuning import bulk_appends
    from searchtrace.store._verify import verify
    from searchtrace.store._writer import Writer, open_writer


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "digest": "searchtrace.store._blobs",
    "Cursor": "searchtrace.store._cursor",
    "BadInput": "searchtrace.store._errors",
    "ConcurrencyError": "searchtrace.store._errors",
    "NotAStore": "searchtrace.store._errors",
    "ReadOnlyViolation": "searchtrace.store._errors",
    "StoreError": "searchtrace.store._errors",
    "StoreLocked": "searchtrace.store._errors",
    "AnswerFinal": "searchtrace.store._events",
    "AuditAnswer": "searchtrace.store._events",
    "AuditCase": "searchtrace.store._events",
    "AuditDesign": "searchtrace.store._events",
    "AuditLabel": "searchtrace.store._events",
    "AuditStratum": "searchtrace.store._events",
    "CallFailed": "searchtrace.store._events",
    "CallRetried": "searchtrace.store._events",
    "DatasetQuestion": "searchtrace.store._events",
    "FetchCalled": "searchtrace.store._events",
    "FetchCompleted": "searchtrace.store._events",
    "FetchStatus": "searchtrace.store._events",
    "JudgeItemRef": "searchtrace.store._events",
    "JudgeStarted": "searchtrace.store._events",
    "JudgeVerdict": "searchtrace.store._events",
    "Labels": "searchtrace.store._events",
    "ModelResponded": "searchtrace.store._events",
    "NewEvent": "searchtrace.store._events",
    "Payload": "searchtrace.store._events",
    "RunFinished": "searchtrace.store._events",
    "RunStarted": "searchtrace.store._events",
    "SearchCalled": "searchtrace.store._events",
    "SearchCompleted": "searchtrace.store._events",
    "SearchResult": "searchtrace.store._events",
    "SearchStatus": "searchtrace.store._events",
    "StoredEvent": "searchtrace.store._events",
    "ToolCall": "searchtrace.store._events",
    "ToolRefused": "searchtrace.store._events",
    "TrajectoryFinished": "searchtrace.store._events",
    "TrajectoryReason": "searchtrace.store._events",
    "TrajectoryStarted": "searchtrace.store._events",
    "Usage": "searchtrace.store._events",
    "Verdict": "searchtrace.store._events",
    "decode_payload": "searchtrace.store._events",
    "encode_payload": "searchtrace.store._events",
    "epoch_of": "searchtrace.store._events",
    "judge_stream": "searchtrace.store._events",
    "stable_event_id": "searchtrace.store._events",
    "surface_chars": "searchtrace.store._events",
    "trajectory_stream": "searchtrace.store._events",
    "type_of": "searchtrace.store._events",
    "close_when_free": "searchtrace.store._interrupt",
    "interruptible": "searchtrace.store._interrupt",
    "time_limit": "searchtrace.store._interrupt",
    "EventLog": "searchtrace.store._log",
    "open_read_only": "searchtrace.store._readonly",
    "read_statements": "searchtrace.store._readonly",
    "ReadServer": "searchtrace.store._readserver",
    "ReadsEnded": "searchtrace.store._readserver",
    "RemoteStore": "searchtrace.store._readserver",
    "TIMEOUT_S": "searchtrace.store._readserver",
    "open_remote": "searchtrace.store._readserver",
    "read_connection": "searchtrace.store._readserver",
    "while_held": "searchtrace.store._readserver",
    "DDL": "searchtrace.store._schema",
    "OFFLINE": "searchtrace.store._schema",
    "first_line": "searchtrace.store._schema",
    "require_database": "searchtrace.store._schema",
    "bulk_appends": "searchtrace.store._tuning",
    "verify": "searchtrace.store._verify",
    "Writer": "searchtrace.store._writer",
    "open_writer": "searchtrace.store._writer",
}
# modules exported whole, as namespaces (`blobs.get(...)`)
_MODULES: dict[str, str] = {
    "blobs": "searchtrace.store._blobs",
}

__all__ = [
    "AnswerFinal",
    "AuditAnswer",
    "AuditCase",
    "AuditDesign",
    "AuditLabel",
    "AuditStratum",
    "BadInput",
    "CallFailed",
    "CallRetried",
    "ConcurrencyError",
    "Cursor",
    "DDL",
    "DatasetQuestion",
    "EventLog",
    "FetchCalled",
    "FetchCompleted",
    "FetchStatus",
    "JudgeItemRef",
    "JudgeStarted",
    "JudgeVerdict",
    "Labels",
    "ModelResponded",
    "NewEvent",
    "NotAStore",
    "OFFLINE",
    "Payload",
    "ReadOnlyViolation",
    "ReadServer",
    "ReadsEnded",
    "RemoteStore",
    "RunFinished",
    "RunStarted",
    "SearchCalled",
    "SearchCompleted",
    "SearchResult",
    "SearchStatus",
    "StoreError",
    "StoreLocked",
    "StoredEvent",
    "TIMEOUT_S",
    "ToolCall",
    "ToolRefused",
    "TrajectoryFinished",
    "TrajectoryReason",
    "TrajectoryStarted",
    "Usage",
    "Verdict",
    "Writer",
    "blobs",
    "bulk_appends",
    "close_when_free",
    "decode_payload",
    "digest",
    "encode_payload",
    "epoch_of",
    "first_line",
    "interruptible",
    "judge_stream",
    "open_read_only",
    "open_remote",
    "open_writer",
    "read_connection",
    "read_statements",
    "require_database",
    "stable_event_id",
    "surface_chars",
    "time_limit",
    "trajectory_stream",
    "type_of",
    "verify",
    "while_held",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _MODULES)
