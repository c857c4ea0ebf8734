"""The quota ledger's rule on a clock the test moves (no cluster): the shares held never add up to more than R, a
newcomer gets what is free and the others make room at their renewal, a dead worker's share lapses."""

from __future__ import annotations

import pytest

from searchtrace.pipeline import QuotaLedger


def test_shares_never_exceed_the_rate_and_a_dead_workers_lapses() -> None:
    now = [0.0]
    ledger = QuotaLedger("d", 200.0, clock=lambda: now[0])
    assert ledger.lease("a", 3.0) == 200.0  # alone: the whole rate
    assert ledger.lease("b", 3.0) == 0.0  # a newcomer waits: a's lease still holds all of it
    now[0] = 1.0
    assert ledger.lease("a", 3.0) == 100.0  # a's renewal makes room
    assert ledger.lease("b", 3.0) == 100.0
    assert ledger.lease("c", 3.0) == 0.0
    now[0] = 2.0
    shares = [ledger.lease(w, 3.0) for w in ("a", "b", "c")]
    assert shares == pytest.approx([200 / 3] * 3) and sum(ledger.holders().values()) <= 200.0 + 1e-9
    now[0] = 3.0  # c stops renewing (dead); a and b keep going
    assert [ledger.lease("a", 3.0), ledger.lease("b", 3.0)] == pytest.approx([200 / 3] * 2)  # c's lease holds until it lapses
    now[0] = 5.5
    assert ledger.holders().keys() == {"a", "b"}  # c's share lapsed at 2.0 + 3.0
    assert ledger.lease("a", 3.0) == 100.0 and ledger.lease("b", 3.0) == 100.0
    ledger.release("b")
    assert ledger.lease("a", 3.0) == 200.0
