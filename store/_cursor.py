"""What readers need of a DuckDB cursor, as a type of its own: a DuckDB connection and a read session on the process
that holds the file (store._readserver.RemoteCursor) both are one, so read code takes either without a cast."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    """`execute` then `fetch*` / `description`, a new independent cursor, `close`; nothing else (no register,
    no Arrow), so whatever satisfies it can be served over the read socket."""

    @property
    def description(self) -> Sequence[tuple[Any, ...]] | None: ...

    def execute(self, query: str, parameters: object = None, /) -> Cursor: ...

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def fetchmany(self, size: int = 1, /) -> list[tuple[Any, ...]]: ...

    def fetchall(self) -> list[tuple[Any, ...]]: ...

    def cursor(self) -> Cursor: ...

    def close(self) -> None: ...
