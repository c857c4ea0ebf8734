"""Deterministic synthetic events shaped like a recorded search session (~600-byte search.result payloads)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

from searchtrace.store import NewEvent, SearchCalled, SearchResult

_WORDS = (
    "evidence surface provider snippet ranking answer question retrieval freshness topic agent judge "
    "document page fetch index crawler metadata domain result query session oracle gold support"
).split()


def _text(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n_chars]


def events(n: int, *, seed: int = 42, run_id: str = "bench-run", results_per_call: int = 10) -> Iterator[NewEvent]:
    """n events: streams of one search.called followed by its results, ~600 bytes of JSON per result."""
    rng = random.Random(seed)
    made = 0
    stream = 0
    while made < n:
        sid = f"traj-{stream:07d}"
        call_id = f"c{stream}"
        yield NewEvent(
            stream_id=sid,
            run_id=run_id,
            payload=SearchCalled(call_id=call_id, iteration=0, query=_text(rng, 60), provider="brave"),
            event_id=uuid.UUID(int=rng.getrandbits(128), version=4),
        )
        made += 1
        for rank in range(1, results_per_call + 1):
            if made >= n:
                break
            host = f"www.{rng.choice(_WORDS)}{rng.randrange(1000)}.org"
            path = "/" + "/".join(rng.choice(_WORDS) for _ in range(3))
            url = f"https://{host}{path}"
            yield NewEvent(
                stream_id=sid,
                run_id=run_id,
                payload=SearchResult(
                    call_id=call_id,
                    doc_id=f"d{rank}",
                    rank=rank,
                    title=_text(rng, 70),
                    url=url,
                    url_normalized=url,
                    domain=host,
                    snippet=_text(rng, 300),
                    metadata={"age": "2 days ago", "language": "en"},
                ),
                event_id=uuid.UUID(int=rng.getrandbits(128), version=4),
            )
            made += 1
        stream += 1


def batches(n: int, size: int, *, seed: int = 42) -> Iterator[list[NewEvent]]:
    """The same events as `events(n)`, cut into lists of `size`."""
    batch: list[NewEvent] = []
    for ev in events(n, seed=seed):
        batch.append(ev)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
