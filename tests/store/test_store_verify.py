"""`searchtrace verify` catches changes made behind the store's back (plain duckdb, in the test only)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import searchtrace.store._verify as verify_module
from searchtrace.store import EventLog
from tests.builders import run_cli
from tests.store.store_support import ev


def build(path: Path, n: int = 30) -> None:
    with EventLog(path) as log:
        log.append([ev(f"s{i % 3}", i) for i in range(n)])


def tamper(path: Path, sql: str) -> None:
    con = duckdb.connect(str(path))
    con.execute(sql)
    con.close()


def run_verify(path: Path) -> tuple[int, str, str]:
    return run_cli("verify", "--db", str(path))


def test_intact_log_exits_0_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    build(path)
    code, out, err = run_verify(path)
    assert code == 0 and err == ""
    assert out.count("\n") == 1 and "ok: 30 events in 3 streams" in out


def test_empty_store_is_intact(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    EventLog(path).close()
    code, out, _ = run_verify(path)
    assert code == 0 and "ok: 0 events" in out


@pytest.mark.parametrize(
    ("sql", "expect"),
    [
        ("""UPDATE events SET payload = '{"type":"answer.final","iteration":12,"text":"forged"}' WHERE position = 13""",
         "broken at position 13: hash mismatch"),
        ("UPDATE events SET run_id = 'other' WHERE position = 7", "broken at position 7: hash mismatch"),
        ("DELETE FROM events WHERE position = 17", "broken at position 17: position 17 is missing"),
        ("DELETE FROM events WHERE position = 1", "broken at position 1: position 1 is missing"),
        ("UPDATE events SET position = 21 WHERE position = 22", "broken at position 21: position 21 appears 2 times"),
        ("UPDATE events SET position = CASE position WHEN 9 THEN 10 ELSE 9 END WHERE position IN (9, 10)",
         "broken at position 9"),
        ("INSERT INTO events SELECT * FROM events WHERE position = 5", "broken at position 5: position 5 appears 2 times"),
        ("UPDATE events SET stream_seq = 3 WHERE position = 8", "broken at position 8: stream 's1' has stream_seq 3"),
        ("UPDATE events SET hash = CASE WHEN hash[1] = 'f' THEN 'e' ELSE 'f' END || hash[2:] WHERE position = 30", "broken at position 30: hash mismatch"),
        # at the end of a span of 4, and a whole span gone: the row after the span names the gap
        ("DELETE FROM events WHERE position = 16",
         "broken at position 16: position 16 is missing (the row after position 15 has position 17)"),
        ("DELETE FROM events WHERE position BETWEEN 17 AND 24",
         "broken at position 17: position 17 is missing (the row after position 16 has position 25)"),
        ("UPDATE events SET position = 0 WHERE position = 1", "broken: position 0 is out of order"),
        ("UPDATE events SET stream_seq = 8 WHERE position = 29",  # its stream's earlier events are in seven spans
         "broken at position 29: stream 's1' has stream_seq 8 where 9 was due"),
    ],
)
@pytest.mark.parametrize("span", [verify_module.SPAN, 4])
def test_tampering_exits_1_naming_the_first_broken_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, expect: str, span: int
) -> None:
    monkeypatch.setattr(verify_module, "SPAN", span)  # a log of 30 checked in one span, then in spans of 4
    path = tmp_path / "t.duckdb"
    build(path)
    tamper(path, sql)
    code, out, err = run_verify(path)
    assert code == 1 and out == ""
    assert expect in err and err.count("\n") == 1


def test_a_re_hashed_forgery_is_caught_at_the_next_row(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    build(path)
    # forge row 10's payload and give it a freshly computed, self-consistent hash: row 11 no longer chains
    tamper(path, "UPDATE events SET payload = '{\"type\":\"answer.final\",\"iteration\":9,\"text\":\"x\"}', "
                 "hash = sha256('forged') WHERE position = 10")
    code, _, err = run_verify(path)
    assert code == 1 and "broken at position 10" in err
