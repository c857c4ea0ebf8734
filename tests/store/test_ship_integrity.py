"""`ship` and `merge` pass on nothing whose chain or blobs do not verify (docs/reliability.md, hostile input): an
edited payload or a changed blob in a segment ships nothing, and the central log's replica still verifies."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from searchtrace.store import EventLog
from tests.builders import run_cli
from tests.conftest import Postgres
from tests.store.store_support import ev
from tests.store.test_central_log import central_rows, replica_verifies, segment

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed (make test installs it)")

EDIT_PAYLOAD = "UPDATE events SET payload = replace(CAST(payload AS VARCHAR), 'Goethe', 'Schiller') WHERE position = {p}"
EDIT_BLOB = "UPDATE blobs SET bytes = CAST('forged' AS BLOB), codec = 'raw', n_bytes = 6"


def tamper(db: Path, sql: str) -> None:
    con = duckdb.connect(str(db))
    try:
        con.execute(sql)
    finally:
        con.close()


def goethe_position(db: Path, after: int = 0) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT min(position) FROM events WHERE type = 'dataset.question' AND position > ?",
                          [after]).fetchone()
    finally:
        con.close()
    assert row is not None and row[0] is not None
    return int(row[0])


@pytest.mark.parametrize("edit", ["payload", "blob"])
def test_a_broken_segment_ships_nothing_and_the_replica_still_verifies(postgres: Postgres, tmp_path: Path,
                                                                       edit: str) -> None:
    url = postgres.database()
    good, bad = tmp_path / "good.duckdb", tmp_path / "bad.duckdb"
    segment(good, "g", 300).close()
    segment(bad, "b", 300).close()
    assert run_cli("ship", "--db", str(good), "--to", url).code == 0
    before = central_rows(url)
    tamper(bad, EDIT_PAYLOAD.format(p=goethe_position(bad)) if edit == "payload" else EDIT_BLOB)
    got = run_cli("ship", "--db", str(bad), "--to", url, "--batch", "10")
    assert got.code == 2 and len(got.err.splitlines()) == 1, got.err
    assert "bad.duckdb" in got.err and "nothing was shipped" in got.err, got.err
    assert ("hash mismatch" if edit == "payload" else "do not match its digest") in got.err, got.err
    assert central_rows(url) == before  # not one batch of the 30 went out
    assert "ok:" in replica_verifies(url, tmp_path, "replica.duckdb")
    # merge, the other way a segment travels, refuses it with the same check
    into = tmp_path / "into.duckdb"
    merged = run_cli("merge", "--into", str(into), str(bad))
    assert merged.code == 2 and len(merged.err.splitlines()) == 1 and "bad.duckdb" in merged.err, merged.err


def test_an_edit_after_a_partial_ship_sends_nothing_more(postgres: Postgres, tmp_path: Path) -> None:
    """The events shipped before stay; an edit among those not shipped yet stops the next pass before its first batch."""
    url = postgres.database()
    db = tmp_path / "seg.duckdb"
    segment(db, "p", 200).close()
    assert run_cli("ship", "--db", str(db), "--to", url).code == 0
    with EventLog(db) as grow:  # the segment grows by 40 events, then one of them is edited
        head = grow.head
        grow.append([ev("traj:late", i) for i in range(40)])
    shipped = central_rows(url)
    tamper(db, f"UPDATE events SET run_id = 'forged' WHERE position = {head + 35}")
    got = run_cli("ship", "--db", str(db), "--to", url, "--batch", "5")
    assert got.code == 2 and f"broken at position {head + 35}" in got.err and len(got.err.splitlines()) == 1, got.err
    assert central_rows(url) == shipped
    assert "ok:" in replica_verifies(url, tmp_path, "replica.duckdb")
