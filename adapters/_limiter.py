"""A rate limiter whose rate can be changed while it paces (docs/how-to/scale.md: a worker's share of a quota changes as leases
are renewed), owned here because aiolimiter has no public way to change a rate.

It is a leaky bucket run as a meter (GCRA): `tat` is the time the bucket would be empty; each acquisition adds one
interval 1/R to it, and an acquisition may go once `tat` is at most `burst − 1` intervals ahead of now. So the first
`burst` go at once and then one every 1/R — the bucket of aiolimiter's AsyncLimiter(burst, burst/R). Waiters queue
in arrival order behind one lock; only the first sleeps, and `set_rate` wakes it to recompute under the new rate.

A quota domain (docs/how-to/quotas.md) is one budget of R calls a second, however many endpoints, processes and
machines spend it: its send times are `Slots`, whole tokens about 1/R apart with no burst. In one process the
endpoints naming a domain share one limiter (`domain_limiter`); across processes a limiter is `granted_by` a source
of slots (a Ray ledger actor) instead of its own bucket. Even spacing with 5% room means a send that is late by up
to 50 ms never puts more than R calls in any 1-s window where they arrive, and no worker holds a share it may not use.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import anyio

LATE_ROOM_S = 0.08  # how late a send may arrive (event loop, network, server) and its 1-s window still hold 1.1 R
MAX_LATE_S = LATE_ROOM_S / 2  # a granted slot missed by more than this is dropped (it would crowd the next ones)
GRANT_WINDOW_S = 0.05  # one grant hands out at most this much of the domain's time (at least one slot)
GRANT_ASK = 1 << 16  # a limiter asks for all a grant may hold: its callers come back for the slots while they send
NO_GRANT_RETRY_S = 0.1  # a grant that failed or gave nothing: asked again after this

Grants = Callable[[int], Awaitable[Sequence[float]]]  # n wanted -> delays from now of the slots granted


def domain_interval(per_second: float) -> float:
    """The time between a quota domain's slots: 1/R, stretched where 1.1 R leaves no room for a late arrival.

    k = ⌊1.1 R⌋ calls may arrive in any 1-s window; calls sent at least `interval` apart and each late by at most
    LATE_ROOM_S put at most k in one when (1 + LATE_ROOM_S)/interval ≤ k. At 8/s that is one call per 0.135 s
    (0.926 R), at 1/s one per 1.08 s, and from 10/s on the rate itself."""
    if not (math.isfinite(per_second) and per_second > 0):
        raise ValueError(f"a quota domain's rate must be a finite number > 0 per second, got {per_second}")
    return max(1.0 / per_second, (1.0 + LATE_ROOM_S) / max(1, math.floor(1.1 * per_second + 1e-9)))


class Slots:
    """A quota domain's send times: whole tokens, one every `domain_interval` (about 1/R), handed out in the order asked for; a slot
    not used by its holder (a dead worker) simply passes, so nothing is ever held past its time."""

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._next = -math.inf  # the first free slot
        self.configure(per_second)

    def configure(self, per_second: float) -> float:
        """The domain's rate R from now on; returns it."""
        self.rate, self.interval = float(per_second), domain_interval(per_second)
        return self.rate

    def take(self, n: int) -> list[float]:
        """Up to `n` slots (at most GRANT_WINDOW_S of the domain's time, at least one), as delays from now."""
        now = self._clock()
        count = max(1, min(int(n), int(GRANT_WINDOW_S / self.interval)))
        start = max(now, self._next)
        self._next = start + count * self.interval
        return [start - now + i * self.interval for i in range(count)]


def default_burst(per_second: float) -> float:
    """rps/10 per 0.1 s: no first-second burst (docs/concepts/performance.md)."""
    return max(1.0, per_second / 10.0)


