"""Group commit through open_writer: many anyio producers, gap-free positions, per-stream order, stale groups."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from searchtrace.store import ConcurrencyError, EventLog, open_writer, verify
from tests.store.store_support import ev

pytestmark = pytest.mark.anyio

PRODUCERS = 50
PER_PRODUCER = 2_000
PER_CALL = 40


async def test_fifty_producers_two_thousand_events_each(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    acked: dict[int, list[int]] = {}
    with EventLog(path) as log:
        async with open_writer(log, max_delay=0.001) as writer:

            async def producer(k: int) -> None:
                stream = f"p{k}"
                mine: list[int] = []
                for start in range(0, PER_PRODUCER, PER_CALL):
                    batch = [ev(stream, i) for i in range(start, start + PER_CALL)]
                    # each producer owns its stream, so its expectation always holds
                    mine += await writer.append(batch, expected={stream: start - 1})
                acked[k] = mine

            async with anyio.create_task_group() as tg:
                for k in range(PRODUCERS):
                    tg.start_soon(producer, k)
            commits = writer.commits
        n = PRODUCERS * PER_PRODUCER
        assert log.head == n
        assert sorted(p for ps in acked.values() for p in ps) == list(range(1, n + 1))
        assert commits < n // PER_CALL  # producers really shared transactions
        for k, positions in acked.items():
            assert positions == sorted(positions)
            stored = list(log.read(stream_id=f"p{k}"))
            assert [e.position for e in stored] == positions
            assert [e.stream_seq for e in stored] == list(range(PER_PRODUCER))
            assert [e.payload.iteration for e in stored] == list(range(PER_PRODUCER))  # type: ignore[union-attr]
        report = verify(log.cursor())
        assert report.ok and report.events == n and report.streams == PRODUCERS


async def test_stale_producer_fails_alone_in_a_shared_commit(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        log.append([ev("shared", 0)])
        outcomes: dict[str, object] = {}
        async with open_writer(log, max_delay=0.05) as writer:  # a long window: all three join one commit

            async def put(name: str, events: list, expected: dict[str, int] | None) -> None:  # type: ignore[type-arg]
                try:
                    outcomes[name] = await writer.append(events, expected=expected)
                except ConcurrencyError as exc:
                    outcomes[name] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(put, "first", [ev("shared", 1), ev("shared", 2)], {"shared": 0})
                await anyio.sleep(0.005)
                tg.start_soon(put, "second", [ev("shared", 9), ev("mine", 0)], {"shared": 0})
                await anyio.sleep(0.005)
                tg.start_soon(put, "other", [ev("other", 0)], None)
            assert writer.commits == 1
        assert outcomes["first"] == [2, 3]
        assert isinstance(outcomes["second"], ConcurrencyError)
        assert outcomes["other"] == [4]
        assert [e.payload.iteration for e in log.read(stream_id="shared")] == [0, 1, 2]  # type: ignore[union-attr]
        assert log.stream_head("mine") == -1
        assert verify(log.cursor()).ok


async def test_writer_blobs_and_idempotent_retry(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    with EventLog(path) as log:
        async with open_writer(log) as writer:
            digest = await writer.put_blob(b"page body")
            batch = [ev("a", i) for i in range(3)]
            assert await writer.append(batch, blobs=[b"page body"]) == [1, 2, 3]
            assert await writer.append(batch) == [0, 0, 0]  # a retried batch never duplicates
        assert log.get_blob(digest) == b"page body"
        assert log.head == 3
