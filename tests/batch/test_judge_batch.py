"""`judge --batch` against the sandbox's batch APIs: the demo store's labels are the online judge's item for item
(OpenAI and Anthropic shapes); a judge SIGKILLed while polling resumes its batches without submitting any again;
errored and expired items are resubmitted once, then judged online or left and counted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from searchtrace.adapters.sandbox import FaultPlan, create_app, running
from searchtrace.cli import cli
from searchtrace.replay._judge import stream_of
from searchtrace.store import (
    BadInput,
    EventLog,
    JudgeBatchFinished,
    JudgeBatchPolled,
    JudgeBatchSubmitted,
    JudgeVerdict,
    item_id,
    open_remote,
)

SEARCHTRACE = str(Path(sys.executable).with_name("searchtrace"))
ONLINE = "sandbox-judge@judge/1"  # the demo's own (online) judge run


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run([SEARCHTRACE, "demo", "--n", "6", "--out", str(out), "--json"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out / "demo.duckdb"


@pytest.fixture
def store(demo: Path, tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "s.duckdb"
    shutil.copy(demo, db)
    yield db


def verdicts(db: Path, jrid: str) -> dict[tuple[str, str], JudgeVerdict]:
    out: dict[tuple[str, str], JudgeVerdict] = {}
    with EventLog(db, read_only=True) as log:
        for ev in log.read(types=["judge.verdict"], stream_id=stream_of(jrid)):
            assert isinstance(ev.payload, JudgeVerdict)
            key = (ev.payload.item.trajectory_id, ev.payload.item.url_normalized)
            assert key not in out, f"two verdicts for {key}"
            out[key] = ev.payload
    return out


def batch_events(db: Path, jrid: str) -> list[Any]:
    with EventLog(db, read_only=True) as log:
        return [ev.payload for ev in log.read(types=["judge.batch.submitted", "judge.batch.polled",
                                                     "judge.batch.finished"], stream_id=stream_of(jrid))]


def judge(*args: str) -> tuple[int, dict[str, Any], str]:
    res = CliRunner().invoke(cli, ["judge", "--json", "--poll-s", "0.05", *args])
    return res.exit_code, msgspec.json.decode(res.stdout) if res.stdout.startswith("{") else {}, res.output


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_batch_labels_are_the_online_judges_item_for_item(store: Path, api: str) -> None:
    code, stats, out = judge("--db", str(store), "--sandbox", "--batch", "--api", api, "--judge-run-id", "b",
                             "--batch-size", "40")
    assert code == 0, out
    online, batched = verdicts(store, ONLINE), verdicts(store, "b")
    assert len(online) > 80 and set(batched) == set(online)
    assert all(batched[k].labels == online[k].labels and batched[k].valid == online[k].valid for k in online)
    events = batch_events(store, "b")
    submitted = [e for e in events if isinstance(e, JudgeBatchSubmitted)]
    finished = [e for e in events if isinstance(e, JudgeBatchFinished)]
    assert len(submitted) == len(finished) == -(-len(online) // 40) == stats["batch"]["batches"]
    assert all(e.api == api and len(e.request_sha256) == 64 and e.submission == 1 for e in submitted)
    assert sorted((r.trajectory_id, r.url_normalized) for e in submitted for r in e.items) == sorted(online)
    assert {v.batch_id for v in batched.values()} == {e.batch_id for e in submitted}
    assert sum(e.succeeded for e in finished) == len(online) and stats["batch"]["succeeded"] == len(online)
    # one polled event per status change: in_progress is never seen (no batch delay), each batch ends once
    polled = [e for e in events if isinstance(e, JudgeBatchPolled)]
    assert Counter(e.batch_id for e in polled) == Counter(e.batch_id for e in submitted)


def _sandbox_creates(app: Any) -> int:
    sb = app.state.sandbox
    return 0 if sb.batches is None else int(sb.batches.creates)


def end_batches(app: Any) -> None:
    """The sandbox's live batches end now, and later ones at once: the tests create them with an hour's delay, so
    none ends before the test has done what it does to a batch in progress (an event, not a race with a clock)."""
    sb = app.state.sandbox
    sb.batch_delay_s = 0.0
    for batch in sb.batches.batches.values():
        batch.ready_at = 0.0


@contextmanager
def reaped(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """A judge started in the background never outlives its test (a failed assertion kills and waits for it)."""
    try:
        yield
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def wait_submitted(store: Path, proc: subprocess.Popen[bytes], n: int, log: Path) -> None:
    """Until the running judge has recorded `n` judge.batch.submitted events (read through its read server)."""
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "no judge.batch.submitted event"
        row = None
        if Path(f"{store}.sock").exists():  # the judge holds the store and serves reads of it
            cur = open_remote(store)
            try:
                row = cur.execute("SELECT count(*) FROM events WHERE type = 'judge.batch.submitted'").fetchone()
            finally:
                cur.close()
        if row is not None and row[0] == n:
            return
        time.sleep(0.05)


def test_sigkill_while_polling_then_rerun_resumes_without_submitting(store: Path, tmp_path: Path) -> None:
    n_items = len(verdicts(store, ONLINE))
    size = 30
    n_batches = -(-n_items // size)
    app = create_app(batch_delay_s=3600.0)
    env = {**os.environ, "OPENAI_API_KEY": "sandbox"}
    with running(app) as root:
        cmd = [SEARCHTRACE, "judge", "--db", str(store), "--sandbox-url", root, "--judge-run-id", "k", "--batch",
               "--batch-size", str(size), "--poll-s", "0.1", "--no-progress", "--json"]
        with open(tmp_path / "first.log", "wb") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        with reaped(proc):
            wait_submitted(store, proc, n_batches, tmp_path / "first.log")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        assert proc.returncode == -signal.SIGKILL
        created = _sandbox_creates(app)
        assert created == n_batches and verdicts(store, "k") == {}
        end_batches(app)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        stats = msgspec.json.decode(done.stdout)
        assert _sandbox_creates(app) == created  # zero new submissions: the live batches were polled
        assert stats["batch"]["resumed"] == n_batches and stats["batch"]["batches"] == 0
    got = verdicts(store, "k")
    assert len(got) == n_items == stats["done"]  # every item judged exactly once (verdicts() refuses a second)
    online = verdicts(store, ONLINE)
    assert all(got[k].labels == online[k].labels for k in online)


def test_errored_and_expired_items_resubmitted_once_then_left_or_judged_online(store: Path) -> None:
    n_items = len(verdicts(store, ONLINE))
    plan = FaultPlan(seed=7, rates={"errored": 0.10, "expired": 0.05}, routes=frozenset({"batch"}))
    app = create_app(faults=plan)
    with running(app) as root:
        args = ["--db", str(store), "--sandbox-url", root, "--judge-run-id", "f", "--batch", "--batch-size", "50"]
        code, first, out = judge(*args)
        b = first["batch"]
        failed_once = b["errored"] + b["expired"] + b["canceled"]
        assert b["errored"] > 0 and b["expired"] > 0  # both kinds happened
        assert b["resubmitted"] > 0 and b["submitted"] == n_items + b["resubmitted"]
        # every failed item was resubmitted once; the ones that failed twice are left and counted
        assert b["succeeded"] + b["left"] == n_items and failed_once == b["resubmitted"] + b["left"]
        assert b["left"] > 0 and code == 1 and "left" in out
        assert len(verdicts(store, "f")) == n_items - b["left"]
        creates = _sandbox_creates(app)
        code, again, out = judge(*args, "--batch-fallback", "online")
        assert code == 0, out
        assert _sandbox_creates(app) == creates  # nothing is sent in a third batch
        assert again["batch"]["online"] == b["left"] and again["batch"]["left"] == 0
    got = verdicts(store, "f")
    online = verdicts(store, ONLINE)
    assert set(got) == set(online) and all(got[k].labels == online[k].labels for k in online)
    assert sum(isinstance(v.batch_id, str) for v in got.values()) == n_items - b["left"]
    sent = Counter(item_id(r.trajectory_id, r.url_normalized) for e in batch_events(store, "f")
                   if isinstance(e, JudgeBatchSubmitted) for r in e.items)
    assert max(sent.values()) == 2 and len(sent) == n_items
    # the report counts the same from the recorded events, over both invocations
    res = CliRunner().invoke(cli, ["report", "--db", str(store), "--judge-run-id", "f", "--json"])
    assert res.exit_code == 0, res.output
    jb = msgspec.json.decode(res.stdout)["judge_batches"]
    assert jb == {"batches": jb["batches"], "live": 0, "items": n_items, "submitted": b["submitted"],
                  "resubmitted": b["resubmitted"], "succeeded": b["succeeded"], "errored": b["errored"],
                  "expired": b["expired"], "canceled": 0, "online": b["left"], "left": 0, "pending": 0}
    assert jb["batches"] > 2 and jb["succeeded"] + jb["online"] == n_items
    text = CliRunner().invoke(cli, ["report", "--db", str(store), "--judge-run-id", "f"]).output
    assert (f"{b['errored']:,} errored, {b['expired']:,} expired, 0 canceled; {b['left']:,} judged online by "
            "fallback, 0 left unjudged") in " ".join(text.split())
    online_report = CliRunner().invoke(cli, ["report", "--db", str(store), "--judge-run-id", ONLINE, "--json"])
    assert msgspec.json.decode(online_report.stdout)["judge_batches"] is None
    assert "judge batches" not in CliRunner().invoke(cli, ["report", "--db", str(store), "--judge-run-id", ONLINE]).output


def report_json(db: Path, jrid: str, prices: Path) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["report", "--db", str(db), "--judge-run-id", jrid, "--prices", str(prices), "--json"])
    assert res.exit_code == 0, res.output
    return msgspec.json.decode(res.stdout)  # type: ignore[no-any-return]


def test_batch_judge_usd_is_the_batch_discount_of_the_online_runs(store: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('as_of = "2026-12-01"\n[search]\nbrave = 5.0\ntavily = 8.0\nfirecrawl = 1.0\n[fetch]\njina = 0.02\n'
                      '[models."sandbox-agent"]\ninput = 2.0\noutput = 8.0\n'
                      '[models."sandbox-judge"]\ninput = 1.25\ncached_input = 0.125\noutput = 10.0\n')
    code, _, out = judge("--db", str(store), "--sandbox", "--batch", "--judge-run-id", "b")
    assert code == 0, out
    online, batched = report_json(store, ONLINE, prices), report_json(store, "b", prices)
    assert online["providers"].keys() == batched["providers"].keys()
    for name, block in online["providers"].items():
        got = batched["providers"][name]
        assert block["judge_model_usd"] > 0 and block["judge_model_batch_usd"] == 0.0
        assert got["judge_model_usd"] == 0.5 * block["judge_model_usd"]  # exact: the same tokens at half the price
        assert got["judge_model_batch_usd"] == got["judge_model_usd"]  # all of it batched
        # the batched part is within the judge's cost, not beside it: the totals differ by the judge's saving
        assert got["usd_total"] == pytest.approx(block["usd_total"] - 0.5 * block["judge_model_usd"], rel=1e-12)
    # the text report shows the batched part under the judge's USD: here all of it
    text = CliRunner().invoke(cli, ["report", "--db", str(store), "--judge-run-id", "b", "--prices", str(prices)])
    rows = [line for line in text.output.splitlines() if "of which batched" in line]
    judge_rows = [line for line in text.output.splitlines() if "USD judge model" in line]
    assert len(rows) == len(judge_rows) >= 1  # one row per table, below the judge's USD with the same figures
    assert rows[0].split("│")[2:] == judge_rows[0].split("│")[2:] and "$" in rows[0]
    prices.write_text(prices.read_text().replace("as_of", "batch_discount = 0.25\nas_of"))
    quarter = report_json(store, "b", prices)
    assert all(quarter["providers"][n]["judge_model_usd"] == 0.25 * b["judge_model_usd"]
               for n, b in online["providers"].items())
    prices.write_text(prices.read_text().replace("batch_discount = 0.25", "batch_discount = 2"))
    res = CliRunner().invoke(cli, ["report", "--db", str(store), "--prices", str(prices)])
    assert isinstance(res.exception, BadInput) and "key batch_discount: the fraction" in str(res.exception)


def test_bad_batch_options_are_one_line_and_a_failing_batch_endpoint_is_an_event(store: Path) -> None:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    for args, said in ((["--api", "gemini"], "--batch: the gemini API has no batch endpoint here"),
                       (["--batch-size", "0"], "--batch-size must be 1 to 50,000")):
        res = CliRunner().invoke(cli, ["judge", "--db", str(store), "--sandbox", "--batch", *args])
        assert isinstance(res.exception, BadInput) and said in str(res.exception)
    res = CliRunner().invoke(cli, ["judge", "--db", str(store), "--sandbox", "--poll-s", "1"])
    assert res.exit_code == 2 and "go with --batch" in res.output

    async def down(request: Any) -> JSONResponse:
        return JSONResponse({"error": {"message": "overloaded"}}, status_code=503)

    app = Starlette(routes=[Route("/{path:path}", down, methods=["GET", "POST"])])
    with running(app) as root:
        code, stats, out = judge("--db", str(store), "--sandbox-url", root, "--batch", "--judge-run-id", "d",
                                 "--max-retries", "0")
    assert code == 1 and stats["failed"] == 1 and "batch endpoint failed" in stats["stopped"], out
    assert stats["batch"]["left"] == stats["items"] and "Traceback" not in out
    with EventLog(store, read_only=True) as log:
        failed = [ev.payload for ev in log.read(types=["call.failed"], stream_id=stream_of("d"))]
    assert len(failed) == 1 and failed[0].what == "batch:sandbox-judge" and failed[0].http_status == 503


def test_a_batch_cancelled_while_polling_is_resubmitted_once(store: Path, tmp_path: Path) -> None:
    from openai import OpenAI

    n_items = len(verdicts(store, ONLINE))
    app = create_app(batch_delay_s=3600.0)  # the first batch ends only by the cancel below, however slow this machine
    env = {**os.environ, "OPENAI_API_KEY": "sandbox"}
    with running(app) as root:
        cmd = [SEARCHTRACE, "judge", "--db", str(store), "--sandbox-url", root, "--judge-run-id", "c", "--batch",
               "--poll-s", "0.1", "--no-progress", "--json"]
        with open(tmp_path / "run.log", "wb") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=log)
        with reaped(proc):
            wait_submitted(store, proc, 1, tmp_path / "run.log")
            first = next(iter(app.state.sandbox.batches.batches))
            app.state.sandbox.batch_delay_s = 0.0  # the resubmitted batch is ready at once
            with OpenAI(base_url=f"{root}/openai/v1", api_key="sandbox", timeout=120) as client:
                assert client.batches.cancel(first).status == "cancelled"
                out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, (tmp_path / "run.log").read_text()
    b = msgspec.json.decode(out)["batch"]
    assert b["canceled"] == n_items and b["resubmitted"] == n_items and b["batches"] == 2
    assert b["succeeded"] == n_items and b["left"] == 0
    finished = [e for e in batch_events(store, "c") if isinstance(e, JudgeBatchFinished)]
    assert [(e.status, e.canceled, e.succeeded) for e in finished] == [("cancelled", n_items, 0),
                                                                       ("completed", 0, n_items)]
    assert len(verdicts(store, "c")) == n_items