class RateLimiter:
    """Paces `acquire` to `per_second` with bursts of up to `burst` (default: `default_burst`); `set_rate` changes
    the rate at any time, the queued acquisitions keep their order and the bucket's level is carried over."""

    def __init__(
        self,
        per_second: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = anyio.current_time,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._clock, self._sleep = clock, sleep
        self._fixed_burst = burst  # None: the burst follows the rate (default_burst)
        self._lock = anyio.Lock(fast_acquire=True)  # a free limiter costs no scheduling checkpoint
        self._tat: float | None = None  # None: the bucket is empty (no acquisition yet)
        self._wake: anyio.CancelScope | None = None  # the first waiter's sleep, cut short by set_rate
        self._grants: Grants | None = None  # a quota domain's slots from elsewhere, used instead of the bucket
        self._slots: deque[float] = deque()  # granted slots not used yet (clock times)
        self._set(per_second, burst)

    def _set(self, per_second: float, burst: float | None) -> None:
        if not (math.isfinite(per_second) and per_second > 0):
            raise ValueError(f"a rate must be a finite number > 0 per second, got {per_second}")
        size = default_burst(per_second) if burst is None else float(burst)
        if not (math.isfinite(size) and size >= 1):
            raise ValueError(f"a burst must be a finite number >= 1, got {burst}")
        self._per_second, self._burst = float(per_second), size
        self._interval = 1.0 / per_second

    @property
    def per_second(self) -> float:
        return self._per_second

    @property
    def burst(self) -> float:
        return self._burst

    def set_rate(self, per_second: float) -> None:
        """Pace at `per_second` from now on: the acquisitions already in the bucket count at the new rate, and the
        first waiter recomputes its wait at once (a raised share is used without waiting out the old one)."""
        if self._tat is not None:
            now = self._clock()
            level = max(0.0, self._tat - now) / self._interval  # acquisitions still in the bucket
            self._set(per_second, self._fixed_burst)
            self._tat = now + level * self._interval
        else:
            self._set(per_second, self._fixed_burst)
        if self._wake is not None:
            self._wake.cancel()

    def granted_by(self, grants: Grants | None) -> None:
        """Pace by the slots `grants` hands out (a quota domain's ledger) instead of this bucket; None: the bucket."""
        self._grants = grants
        self._slots.clear()

    async def _granted(self, grants: Grants) -> None:
        while True:
            if not self._slots:
                try:
                    got = await grants(GRANT_ASK)
                except Exception:  # the ledger unreachable: no slot, so no call, until it answers
                    got = ()
                now = self._clock()
                self._slots.extend(now + d for d in got)
                if not got:
                    await self._sleep(NO_GRANT_RETRY_S)
                    continue
            wait = self._slots.popleft() - self._clock()
            if wait < -MAX_LATE_S:
                continue
            if wait > 0:
                await self._sleep(wait)
            return

    async def acquire(self) -> None:
        """Return once one more call fits the rate (at once while the bucket has room)."""
        async with self._lock:
            if self._grants is not None:
                await self._granted(self._grants)
            else:
                await self._paced()

    async def _paced(self) -> None:
        while True:
            now = self._clock()
            tat = now if self._tat is None or self._tat < now else self._tat
            wait = tat - (self._burst - 1.0) * self._interval - now
            if wait <= 0:
                self._tat = tat + self._interval
                return
            with anyio.CancelScope() as scope:
                self._wake = scope
                try:
                    await self._sleep(wait)
                finally:
                    self._wake = None


_DOMAINS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, RateLimiter]] = weakref.WeakKeyDictionary()


def domain_limiter(domain: str, per_second: float) -> RateLimiter:
    """The one limiter of quota domain `domain` in this process (its event loop): every endpoint naming the domain
    paces through it, in evenly spaced slots (`domain_interval`); outside an event loop, a limiter of its own."""
    limiter = RateLimiter(1.0 / domain_interval(per_second), 1.0)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return limiter
    held = _DOMAINS.setdefault(loop, {})
    return held.setdefault(domain, limiter)
