"""A rate limiter whose rate can be changed while it paces (docs/how-to/scale.md: a worker's share of a quota changes as leases
are renewed), owned here because aiolimiter has no public way to change a rate.

It is a leaky bucket run as a meter (GCRA): `tat` is the time the bucket would be empty; each acquisition adds one
interval 1/R to it, and an acquisition may go once `tat` is at most `burst − 1` intervals ahead of now. So the first
`burst` go at once and then one every 1/R — the bucket of aiolimiter's AsyncLimiter(burst, burst/R). Waiters queue
in arrival order behind one lock; only the first sleeps, and `set_rate` wakes it to recompute under the new rate.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import anyio


def default_burst(per_second: float) -> float:
    """rps/10 per 0.1 s: no first-second burst (perf.md §4)."""
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

    async def acquire(self) -> None:
        """Return once one more call fits the rate (at once while the bucket has room)."""
        async with self._lock:
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
