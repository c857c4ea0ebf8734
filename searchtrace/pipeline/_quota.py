"""docs/how-to/quotas.md, one rate limit across machines: one named Ray actor per quota domain hands out the domain's
send times (adapters.Slots: whole tokens about 1/R apart) to every worker that asks, in the order asked; each
worker's limiter sends only in slots granted to it (adapters.RateLimiter.granted_by).

No worker holds a share of the rate: a worker asks for as many slots as it has calls waiting (at most 50 ms of the
domain's time at once), so N workers far above R still see at most R in any 1-s window where the calls arrive, and a
dead worker's unused slots simply pass. The 429/Retry-After handling of every call stays the backstop. Ray is
imported here only.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from searchtrace.adapters import RateLimiter, Slots
from searchtrace.store import BadInput

NAMESPACE = "searchtrace"  # the Ray namespace of every named actor of a fan-out
PAUSED_RATE = 1e-6  # a limiter no longer granted slots: one call per ~11 days, i.e. none (a rate must be > 0)


def resource_of(domain: str) -> str:
    """The Ray custom resource a machine declares when it holds the keys of a quota domain."""
    return f"quota:{domain}"


def actor_name(domain: str) -> str:
    return f"searchtrace-quota:{domain}"


class QuotaLedger:
    """The send times of one quota domain (the body of its Ray actor; plain Python, calls are serial)."""

    def __init__(self, domain: str, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.domain, self._slots = domain, Slots(rate, clock)
        self.granted: dict[str, int] = {}  # worker -> slots handed out (what each one was given)

    @property
    def rate(self) -> float:
        return self._slots.rate

    def configure(self, rate: float) -> float:
        """The domain's rate R from now on (the coordinator that plans a run sets it); returns it."""
        return self._slots.configure(rate)

    def take(self, worker: str, n: int) -> list[float]:
        """Up to `n` of the domain's next free slots for `worker`, as delays from now (adapters.Slots.take)."""
        got = self._slots.take(n)
        self.granted[worker] = self.granted.get(worker, 0) + len(got)
        return got


def quota_actor(domain: str, rate: float | None = None) -> Any:
    """The domain's named ledger actor (created on first use, detached: every driver of the cluster shares it);
    `rate` (re)sets R."""
    import ray

    ledger: Any = ray.remote(QuotaLedger)  # Ray's handle types do not carry remote methods
    handle = ledger.options(
        name=actor_name(domain), namespace=NAMESPACE, get_if_exists=True, lifetime="detached", num_cpus=0,
    ).remote(domain, rate if rate is not None else 1.0)
    if rate is not None:
        ray.get(handle.configure.remote(rate))
    return handle


def domain_rates(endpoints: Sequence[tuple[str, str | None, float]]) -> dict[str, float]:
    """Each quota domain's rate R from (where, quota, rps) of a config's endpoints: the endpoints naming a domain
    must agree on its rps (the domain's total), else BadInput naming both."""
    rates: dict[str, tuple[float, str]] = {}
    for where, quota, rps in endpoints:
        if not quota:
            continue
        if rps <= 0:
            raise BadInput(f"{where}.quota = {quota!r}: a quota domain needs a rate (rps > 0), its total across machines")
        seen = rates.setdefault(quota, (rps, where))
        if seen[0] != rps:
            raise BadInput(f"quota {quota!r}: {seen[1]}.rps = {seen[0]} but {where}.rps = {rps}; the endpoints of a "
                           "domain share one rate, set the same rps on each")
    return {q: r for q, (r, _) in rates.items()}


@asynccontextmanager
async def hold_share(ledger: Any, worker: str, limiter: RateLimiter) -> AsyncIterator[None]:
    """Paces `limiter` by the slots the domain's ledger grants `worker` while the block runs; after it, the limiter
    sends nothing more (it never falls back to its own rate)."""

    async def take(n: int) -> list[float]:
        return list(await ledger.take.remote(worker, n))

    limiter.granted_by(take)
    try:
        yield
    finally:
        limiter.granted_by(None)
        limiter.set_rate(PAUSED_RATE)
