"""One log for many writers (docs/how-to/scale.md): segments shipped by real processes to one PostgreSQL log, replicas pulled
from it and verified, a shipper killed mid-batch, payload bytes through `json`, passwords never shown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.store import (
    DatasetQuestion,
    EventLog,
    FetchCompleted,
    NewEvent,
    SegmentShipped,
    digest,
    encode_payload,
)
from tests.builders import run_cli
from tests.conftest import Postgres
from tests.store.store_support import ev, every_payload

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed (make test installs it)")

SEARCHTRACE = str(Path(sys.executable).parent / "searchtrace")


def segment(path: Path, tag: str, n: int) -> EventLog:
    """A segment of n events: trajectory streams of its own, a run stream every segment writes to, fetched pages
    as blobs (named by content_digest), and an event that holds NUL and non-ASCII text."""
    log = EventLog(path)
    events: list[NewEvent] = []
    pages: list[bytes] = []
    for i in range(n):
        if i % 50 == 0:
            page = f"<p>{tag} page {i}</p>".encode() * 20
            pages.append(page)
            events.append(NewEvent(stream_id=f"traj:{tag}-{i // 10}", run_id="r", payload=FetchCompleted(
                call_id=f"c{i}", doc_id="d", status="ok", content_digest=digest(page), n_bytes=len(page),
                n_tokens=3, cache_hit=False, latency_ms=1.0)))
        elif i % 7 == 0:
            events.append(NewEvent(stream_id="run:r", run_id="r", payload=DatasetQuestion(
                qid=f"{tag}{i}", question="Wer schrieb „Faust“? \u0000 🙂", gold_answer="Goethe")))
        else:
            events.append(ev(f"traj:{tag}-{i // 10}", i))
    for i in range(0, n, 2_000):
        log.append(events[i: i + 2_000], blobs=pages if i == 0 else [])
    return log


def central_rows(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return [tuple(r) for r in con.execute(
            "SELECT position, event_id, stream_id, type, payload::text FROM events ORDER BY position").fetchall()]


def markers(rows: list[tuple[Any, ...]]) -> list[SegmentShipped]:
    return [msgspec.json.decode(r[4], type=SegmentShipped) for r in rows if r[3] == "segment.shipped"]


def replica_verifies(url: str, tmp_path: Path, name: str) -> str:
    db = tmp_path / name
    got = run_cli("replica", "--from", url, "--db", str(db))
    assert got.code == 0, got.err
    ok = run_cli("verify", "--db", str(db))
    assert ok.code == 0, ok.err
    return ok.out


def test_the_payload_column_is_json_and_keeps_every_byte(postgres: Postgres) -> None:
    from searchtrace.store import CentralLog

    url = postgres.database()
    payloads = every_payload()
    odd = "tab\there, line\nbreak, back\\slash \\N"  # what COPY's text format must escape
    with CentralLog(url) as log:
        log.append([NewEvent(stream_id="s", run_id="r", payload=p) for p in payloads])
        log.append([NewEvent(stream_id=odd, run_id=odd, payload=payloads[0])])
        assert [(e.stream_id, e.run_id) for e in log.read(len(payloads) + 1)] == [(odd, odd)]
    with psycopg.connect(url) as con:
        kinds = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_name = 'events'").fetchall())
        assert kinds["payload"] == "json"
        jsonb = con.execute("SELECT count(*) FROM information_schema.columns WHERE data_type = 'jsonb' "
                            "AND table_schema = current_schema()").fetchone()
        assert jsonb == (0,)
        stored = [r[0] for r in con.execute("SELECT payload::text FROM events ORDER BY position").fetchall()][:-1]
        # what jsonb would have kept instead: not these bytes (a NUL escape it refuses, keys it reorders)
        assert con.execute("SELECT %s::json::jsonb::text = %s", [stored[0], stored[0]]).fetchone() == (False,)
    assert [s.encode() for s in stored] == [encode_payload(p) for p in payloads]


def test_a_payload_rewritten_through_jsonb_breaks_the_chain_a_replica_checks(postgres: Postgres, tmp_path: Path) -> None:
    from searchtrace.store import CentralLog

    url = postgres.database()
    with CentralLog(url) as log:
        log.append([NewEvent(stream_id="s", run_id="r", payload=p) for p in every_payload()[:3]])
    with psycopg.connect(url) as con:  # what a jsonb column would have done to the second event
        con.execute("UPDATE events SET payload = payload::jsonb::json WHERE position = 2")
    got = run_cli("replica", "--from", url, "--db", str(tmp_path / "r.duckdb"))
    assert got.code == 2 and "position 2: its hash does not follow the one before" in got.err, got.err


def test_two_segments_shipping_at_once_make_one_gap_free_chain(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.database()
    n = 6_000
    ids = {}
    for tag in ("a", "b"):
        with segment(tmp_path / f"{tag}.duckdb", tag, n) as log:
            ids[tag] = [r[0] for r in log.cursor().execute("SELECT event_id FROM events ORDER BY position").fetchall()]
    from searchtrace.store import CentralLog

    CentralLog(url).close()  # the schema and its head row
    # the head row held here until both shippers wait for it: each append takes it first, so they start together
    # (one process starting a second late would ship everything alone) and then take turns batch by batch
    gate = psycopg.connect(url)
    gate.execute("SELECT position FROM head FOR UPDATE")
    shippers = [subprocess.Popen([SEARCHTRACE, "ship", "--db", str(tmp_path / f"{t}.duckdb"), "--to", url,
                                  "--batch", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for t in ("a", "b")]
    try:
        with psycopg.connect(url, autocommit=True) as watch:
            deadline = time.monotonic() + 120
            while (watch.execute("SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted").fetchone() or (0,))[0] < 2:
                assert time.monotonic() < deadline and all(p.poll() is None for p in shippers), "no two shippers waited"
                time.sleep(0.05)
        gate.rollback()
        for p in shippers:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0, err
            assert "6000 events shipped, 0 already in the log" in out
    finally:
        gate.close()
        for p in shippers:
            if p.poll() is None:
                p.kill()
                p.communicate()
    rows = central_rows(url)
    positions = [r[0] for r in rows]
    assert positions == list(range(1, 2 * n + 40 + 1))  # gap-free: both segments' events and 20 markers each
    by_tag = {t: [r[1] for r in rows if r[2].startswith(f"traj:{t}-") or (r[2] == "run:r" and r[4].find(f'"qid":"{t}') > 0)]
              for t in ("a", "b")}
    assert {t: by_tag[t] for t in by_tag} == ids  # every event once, each segment's in its own order
    order = [m.segment_id for m in markers(rows)]
    switches = sum(1 for x, y in zip(order, order[1:], strict=False) if x != y)
    assert switches >= 2, "the two shippers did not interleave: the test did not run them concurrently"
    assert "hash chain intact" in replica_verifies(url, tmp_path, "replica.duckdb")
    # a replica is an ordinary store: the run stream numbers both segments' questions 0, 1, 2, … in log order
    again = run_cli("sql", "--db", str(tmp_path / "replica.duckdb"), "--json",
                    "SELECT count(*) AS n, max(stream_seq) AS top FROM events WHERE stream_id = 'run:r'")
    got = msgspec.json.decode(again.out)[0]
    assert got["top"] == got["n"] - 1
    # shipping again adds nothing: each resumes after its last marker
    done = run_cli("ship", "--db", str(tmp_path / "a.duckdb"), "--to", url)
    assert done.code == 0 and "0 batches, 0 events shipped" in done.out
    assert len(central_rows(url)) == len(rows)


def test_a_shipper_killed_mid_batch_resumes_with_nothing_lost_or_twice(postgres: Postgres, tmp_path: Path) -> None:
    from searchtrace.store import CentralLog

    url = postgres.database()
    CentralLog(url).close()  # the schema, so the watcher below can read the head from the start
    n = 15_000
    with segment(tmp_path / "s.duckdb", "s", n):
        pass
    proc = subprocess.Popen([SEARCHTRACE, "ship", "--db", str(tmp_path / "s.duckdb"), "--to", url, "--batch", "1500"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = psycopg.connect(url, autocommit=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # a batch is half written: its transaction is in (or past) its COPY and not committed
            row = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'searchtrace ship' "
                "AND datname = current_database() AND query LIKE 'COPY events%' "
                "AND state IN ('active', 'idle in transaction')").fetchone()
            committed = watch.execute("SELECT position FROM head").fetchone()
            if row == (1,) and committed is not None and committed[0] > 0:
                break
            assert proc.poll() is None and time.monotonic() < deadline, "the shipper ended before it could be killed"
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        before = central_rows(url)
        shipped = markers(before)
        assert 0 < shipped[-1].last < n
        # what committed is exactly the batches with their markers: the killed batch left nothing
        assert len(before) == shipped[-1].last + len(shipped)
    finally:
        watch.close()
    resumed = run_cli("ship", "--db", str(tmp_path / "s.duckdb"), "--to", url, "--batch", "1500")
    assert resumed.code == 0, resumed.err
    assert f"{n - shipped[-1].last} events shipped, 0 already in the log" in resumed.out
    rows = central_rows(url)
    ranges = [(m.first, m.last) for m in markers(rows)]
    assert ranges == [(i + 1, min(i + 1500, n)) for i in range(0, n, 1500)]  # tiles 1..n, no batch twice
    assert len(rows) == n + len(ranges) and len({r[1] for r in rows}) == len(rows)
    replica_verifies(url, tmp_path, "replica.duckdb")


def test_an_id_with_other_bytes_stops_the_batch_with_one_line(postgres: Postgres, tmp_path: Path) -> None:
    url = postgres.database()
    same = ev("traj:x", 1)
    with EventLog(tmp_path / "one.duckdb") as log:
        log.append([ev("traj:x", 0), same])
    with EventLog(tmp_path / "two.duckdb") as log:  # another segment's event under the same id
        log.append([NewEvent(stream_id="traj:y", run_id="r2", payload=every_payload()[1], event_id=same.event_id)])
    assert run_cli("ship", "--db", str(tmp_path / "one.duckdb"), "--to", url).code == 0
    got = run_cli("ship", "--db", str(tmp_path / "two.duckdb"), "--to", url)
    assert got.code == 2 and got.err.count("\n") == 1
    assert f"event {same.event_id}: the log holds it at position 2 with other bytes" in got.err
    assert len(central_rows(url)) == 3  # the first segment's two events and its marker


def test_a_url_password_reaches_no_line_event_or_blob(postgres: Postgres, tmp_path: Path) -> None:
    secret = "s3cr%3At-pw"  # percent-encoded ':' in the URL; the password itself is s3cr:t-pw
    url = postgres.database(password=secret)
    with segment(tmp_path / "s.duckdb", "s", 200):
        pass
    ok = run_cli("-vv", "ship", "--db", str(tmp_path / "s.duckdb"), "--to", url)
    bad = run_cli("-vv", "ship", "--db", str(tmp_path / "s.duckdb"), "--to", postgres.url("no_such_db", password=secret))
    rep = run_cli("-vv", "replica", "--from", url, "--db", str(tmp_path / "r.duckdb"))
    assert ok.code == 0 and rep.code == 0 and bad.code == 2
    assert "postgres:***@" in ok.out and "no_such_db" in bad.err and "postgres:***@" in bad.err
    assert "shipped batch" in ok.err and "postgres:***@" in ok.err and "pulled" in rep.err  # the log lines
    with psycopg.connect(url) as con:
        stored = con.execute("SELECT string_agg(payload::text, '') FROM events").fetchone()[0]
        blob_bytes = b"".join(bytes(r[0]) for r in con.execute("SELECT bytes FROM blobs").fetchall())
    replica = (tmp_path / "r.duckdb").read_bytes()
    for text in (ok.out, ok.err, bad.out, bad.err, rep.out, rep.err, stored):
        assert "s3cr" not in text
    assert b"s3cr" not in blob_bytes and b"s3cr" not in replica


def test_record_and_judge_ship_while_they_run_and_a_followed_replica_reports(postgres: Postgres, tmp_path: Path) -> None:
    import anyio

    from searchtrace import pipeline
    from tests.builders import sandbox_config

    url = postgres.database()
    cfg = sandbox_config(tmp_path, n=4)
    db = tmp_path / "seg.duckdb"
    shipped: list[Any] = []
    summary = anyio.run(lambda: pipeline.record(cfg, db, pipeline.aim(cfg, sandbox=True), progress=False,
                                                ship_to=url, on_shipped=shipped.append), backend="asyncio")
    assert summary.recorded == 12 and shipped
    judged = run_cli("judge", "--db", str(db), "--sandbox", "--ship-to", url)
    assert judged.code == 0 and "shipped: segment" in judged.out, judged.err
    with EventLog(db, read_only=True) as log:
        local = log.head
    assert shipped[0].through < local and f"through local position {local};" in judged.out
    follower = subprocess.Popen([SEARCHTRACE, "replica", "--from", url, "--db", str(tmp_path / "r.duckdb"), "--follow"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = follower.stderr.readline() if follower.stderr else ""
        assert f"at position {local + len(markers(central_rows(url)))}" in line, line
        # while it follows, other commands read the replica through its read socket
        live = run_cli("sql", "--db", str(tmp_path / "r.duckdb"), "--json",
                       "SELECT count(*) AS n FROM events WHERE type = 'trajectory.finished'")
        assert live.code == 0 and msgspec.json.decode(live.out) == [{"n": 12}], live.err
    finally:
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    report = run_cli("report", "--db", str(tmp_path / "r.duckdb"), "--json")
    local_report = run_cli("report", "--db", str(db), "--json")
    assert report.code == 0 and msgspec.json.decode(report.out)["providers"] == msgspec.json.decode(local_report.out)["providers"]


def test_bench_ship_measures_ship_and_replica_against_ingest(postgres: Postgres) -> None:
    got = run_cli("bench", "ship", "--to", postgres.url(), "--events", "3000", "--batch", "1000", "--json")
    assert got.code == 0, got.err
    result = msgspec.json.decode(got.out)
    for key in ("ingest_events_per_s", "ship_events_per_s", "ship_concurrent_events_per_s", "replica_events_per_s"):
        assert isinstance(result[key], int) and result[key] > 0, key
    assert result["ship_vs_ingest"] == pytest.approx(result["ship_events_per_s"] / result["ingest_events_per_s"], abs=2e-3)
    assert result["replica_events"] == 2 * 3000 + 2 * 3  # both segments and a marker per batch
    assert result["replica_verify"].startswith("ok: 6006 events")
    with psycopg.connect(postgres.url()) as con:  # the scratch schemas are gone
        assert con.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench_%'").fetchone() == (0,)


def test_the_proxy_ships_what_it_recorded(postgres: Postgres, tmp_path: Path) -> None:
    import httpx

    from tests.proxy.support import proxy, write_questions

    url = postgres.database()
    qfile = tmp_path / "q.jsonl"
    qid = write_questions(qfile, 1)[0]["qid"]
    db = tmp_path / "proxied.duckdb"
    with proxy(db, qfile, "p", extra=("--ship-to", url)) as p:
        base = f"{p.url}/t/tavily/{qid}"
        assert httpx.post(f"{base}/tavily/search", json={"query": "who"}, timeout=30).status_code == 200
        assert httpx.post(f"{base}/final", json={"answer": "a"}, timeout=30).status_code == 200
        assert p.stop() == 0
        text = p.log.read_text()
    with EventLog(db, read_only=True) as log:
        local = log.head
    assert "searchtrace proxy: shipped: segment" in text and f"through local position {local};" in text, text
    rows = central_rows(url)
    assert len(rows) - len(markers(rows)) == local
