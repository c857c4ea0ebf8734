"""Group commit for many anyio producers: one writer task, one transaction per flush, ack after commit.

Flushes are pipelined: while one commits on the log's commit thread, the next is prepared (encoded, given its
positions, hash-chained) on a worker thread, continuing from the one before; the commit thread runs queued
flushes back to back. If a commit fails, the flushes prepared after it are refused as stale and prepared again.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from searchtrace.store._append import Result, Stale
from searchtrace.store._blobs import digest
from searchtrace.store._events import NewEvent
from searchtrace.store._log import EventLog

_Submitted = Future[list[Result]] | BaseException
MAX_FLUSH_EVENTS = 20_000  # open_writer's default: the most events one flush (one transaction) holds


@dataclass
class _Request:
    events: Sequence[NewEvent]
    expected: Mapping[str, int] | None
    blobs: Sequence[bytes]
    done: anyio.Event = field(default_factory=anyio.Event)
    result: list[int] | BaseException | None = None


class Writer:
    """Producers await `append`; the writer drains the queue into one transaction per flush."""

    def __init__(self, log: EventLog, max_events: int, max_delay: float) -> None:
        self.log = log
        self.max_events = max_events
        self.max_delay = max_delay
        send, recv = anyio.create_memory_object_stream[_Request](math.inf)
        self._send: MemoryObjectSendStream[_Request] = send
        self._recv: MemoryObjectReceiveStream[_Request] = recv
        self.commits = 0

    async def append(
        self,
        events: Sequence[NewEvent],
        *,
        expected: Mapping[str, int] | None = None,
        blobs: Sequence[bytes] = (),
    ) -> list[int]:
        """Returns once the events (and blobs) are committed; raises ConcurrencyError on a stale expectation."""
        req = _Request(events, expected, blobs)
        await self._send.send(req)
        await req.done.wait()
        if isinstance(req.result, BaseException):
            raise req.result
        assert req.result is not None
        return req.result

    async def put_blob(self, data: bytes) -> str:
        """Stores the blob (once per content) and returns its sha256 after commit."""
        await self.append((), blobs=(data,))
        return digest(data)

    async def _run(self) -> None:
        """Prepare flush N+1 (encode, positions, hash chain) while flush N commits on the log's commit thread."""
        send, recv = anyio.create_memory_object_stream[tuple[list[_Request], _Submitted]](1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._ack_loop, recv)
            async with send, self._recv:
                async for first in self._recv:
                    batch = [first]
                    n = self._drain(batch, len(first.events))
                    if n < self.max_events and self.max_delay > 0:
                        await anyio.sleep(self.max_delay)  # let concurrent producers join this commit
                        n = self._drain(batch, n)
                    await send.send((batch, await self._submit(batch)))

    async def _submit(self, batch: list[_Request]) -> _Submitted:
        """Prepare the flush in a worker thread and queue its commit; an error is handed on to its producers."""
        groups = [(r.events, r.expected) for r in batch]
        blobs = [b for r in batch for b in r.blobs]
        log = self.log
        try:
            return await anyio.to_thread.run_sync(lambda: log.submit_prepared(log.prepare_groups(groups, blobs=blobs)))
        except Exception as exc:
            return exc

    async def _ack_loop(self, recv: MemoryObjectReceiveStream[tuple[list[_Request], _Submitted]]) -> None:
        async with recv:
            async for batch, submitted in recv:
                await self._ack(batch, submitted)

    async def _ack(self, batch: list[_Request], submitted: _Submitted) -> None:
        """Wait for the flush's commit (in order) and wake its producers; prepare it again if it went stale."""
        try:
            while True:
                if isinstance(submitted, BaseException):
                    raise submitted
                try:
                    results = await anyio.to_thread.run_sync(submitted.result)
                    break
                except Stale:  # the flush before this one failed: build this one again on the committed head
                    submitted = await self._submit(batch)
        except BaseException as exc:  # the whole transaction rolled back: every producer learns it
            for r in batch:
                r.result = exc
                r.done.set()
            if not isinstance(exc, Exception):
                raise
            return
        self.commits += 1
        for r, res in zip(batch, results, strict=True):
            r.result = res
            r.done.set()

    def _drain(self, batch: list[_Request], n: int) -> int:
        while n < self.max_events:
            try:
                req = self._recv.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
            batch.append(req)
            n += len(req.events)
        return n

    async def aclose(self) -> None:
        await self._send.aclose()


@asynccontextmanager
async def open_writer(
    log: EventLog, *, max_events: int = MAX_FLUSH_EVENTS, max_delay: float = 0.002
) -> AsyncIterator[Writer]:
    """Run the writer task for the duration of the block; pending appends are flushed on exit."""
    writer = Writer(log, max_events, max_delay)
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer._run)
        try:
            yield writer
        finally:
            await writer.aclose()
