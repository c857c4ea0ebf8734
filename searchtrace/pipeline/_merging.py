"""`searchtrace merge SEG… --into DB` (docs/how-to/scale.md): bring segments recorded apart into one store."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from searchtrace.store import EventLog


class SegmentMerged(msgspec.Struct, kw_only=True):
    """One segment's part of a merge."""

    path: str
    segment_id: str
    host: str
    events: int  # events the segment holds
    appended: int  # of them new to the target
    blobs: int  # blobs copied (digests the target did not have)


class MergeResult(msgspec.Struct, kw_only=True):
    into: str
    segments: list[SegmentMerged]
    appended: int
    head: int  # the target's last position after the merge
    elapsed_s: float


def merge(segments: Sequence[Path], into: Path) -> MergeResult:
    """Append every segment's events not in `into` (created when missing); EventConflict appends nothing."""
    t0 = time.perf_counter()
    with EventLog(into) as log:
        merged = log.merge(segments)
        head = log.head
    parts = [SegmentMerged(path=str(m.segment.path), segment_id=m.segment.segment_id, host=m.segment.host,
                           events=m.events, appended=m.appended, blobs=m.blobs) for m in merged]
    return MergeResult(into=str(into), segments=parts, appended=sum(p.appended for p in parts), head=head,
                       elapsed_s=time.perf_counter() - t0)
