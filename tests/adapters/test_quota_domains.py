"""A quota domain is one budget of R calls a second (docs/how-to/quotas.md): its slots are whole tokens about 1/R
apart (spaced so that arrivals up to 80 ms late still put at most ⌊1.1 R⌋ in a 1-s window), handed out in the order asked for, and in one process every endpoint naming the domain spends the same
budget, counted where the requests arrive."""

from __future__ import annotations

import anyio
import pytest

from searchtrace.adapters import Endpoint, EndpointClient, Slots, domain_interval
from searchtrace.benchmarks._scale import arrival_server, busiest_window, held
from searchtrace.engine import parse_config
from searchtrace.store import BadInput


def test_slot_spacing_leaves_room_for_late_arrivals_only_where_1_1_r_has_none() -> None:
    # ⌊1.1 R⌋ arrivals fit a 1-s window; spacing s with (1 + 0.08)/s ≤ ⌊1.1 R⌋, and never under 1/R
    assert domain_interval(1.0) == pytest.approx(1.08)
    assert domain_interval(8.0) == pytest.approx(1.08 / 8)
    assert domain_interval(10.0) == pytest.approx(0.1) and domain_interval(200.0) == pytest.approx(0.005)
    assert domain_interval(0.5) == pytest.approx(2.0)


def test_slots_are_whole_tokens_evenly_spaced_and_an_unused_one_passes() -> None:
    now = [0.0]
    slots = Slots(8.0, clock=lambda: now[0])
    step = 0.135  # 1.08 / 8
    got = [now[0] + d for _ in range(12) for d in slots.take(5)]  # twelve workers asking, more than R
    assert len(got) == 12  # at 8/s, 50 ms of the domain's time holds less than one slot: one per grant
    assert got == pytest.approx([i * step for i in range(12)])
    assert busiest_window(got) <= 8  # however many ask, never more than R in a 1-s window
    now[0] = 100.0  # nobody asked for a while (a worker died holding nothing): the next slot is now, not a backlog
    assert slots.take(1) == [0.0] and slots.take(1) == pytest.approx([step])
    fast = Slots(1000.0, clock=lambda: now[0])
    assert len(fast.take(500)) == 50  # one grant: at most 50 ms of the domain's time


def test_endpoints_naming_one_domain_must_agree_on_its_rate() -> None:
    cfg = {"agent": {"model": "m"}, "dataset": {"path": "q.jsonl"}, "fetch": {"cache_dir": ""},
           "providers": {"a": {"kind": "tavily", "quota": "team", "rps": 8},
                         "b": {"kind": "exa", "quota": "team", "rps": 5}}}
    with pytest.raises(BadInput, match=r"providers\.b\.rps.*quota 'team'"):
        parse_config(cfg, "<t>")


@pytest.mark.anyio
async def test_three_endpoints_in_one_domain_share_its_rate_at_the_server() -> None:
    rate = 20.0  # 10 % of it is two calls: one late arrival on a loaded machine does not tip a window over
    with arrival_server() as (url, arrivals):
        clients = [EndpointClient(Endpoint(base_url=url, rps=rate, quota="team:one", concurrency=4)) for _ in range(3)]
        assert clients[0].limiter is clients[1].limiter is clients[2].limiter

        async def hammer(client: EndpointClient) -> None:
            while len(arrivals) < 60:
                await client.call("GET", "x", what="probe")

        async with anyio.create_task_group() as tg:
            for client in clients:
                for _ in range(4):
                    tg.start_soon(hammer, client)
        for client in clients:
            await client.aclose()
        counted = list(arrivals)
    got = held(counted, rate)
    assert got["busiest_1s_window"] <= 1.1 * rate  # alone each would send 20/s: 60/s in all
    # the domain paces at its whole rate, not a share per endpoint (how fast a loaded machine keeps up with it is
    # no property of the domain: a lower bound on the arrival rate failed under load)
    assert clients[0].limiter is not None and clients[0].limiter.per_second == rate
