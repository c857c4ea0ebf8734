"""docs/how-to/scale.md, one rate limit across machines: one named Ray actor per quota domain leases each worker a share of the
domain's rate R, and each worker's own limiter (adapters.RateLimiter) paces at its share.

The ledger never hands out more than R in all: a worker's share is R / (live holders), cut to what the other
holders' unexpired leases leave, so a newcomer starts at what is free and the others shrink to make room at their
next renewal (one second). A lease lasts `LEASE_TTL_S` from the time it was asked for: a dead worker's share lapses
then, and a worker that could not renew in time pauses its limiter (the worker measures from its own send time,
which is never later than the ledger's receipt, so it stops before the ledger gives its share away). Each worker's
bucket admits at most its share per second plus its burst (share/10 by default), so in any 1-s window the domain
sees at most 1.1 R; the 429/Retry-After handling of every call stays the backstop. Ray is imported here only.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from searchtrace.adapters import RateLimiter
from searchtrace.store import BadInput

NAMESPACE = "searchtrace"  # the Ray namespace of every named actor of a fan-out
RENEW_S = 1.0  # a worker renews its lease every second
LEASE_TTL_S = 3.0  # a lease not renewed for this long lapses (the worker pauses, the ledger frees its share)
PAUSED_RATE = 1e-6  # a worker without a share: one call per ~11 days, i.e. none (a RateLimiter's rate must be > 0)


def resource_of(domain: str) -> str:
    """The Ray custom resource a machine declares when it holds the keys of a quota domain."""
    return f"quota:{domain}"


def actor_name(domain: str) -> str:
    return f"searchtrace-quota:{domain}"


class QuotaLedger:
    """The shares of one quota domain (the body of its Ray actor; plain Python, calls are serial)."""

    def __init__(self, domain: str, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.domain, self.rate, self._clock = domain, float(rate), clock
        self._held: dict[str, tuple[float, float]] = {}  # worker -> (share, expires at, monotonic)

    def configure(self, rate: float) -> float:
        """The domain's rate R from now on (the coordinator that plans a run sets it); returns it."""
        self.rate = float(rate)
        return self.rate

    def lease(self, worker: str, ttl_s: float = LEASE_TTL_S) -> float:
        """Grants `worker` its share for `ttl_s` seconds: the fair share, cut to what the others' leases leave."""
        now = self._clock()
        self._held = {w: h for w, h in self._held.items() if h[1] > now and w != worker}
        others = sum(share for share, _ in self._held.values())
        share = max(0.0, min(self.rate / (len(self._held) + 1), self.rate - others))
        self._held[worker] = (share, now + ttl_s)
        return share

    def release(self, worker: str) -> None:
        """A worker done with the domain gives its share back at once (else it lapses)."""
        self._held.pop(worker, None)

    def holders(self) -> dict[str, float]:
        now = self._clock()
        return {w: share for w, (share, expires) in self._held.items() if expires > now}


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
    """Paces `limiter` at `worker`'s lease of the domain while the block runs: waits for a first share > 0 before
    entering (so no call goes at the limiter's configured rate), renews every second, pauses on a lapse, releases
    at the end."""
    valid_until, share = 0.0, 0.0

    async def renew() -> float:
        nonlocal valid_until, share
        sent = time.monotonic()
        with anyio.move_on_after(RENEW_S):  # a slow ledger: the lease held stays valid until valid_until
            share = float(await ledger.lease.remote(worker, LEASE_TTL_S))
            valid_until = sent + LEASE_TTL_S
        rate = share if share > 0 and time.monotonic() < valid_until else PAUSED_RATE
        if rate != limiter.per_second:
            limiter.set_rate(rate)
        return rate if rate != PAUSED_RATE else 0.0

    while await renew() <= 0:  # a newcomer waits until the others made room (their next renewal), asking often
        await anyio.sleep(RENEW_S / 50)

    async def keep() -> None:
        while True:
            await anyio.sleep(max(RENEW_S / 10, min(RENEW_S, valid_until - time.monotonic())))
            try:
                await renew()
            except Exception:  # the ledger unreachable: the lease lapses at valid_until, then the worker pauses
                if time.monotonic() >= valid_until and limiter.per_second != PAUSED_RATE:
                    limiter.set_rate(PAUSED_RATE)

    async with anyio.create_task_group() as tg:
        tg.start_soon(keep)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()
            limiter.set_rate(PAUSED_RATE)
            with anyio.move_on_after(RENEW_S, shield=True):
                await ledger.release.remote(worker)
