"""Deterministic synthetic events shaped like a recorded search session (~600-byte search.result payloads)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

from searchtrace.adapters import SearchHit
from searchtrace.engine import Builder
from searchtrace.store import NewEvent

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
    """n events: streams of one search.called followed by its results, ~600 bytes of JSON per result.

    Built through the trajectory `Builder` as a recording builds them; each stream is kept to the call and its
    results (the `search.completed` the builder adds is left out), so the rows stay search.result-sized."""
    rng = random.Random(seed)
    made = 0
    stream = 0
    while made < n:
        sid = f"traj-{stream:07d}"
        query = _text(rng, 60)
        ids = [uuid.UUID(int=rng.getrandbits(128), version=4)]
        hits: list[SearchHit] = []
        for rank in range(1, min(results_per_call, n - made - 1) + 1):
            host = f"www.{rng.choice(_WORDS)}{rng.randrange(1000)}.org"
            path = "/" + "/".join(rng.choice(_WORDS) for _ in range(3))
            hits.append(SearchHit(rank=rank, title=_text(rng, 70), url=f"https://{host}{path}", domain=host,
                                  snippet=_text(rng, 300), metadata={"age": "2 days ago", "language": "en"}))
            ids.append(uuid.UUID(int=rng.getrandbits(128), version=4))
        b = Builder(sid)
        b.search(call_id=f"c{stream}", iteration=0, query=query, provider="brave", status="ok", hits=hits,
                 latency_ms=0.0, doc_ids=[f"d{h.rank}" for h in hits])
        payloads, _ = b.take()
        for payload, event_id in zip(payloads, ids, strict=False):  # strict=False: the completion is left out
            yield NewEvent(stream_id=sid, run_id=run_id, payload=payload, event_id=event_id)
        made += len(ids)
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
