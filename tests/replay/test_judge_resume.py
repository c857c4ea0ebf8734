"""A judge run SIGKILLed half-way and resumed: exactly one verdict per item, and no item judged twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from searchtrace.adapters import normalize_url
from searchtrace.replay._judge import stream_of
from searchtrace.store import EventLog, JudgeVerdict
from tests.replay.test_judge import build_store

SEARCHTRACE = str(Path(sys.executable).with_name("searchtrace"))
N_DOCS = 12
# `!fault:slow` makes the sandbox answer each judge call after 250 ms, so the run is killed mid-flight.
DOCS: list[tuple[str, str, str | None]] = [(f"https://s{i}.example/page", f"Zembla Works, part {i}. !fault:slow", None) for i in range(N_DOCS)]
TRAJECTORIES = ("t1", "t2")


def chat_counts(app: object) -> Counter[str]:
    counters = app.state.counters  # type: ignore[attr-defined]
    return Counter({str(trace): n for (route, trace), n in counters.items() if route == "chat"})


def verdict_keys(db: Path) -> list[str]:
    with EventLog(db, read_only=True) as log:
        out = []
        for ev in log.read(types=["judge.verdict"], stream_id=stream_of("j1")):
            assert isinstance(ev.payload, JudgeVerdict)
            out.append(f"j1|{ev.payload.item.trajectory_id}|{ev.payload.item.url_normalized}")
        return out


def judge_cmd(db: Path, root: str) -> list[str]:
    return [SEARCHTRACE, "judge", "--db", str(db), "--sandbox-url", root, "--judge-run-id", "j1",
            "--concurrency", "3", "--rps", "0", "--no-progress"]


def test_sigkill_half_way_then_resume(tmp_path: Path) -> None:
    from searchtrace.adapters.sandbox import create_app, running

    db = tmp_path / "kill.duckdb"
    build_store(db, {t: DOCS for t in TRAJECTORIES})
    items = {f"j1|{t}|{normalize_url(u)}" for t in TRAJECTORIES for u, _, _ in DOCS}
    items |= {f"j1|{t}|{normalize_url(DOCS[0][0] + '?utm_source=x')}" for t in TRAJECTORIES}  # same item as DOCS[0]
    assert len(items) == N_DOCS * len(TRAJECTORIES)
    app = create_app()
    env = {**os.environ, "OPENAI_API_KEY": "sandbox"}
    with running(app) as root:
        with open(tmp_path / "first.log", "wb") as out:
            proc = subprocess.Popen(judge_cmd(db, root), env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while sum(chat_counts(app).values()) < len(items) // 2:
            assert proc.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "the judge run made no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)  # a hang guard: a killed process on a loaded machine may take seconds to be reaped
        assert proc.returncode == -signal.SIGKILL
        seen_before = chat_counts(app)
        kept = verdict_keys(db)
        # killed half-way: some verdicts committed, some not; what was committed is whole and unique
        assert 0 < len(kept) < len(items) and len(set(kept)) == len(kept) and set(kept) <= items
        # at most the in-flight calls (concurrency 3) were answered but not committed
        assert set(kept) <= set(seen_before) and len(set(seen_before) - set(kept)) <= 3

        done = subprocess.run(judge_cmd(db, root), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"{len(kept)} already judged" in done.stdout
    final = verdict_keys(db)
    assert sorted(final) == sorted(items)  # exactly one verdict per item
    resumed = chat_counts(app) - seen_before
    # the resumed run called only the items without a verdict, each once; no committed item was judged twice
    assert set(resumed) == items - set(kept) and set(resumed.values()) == {1}
    assert all(chat_counts(app)[k] == 1 for k in kept)
