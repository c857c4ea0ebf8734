"""`replica --db X` pulls only into an empty store or a replica of that very log (docs/reliability.md, hostile input):
an ordinary store, or a replica of another log, is refused in one line and left as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from searchtrace.store import EventLog
from tests.builders import run_cli
from tests.conftest import Postgres
from tests.store.store_support import ev
from tests.store.test_central_log import segment

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed (make test installs it)")


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("own", [5, 400])
def test_an_ordinary_store_is_not_made_a_replica(postgres: Postgres, tmp_path: Path, own: int) -> None:
    url = postgres.database()
    seg = tmp_path / "seg.duckdb"
    segment(seg, "s", 300).close()
    assert run_cli("ship", "--db", str(seg), "--to", url).code == 0
    other = tmp_path / "other.duckdb"
    with EventLog(other) as log:  # fewer events than the log holds, or more
        log.append([ev("traj:mine", i) for i in range(own)])
    before = digest(other)
    got = run_cli("replica", "--from", url, "--db", str(other))
    assert got.code == 2 and len(got.err.splitlines()) == 1, got.err
    assert "other.duckdb" in got.err and "not a replica of" in got.err, got.err
    assert digest(other) == before


def test_a_replica_of_another_log_is_refused_and_its_own_log_still_pulls(postgres: Postgres, tmp_path: Path) -> None:
    first, second = postgres.database(), postgres.database()
    for url, tag in ((first, "a"), (second, "b")):
        seg = tmp_path / f"{tag}.duckdb"
        segment(seg, tag, 200).close()
        assert run_cli("ship", "--db", str(seg), "--to", url).code == 0
    replica = tmp_path / "replica.duckdb"
    assert run_cli("replica", "--from", first, "--db", str(replica)).code == 0
    before = digest(replica)
    got = run_cli("replica", "--from", second, "--db", str(replica))
    assert got.code == 2 and "not a replica of" in got.err and len(got.err.splitlines()) == 1, got.err
    assert digest(replica) == before
    again = run_cli("replica", "--from", first, "--db", str(replica))
    assert again.code == 0 and "0 events" in again.out, again.err
    fresh = run_cli("replica", "--from", second, "--db", str(tmp_path / "fresh.duckdb"))
    assert fresh.code == 0, fresh.err
