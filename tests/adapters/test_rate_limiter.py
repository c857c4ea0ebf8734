"""adapters.RateLimiter against its closed form on a clock the test controls: N acquisitions at R/s with a bucket of
B take (N − B)/R, the i-th at max(0, (i − B + 1)/R), in arrival order; `set_rate` changes the pace while it runs."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from searchtrace.adapters import RateLimiter

pytestmark = pytest.mark.anyio


class Clock:
    """Virtual time: a sleep moves the clock on at once (only the first waiter of a limiter ever sleeps)."""

    def __init__(self) -> None:
        self.t = 0.0
        self.slept = 0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.slept += 1
        await anyio.lowlevel.checkpoint()


async def _times(lim: RateLimiter, clock: Clock, n: int, tasks: int = 1) -> list[tuple[int, float]]:
    """(arrival index, virtual time) of every acquisition, `tasks` tasks taking turns to arrive."""
    got: list[tuple[int, float]] = []

    async def one(i: int) -> None:
        await lim.acquire()
        got.append((i, clock.now()))

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
            if tasks == 1:
                await anyio.lowlevel.checkpoint()
    return got


@pytest.mark.parametrize(("rate", "burst", "n"), [(200.0, None, 1000), (2.0, None, 20), (50.0, 5.0, 300)])
async def test_n_acquisitions_at_r_per_second_take_n_over_r(rate: float, burst: float | None, n: int) -> None:
    clock = Clock()
    lim = RateLimiter(rate, burst, clock=clock.now, sleep=clock.sleep)
    b = lim.burst
    assert b == (burst if burst is not None else max(1.0, rate / 10))
    got = await _times(lim, clock, n, tasks=n)
    assert [i for i, _ in got] == list(range(n))  # first come, first served
    for i, t in got:
        assert t == pytest.approx(max(0.0, (i - b + 1) / rate), abs=1e-9)
    assert clock.now() == pytest.approx((n - b) / rate, abs=1e-9)
    # never more than R·1 s + B in any 1-s window
    stamps = [t for _, t in got]
    assert max(sum(1 for u in stamps if s <= u < s + 1.0) for s in stamps) <= rate + b


async def test_set_rate_paces_at_the_new_rate_from_then_on() -> None:
    clock = Clock()
    lim = RateLimiter(100.0, clock=clock.now, sleep=clock.sleep)  # bucket 10
    first = await _times(lim, clock, 100, tasks=100)
    lim.set_rate(50.0)  # bucket 5; what is in the bucket is carried over
    assert (lim.per_second, lim.burst) == (50.0, 5.0)
    later = await _times(lim, clock, 100, tasks=100)
    gaps = [b - a for (_, a), (_, b) in zip(later, later[1:], strict=False)]
    assert all(g == pytest.approx(1 / 50, abs=1e-9) for g in gaps[5:])  # past the new bucket, one per 1/50 s
    # the 10 acquisitions still in the full bucket count at the new rate: (10 + N2 − B2)/R2 after the first part
    assert later[-1][1] == pytest.approx(first[-1][1] + (10 + 100 - 5) / 50, abs=1e-9)
    with pytest.raises(ValueError, match="a rate must be a finite number > 0"):
        lim.set_rate(0.0)


async def test_set_rate_wakes_a_waiter_sleeping_under_the_old_rate() -> None:
    lim = RateLimiter(1 / 3600)  # real time: one an hour, no burst
    await lim.acquire()  # the bucket is full now: the next one would wait an hour
    done: list[bool] = []

    async def waiter() -> None:
        await lim.acquire()
        done.append(True)

    with anyio.fail_after(60):  # a guard against a hang (the old wait is an hour), not a tolerance
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.sleep(0.02)
            lim.set_rate(1000.0)  # a raised share is used at once, not after the old wait
    assert done == [True]
