"""`searchtrace bench chaos`: record and judge under a fault mix with SIGKILLs, then prove nothing was lost or paid twice.

The sandbox runs as a real HTTP server on 127.0.0.1 (in a thread of this process) with a FaultPlan: per request
attempt ~10% 429 with `Retry-After: 1`, 3% 500 + 3% 503, 5% timeouts (the server hangs `hang_s`, the client gives
up after `timeout_s`), 2% malformed and 1% truncated bodies, and 15% oversized (3 MB) pages on the Jina route.
Questions: the sandbox's 36 questions repeated under new qids (`c000-<qid>`, …) up to `--trajectories / 3` rows,
recorded for the three providers (so 300 trajectories = 100 questions × 3 providers). `searchtrace record` and
then `searchtrace judge` run as subprocesses; `--kills` times (seeded) the running one gets SIGKILL once the
sandbox has served a random number of further requests, and is started again until it exits 0. After each kill
the sandbox's per-trace request counters and the store's finished trajectories / committed verdicts are noted.

`record` is run again after a clean exit until the run is finished: a (question, provider) cell whose trajectory
ended in `error` is recorded again by the next `record` (a new attempt that supersedes it, up to
`limits.max_attempts`), so the count of such runs is a figure too.

At the end: `searchtrace verify` passes; exactly one finished trajectory per (question, provider) counting only
the latest attempt of each cell (superseded errored attempts are counted apart); exactly one verdict per judge item; no trajectory finished (no verdict committed) before a kill got any later request
(sandbox counters per trace id); every injected fault kind shows as a typed event; `report --json` computes;
a last `record` and `judge` make no request at all. `--readme FILE` writes the figures between
`<!-- reliability:begin -->` and `<!-- reliability:end -->` in FILE.
"""

from __future__ import annotations

import contextvars
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import duckdb

from searchtrace.adapters import TRACE_HEADER_RAW, paper_providers
from searchtrace.analytics import not_superseded
from searchtrace.store import OFFLINE

PROVIDERS = paper_providers()
RATES = {"429": 0.10, "500": 0.03, "503": 0.03, "timeout": 0.05, "malformed": 0.02, "truncated": 0.01,
         "oversized": 0.15}
ROUTES = ("chat", *PROVIDERS, "jina")
JUDGE_RUN = "sandbox-judge@judge/1"
RUN_ID = "chaos"
BEGIN, END = "<!-- reliability:begin -->", "<!-- reliability:end -->"
SEARCHTRACE = str(Path(sys.executable).parent / "searchtrace")
# Per injected kind, the typed events that show it: (event type, payload field, values).
EVIDENCE: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "429": [("call.retried", "reason", ("429",))],
    "500": [("call.retried", "reason", ("5xx",))],
    "503": [("call.retried", "reason", ("5xx",))],
    "timeout": [("call.retried", "reason", ("timeout",))],
    "malformed": [("search.completed", "status", ("bad_response",)), ("fetch.completed", "status", ("bad_response",)),
                  ("trajectory.finished", "reason", ("error",))],
    "truncated": [("search.completed", "status", ("bad_response",)), ("fetch.completed", "status", ("bad_response",)),
                  ("trajectory.finished", "reason", ("error",))],
    "oversized": [("fetch.completed", "status", ("too_large",))],
}


@dataclass
class Kill:
    """One SIGKILL: when, and what was durable at that moment."""

    phase: str
    at_request: int
    finished: set[str]
    verdicts: set[tuple[str, str]]
    counters: Counter[tuple[str, str | None]]


@dataclass
class Chaos:
    """One chaos run's settings and what it observed."""

    workdir: Path
    trajectories: int = 300
    kills: int = 20
    seed: int = 7
    timeout_s: float = 1.0
    hang_s: float = 3.0
    max_wait_s: float = 1.0
    env: dict[str, str] | None = None
    log_args: tuple[str, ...] = ()
    rates: dict[str, float] = field(default_factory=lambda: dict(RATES))
    killed: list[Kill] = field(default_factory=list)
    starts: Counter[str] = field(default_factory=Counter)
    injected: Counter[tuple[str, str]] = field(default_factory=Counter)
    served: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    fault_log: list[tuple[int, str, str | None]] = field(default_factory=list)  # (kills so far, kind, trace id)

    @property
    def db(self) -> Path:
        return self.workdir / "chaos.duckdb"


def write_inputs(c: Chaos) -> int:
    """The question file (sandbox questions repeated under new qids) and run.toml; returns the question count."""
    from searchtrace.adapters.sandbox import default_world, question_rows

    base = question_rows(default_world().questions)
    n = max(1, c.trajectories // len(PROVIDERS))
    rows = [{**base[i % len(base)], "qid": f"c{i // len(base):03d}-{base[i % len(base)]['qid']}"} for i in range(n)]
    (c.workdir / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ep = (f"rps = 10000\nconcurrency = 32\ntimeout_s = {c.timeout_s}\nmax_retries = 4\nmax_wait_s = {c.max_wait_s}\n")
    text = f'run_id = "{RUN_ID}"\n[agent]\nmodel = "sandbox-agent"\n{ep}'
    text += "".join(f"[providers.{p}]\n{ep}" for p in PROVIDERS)
    text += f'[fetch]\n{ep}cache_dir = "{c.workdir / "cache"}"\n[limits]\nmax_trajectories = 24\n'
    text += '[dataset]\npath = "questions.jsonl"\n'
    (c.workdir / "run.toml").write_text(text)
    return n


_FAULT: contextvars.ContextVar[list[str]] = contextvars.ContextVar("chaos_fault")
_ROUTE_OF = {"openai": "chat", **{p: p for p in PROVIDERS}, "jina": "jina"}


class Served:
    """ASGI wrapper: counts per (route, trace id) the requests answered 200 without an injected fault (paid calls)."""

    def __init__(self, app: Any, c: Chaos) -> None:
        self.app, self.c, self.state = app, c, app.state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        faults: list[str] = []
        _FAULT.set(faults)
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, watch)
        route = _ROUTE_OF.get(scope["path"].strip("/").split("/", 1)[0])
        trace = dict(scope["headers"]).get(TRACE_HEADER_RAW, b"").decode() or None
        if route and status == [200] and not faults:
            self.c.served[(route, trace)] += 1
        for kind in faults:
            self.c.fault_log.append((len(self.c.killed), kind, trace))


def make_app(c: Chaos) -> Any:
    """The sandbox app with the chaos FaultPlan; every fault it decides is counted per (route, kind)."""
    from searchtrace.adapters.sandbox import FaultPlan, create_app

    app = create_app(faults=FaultPlan(seed=c.seed, rates=dict(c.rates)), hang_s=c.hang_s)
    sb = app.state.sandbox
    decide = sb.fault
    lock = threading.Lock()

    def counted(route: str, key: str, marker_text: str) -> str | None:
        kind: str | None = decide(route, key, marker_text)
        if kind is not None:
            with lock:
                c.injected[(route, kind)] += 1
            _FAULT.get([]).append(kind)
        return kind

    sb.fault = counted
    return Served(app, c)


def _copy(counter: Counter[Any]) -> Counter[Any]:
    for _ in range(100):
        try:
            return Counter(dict(counter))
        except RuntimeError:  # the server thread added a key meanwhile
            time.sleep(0.001)
    raise RuntimeError("counters kept changing")


def durable(db: Path) -> tuple[set[str], set[tuple[str, str]]]:
    """(trajectory ids with trajectory.finished, (trajectory id, url) with a verdict) committed in the store now."""
    if not db.exists():
        return set(), set()
    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        if not (con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'events'").fetchone()
                or (0,))[0]:
            return set(), set()
        done = {r[0] for r in con.execute("SELECT payload->>'trajectory_id' FROM events WHERE type = 'trajectory.started' "
                                          "AND stream_id IN (SELECT stream_id FROM events WHERE type = 'trajectory.finished')").fetchall()}
        verdicts = {(r[0], r[1]) for r in con.execute(
            "SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized' FROM events "
            "WHERE type = 'judge.verdict' AND run_id = ?", [JUDGE_RUN]).fetchall()}
        return done, verdicts
    finally:
        con.close()


def item_keys(db: Path) -> set[tuple[str, str]]:
    """Every judge item of the store as (trajectory id, normalised URL)."""
    from searchtrace.analytics import judge_items

    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        return {(i.trajectory_id, i.url_normalized) for i in judge_items(con)}
    finally:
        con.close()


def drive(c: Chaos, app: Any, phase: str, cmd: list[str], kills: int, expected_requests: int, rng: random.Random) -> int:
    """Runs `cmd` until it exits 0 (judge: also 1 = some calls failed, run again), SIGKILLing it `kills` times."""
    totals: Counter[str] = app.state.totals
    done_kills = 0
    env = {**os.environ, **(c.env or {})}
    deadline = time.monotonic() + 1800
    phase_start = sum(totals.values())
    with open(c.workdir / f"{phase}.out", "a") as out, open(c.workdir / f"{phase}.err", "a") as err:
        while True:
            start = sum(totals.values())
            kill_at = None
            if done_kills < kills:  # uniform within this kill's share of the (under-)estimated requests still to come
                left = kills - done_kills
                remaining = max(2 * left, expected_requests - (start - phase_start))
                kill_at = start + rng.randint(1, max(1, remaining // left))
            c.starts[phase] += 1
            err.flush()
            offset = err.tell()
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
            while proc.poll() is None:
                if kill_at is not None and sum(totals.values()) >= kill_at:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
                if time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError(f"{phase} did not finish in time")
                time.sleep(0.005)
            if proc.returncode == -signal.SIGKILL:
                finished, verdicts = durable(c.db)
                c.killed.append(Kill(phase, sum(totals.values()), finished, verdicts, _copy(app.state.counters)))
                done_kills += 1
                continue
            if proc.returncode == 0 and (phase != "record" or run_finished(c.db)):
                return done_kills
            with open(c.workdir / f"{phase}.err", errors="replace") as f:
                f.seek(offset)
                said = f.read()
            # record exit 1 = cells whose calls failed for good ended in error (it says so): the next record retries
            # them; so does a record that exits 0 before the run is finished
            if phase == "record" and "Traceback" not in said and (
                    proc.returncode == 0 or (proc.returncode == 1 and "ended in error" in said)):
                c.starts["record_rerun_for_errored_cells"] += 1
                continue
            # judge exit 1 = some calls failed for good after their retries (it says so): run it again
            if phase == "judge" and proc.returncode == 1 and "judge call failed" in said and "Traceback" not in said:
                c.starts["judge_rerun_after_failed_calls"] += 1
                continue
            raise RuntimeError(f"{phase} exited {proc.returncode}: {said[-2000:]}")


def cli(c: Chaos, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(c.env or {})}
    return subprocess.run([SEARCHTRACE, *c.log_args, *args], capture_output=True, text=True, env=env, timeout=600)


def event_counts(db: Path) -> dict[str, dict[str, int]]:
    """Typed failure evidence: counts of call.retried reasons, completion statuses, finish reasons, verdict validity."""
    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        out: dict[str, dict[str, int]] = {}
        for typ, fld in (("call.retried", "reason"), ("search.completed", "status"), ("fetch.completed", "status"),
                         ("trajectory.finished", "reason"), ("judge.verdict", "valid")):
            rows = con.execute(f"SELECT payload->>'{fld}', count(*) FROM events WHERE type = ? GROUP BY 1 ORDER BY 1",
                               [typ]).fetchall()
            out[typ] = {str(k): int(n) for k, n in rows}
        return out
    finally:
        con.close()


def run_finished(db: Path) -> bool:
    """The chaos run has its run.finished: every cell is final (answered, max_iterations, or errored on every attempt)."""
    if not db.exists():
        return False
    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        row = con.execute("SELECT count(*) FROM events WHERE type = 'run.finished' AND run_id = ?", [RUN_ID]).fetchone()
        return bool(row and row[0])
    finally:
        con.close()


_STARTS = f"""
WITH s AS (SELECT stream_id, position, payload->>'qid' AS qid, payload->>'provider' AS provider,
                  payload->>'trajectory_id' AS trajectory_id, payload->>'supersedes' AS supersedes
           FROM events WHERE type = 'trajectory.started'),
cur AS (SELECT * FROM s WHERE {not_superseded("s", starts="s")})
"""


def cells(db: Path) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], int]:
    """Finished trajectories per (qid, provider) counting only the latest attempt of each cell, verdicts per
    (trajectory id, url) in the chaos judge run, and the errored attempts a later attempt superseded."""
    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        fin = Counter({(q, p): int(n) for q, p, n in con.execute(
            f"{_STARTS} SELECT cur.qid, cur.provider, count(*) FROM events f JOIN cur ON cur.stream_id = f.stream_id "
            "WHERE f.type = 'trajectory.finished' GROUP BY 1, 2").fetchall()})
        ver = Counter({(t, u): int(n) for t, u, n in con.execute(
            "SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized', count(*) FROM events "
            "WHERE type = 'judge.verdict' AND run_id = ? GROUP BY 1, 2", [JUDGE_RUN]).fetchall()})
        row = con.execute(f"{_STARTS} SELECT (SELECT count(*) FROM s) - (SELECT count(*) FROM cur)").fetchone()
        return fin, ver, int(row[0]) if row else 0
    finally:
        con.close()


def repeated_calls(c: Chaos, final: Counter[tuple[str, str | None]]) -> int:
    """Requests that reached the sandbox after a kill for a trajectory finished / a verdict committed before it."""
    repeats = 0
    for k in c.killed:
        for tid in k.finished:
            repeats += sum(final[(r, tid)] - k.counters[(r, tid)] for r in ROUTES)
        for tid, url in k.verdicts:
            trace = f"{JUDGE_RUN}|{tid}|{url}"
            repeats += final[("chat", trace)] - k.counters[("chat", trace)]
    return repeats


def settled(c: Chaos) -> Counter[str]:
    """Injected faults per kind whose request belongs to work no later kill threw away (so an event must show them)."""
    out: Counter[str] = Counter()
    for kills_before, kind, trace in c.fault_log:
        if trace is None:
            continue
        if trace.startswith(JUDGE_RUN + "|"):
            tid, url = trace[len(JUDGE_RUN) + 1:].split("|", 1)
            lost = any((tid, url) not in k.verdicts for k in c.killed[kills_before:])
        else:
            lost = any(trace not in k.finished for k in c.killed[kills_before:])
        out[kind] += not lost
    return out


def redone_calls(c: Chaos, db: Path) -> dict[str, int]:
    """Calls the sandbox answered (200, no fault) that the store does not use: work a kill cut off before its commit.

    Per trajectory, chat answers beyond its `model.responded` events and search answers beyond its `ok`
    `search.completed` events; per judge item, answers beyond its one verdict.
    """
    con = duckdb.connect(str(db), read_only=True, config=OFFLINE)
    try:
        used: Counter[tuple[str, str | None]] = Counter()
        for tid, provider, typ, n in con.execute(
            "SELECT s.payload->>'trajectory_id', s.payload->>'provider', e.type, count(*) FROM events e "
            "JOIN events s ON s.stream_id = e.stream_id AND s.type = 'trajectory.started' "
            "WHERE e.type = 'model.responded' OR (e.type = 'search.completed' AND e.payload->>'status' = 'ok') "
            "GROUP BY 1, 2, 3").fetchall():
            used[("chat" if typ == "model.responded" else provider, tid)] += int(n)
        for tid, url in con.execute("SELECT payload->>'$.item.trajectory_id', payload->>'$.item.url_normalized' FROM "
                                    "events WHERE type = 'judge.verdict' AND payload->>'raw_digest' IS NOT NULL "
                                    "AND run_id = ?", [JUDGE_RUN]).fetchall():
            used[("chat", f"{JUDGE_RUN}|{tid}|{url}")] += 1
    finally:
        con.close()
    out = {"record_chat": 0, "record_search": 0, "judge": 0}
    for (route, trace), n in c.served.items():
        if route == "jina" or trace is None:
            continue  # fetches are cached by URL across trajectories, so a redone fetch is not a paid call
        extra = max(0, n - used[(route, trace)])
        out["judge" if trace.startswith(JUDGE_RUN + "|") else "record_chat" if route == "chat" else "record_search"] += extra
    out["answered_total"] = sum(n for (route, trace), n in c.served.items() if route != "jina" and trace is not None)
    return out


def run_chaos(c: Chaos) -> dict[str, Any]:
    """The whole chaos run; returns the figures with a `problems` list (empty when every check passed)."""
    from searchtrace.adapters.sandbox import running

    t0 = time.perf_counter()
    c.workdir.mkdir(parents=True, exist_ok=True)
    n_questions = write_inputs(c)
    expected = n_questions * len(PROVIDERS)
    rng = random.Random(c.seed)
    app = make_app(c)
    problems: list[str] = []
    with running(app=app) as root:
        base = [SEARCHTRACE, *c.log_args]
        rec = [*base, "record", "--config", str(c.workdir / "run.toml"), "--sandbox-url", root, "--db", str(c.db),
               "--no-progress"]
        record_kills = c.kills // 2
        done = drive(c, app, "record", rec, record_kills, 7 * expected, rng)
        items = len(item_keys(c.db))
        judge = [*base, "judge", "--db", str(c.db), "--sandbox-url", root, "--timeout", str(c.timeout_s),
                 "--max-retries", "4", "--concurrency", "16", "--no-progress"]
        done += drive(c, app, "judge", judge, c.kills - done, items, rng)
        before = sum(app.state.totals.values())
        again = [cli(c, *rec[len(base):]), cli(c, *judge[len(base):])]
        idle = sum(app.state.totals.values()) - before
        final = _copy(app.state.counters)
        requests = dict(_copy(app.state.totals))
    if any(p.returncode != 0 for p in again):
        problems.append(f"the last record/judge exited {[p.returncode for p in again]}")
    if idle:
        problems.append(f"a completed record + judge made {idle} more requests")
    verify = cli(c, "verify", "--db", str(c.db))
    if verify.returncode != 0:
        problems.append(f"verify failed: {verify.stdout.strip()} {verify.stderr.strip()}")
    report = cli(c, "report", "--json", "--db", str(c.db), "--judge-run-id", JUDGE_RUN)
    try:
        rep = json.loads(report.stdout)
        per = {p: v["trajectories"] for p, v in rep["providers"].items()}
        if per != {p: n_questions for p in PROVIDERS}:
            problems.append(f"report trajectories per provider {per}")
    except (ValueError, KeyError, TypeError):
        problems.append(f"report --json did not compute: {report.stderr.strip()[-300:]}")
    fin, ver, superseded = cells(c.db)
    lost_traj = expected - len(fin)
    dup_traj = sum(n - 1 for n in fin.values())
    keys = item_keys(c.db)
    items_after = len(keys)
    lost_verdicts = len(keys - set(ver))
    if set(ver) - keys:
        problems.append(f"{len(set(ver) - keys)} verdicts for something that is not a judge item")
    dup_verdicts = sum(n - 1 for n in ver.values())
    repeats = repeated_calls(c, final)
    for name, value in (("trajectories lost", lost_traj), ("duplicate trajectories", dup_traj),
                        ("verdicts lost", lost_verdicts), ("duplicate verdicts", dup_verdicts),
                        ("finished calls repeated", repeats), ("judge items changed", items_after - items)):
        if value:
            problems.append(f"{name}: {value}")
    if done != c.kills:
        problems.append(f"only {done} of {c.kills} kills landed before the work ran out")
    events = event_counts(c.db)
    redone = redone_calls(c, c.db)
    by_kind: Counter[str] = Counter()
    for (_, kind), n in c.injected.items():
        by_kind[kind] += n
    shown = {}
    kept = settled(c)
    for kind in sorted(by_kind):
        seen = sum(events.get(t, {}).get(v, 0) for t, f, vals in EVIDENCE.get(kind, []) for v in vals)
        shown[kind] = seen
        if kept[kind] and not seen:
            problems.append(f"fault kind {kind} hit committed work {kept[kind]} times but no typed event shows it")
    for kind in c.rates:
        if not by_kind[kind]:
            problems.append(f"fault kind {kind} was never injected (run larger)")
    retried = sum(events["call.retried"].values())
    failures = (sum(n for s, n in events["search.completed"].items() if s != "ok")
                + sum(n for s, n in events["fetch.completed"].items() if s != "ok")
                + events["trajectory.finished"].get("error", 0))
    return {
        "questions": n_questions, "providers": len(PROVIDERS), "trajectories": sum(fin.values()),
        "superseded_attempts": superseded,
        "judge_items": items_after, "verdicts": sum(ver.values()),
        "verdicts_valid": events["judge.verdict"].get("true", 0), "verdicts_invalid": events["judge.verdict"].get("false", 0),
        "requests": requests, "requests_total": sum(requests.values()),
        "faults_injected": dict(sorted(by_kind.items())), "faults_injected_total": sum(by_kind.values()),
        "faults_by_route": {r: {k: n for (rr, k), n in sorted(c.injected.items()) if rr == r} for r in ROUTES},
        "faults_survived": sum(by_kind.values()) if not problems else None,
        "typed_events_per_kind": shown, "faults_in_committed_work": dict(sorted(kept.items())), "retries_recorded": retried, "failures_recorded": failures,
        "events": events, "kills": done, "kills_record": sum(k.phase == "record" for k in c.killed),
        "kills_judge": sum(k.phase == "judge" for k in c.killed), "starts": dict(c.starts),
        "kill_points": [[k.phase, k.at_request, len(k.finished), len(k.verdicts)] for k in c.killed],
        "redone": redone, "lost": lost_traj + lost_verdicts, "duplicates": dup_traj + dup_verdicts, "repeated_calls": repeats,
        "verify": verify.returncode == 0, "report": not any(p.startswith("report") for p in problems),
        "wall_s": round(time.perf_counter() - t0, 1), "problems": problems,
        "settings": {"seed": c.seed, "rates": c.rates, "timeout_s": c.timeout_s, "hang_s": c.hang_s,
                     "max_wait_s": c.max_wait_s},
    }


def _n(value: int | None) -> str:
    return "NONE (a check failed)" if value is None else f"{value:,}"


def _redone(r: dict[str, int]) -> str:
    n = r["record_chat"] + r["record_search"] + r["judge"]
    share = f"{100 * n / r['answered_total']:.1f}%" if r["answered_total"] else "n/a"
    return (f"{n:,} of {r['answered_total']:,} ({share}): {r['record_chat']} agent chat + {r['record_search']} search "
            f"(trajectories cut mid-way start over), {r['judge']} judge (answered, not yet committed)")


def _kv(counts: dict[str, int], *skip: str) -> str:
    return ", ".join(f"{k} {n:,}" for k, n in counts.items() if k not in skip) or "none"


def markdown(f: dict[str, Any]) -> str:
    """The figures as the README's reliability section body."""
    kinds = ", ".join(f"{k} {n}" for k, n in f["faults_injected"].items())
    ev = f["events"]
    lines = [
        f"Measured by `searchtrace bench chaos --trajectories {f['trajectories']} --kills {f['kills']} --seed "
        f"{f['settings']['seed']}` (sandbox as a real server on 127.0.0.1, {f['wall_s']} s):",
        "",
        "| figure | value |",
        "|---|---|",
        f"| trajectories recorded ({f['questions']} questions × {f['providers']} providers) | {f['trajectories']} |",
        f"| errored attempts recorded again by the next `record` (superseded, kept in the log) | "
        f"{f.get('superseded_attempts', 0)} ({f['starts'].get('record_rerun_for_errored_cells', 0)} extra `record` runs) |",
        f"| judge items / verdicts (valid + invalid) | {f['judge_items']} / {f['verdicts']} "
        f"({f['verdicts_valid']} + {f['verdicts_invalid']}) |",
        f"| requests served by the sandbox | {f['requests_total']:,} |",
        f"| faults injected (sandbox counters) | {f['faults_injected_total']:,}: {kinds} |",
        f"| faults survived | {_n(f['faults_survived'])} of {f['faults_injected_total']:,}: "
        f"{f['retries_recorded']} retries recorded (`call.retried`), {f['failures_recorded']} typed failures |",
        f"| faults that hit committed work (not thrown away by a kill) / typed events showing them | "
        f"{sum(f['faults_in_committed_work'].values()):,} / {f['retries_recorded'] + f['failures_recorded']:,} |",
        f"| typed failure events | `call.retried` {_kv(ev['call.retried'])}; `search.completed` "
        f"{_kv(ev['search.completed'], 'ok')}; `fetch.completed` {_kv(ev['fetch.completed'], 'ok')}; "
        f"`trajectory.finished` {_kv(ev['trajectory.finished'], 'answered', 'max_iterations')} |",
        f"| SIGKILLs survived (record + judge) | {f['kills']} ({f['kills_record']} + {f['kills_judge']}) |",
        f"| trajectories or verdicts lost / duplicated | {f['lost']} / {f['duplicates']} |",
        f"| finished calls paid twice (sandbox counters per trace id) | {f['repeated_calls']} |",
        f"| answered calls redone because a kill cut off their uncommitted work | {_redone(f['redone'])} |",
        f"| `searchtrace verify` / `report --json` | {'pass' if f['verify'] else 'FAIL'} / "
        f"{'computes' if f['report'] else 'FAIL'} |",
    ]
    if f["problems"]:
        lines += ["", "Problems: " + "; ".join(f["problems"])]
    return "\n".join(lines) + "\n"


def write_section(path: Path, body: str) -> None:
    """Replaces the marked section of `path` (appends a `## Reliability` section with markers when absent)."""
    text = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{body}{END}"
    if BEGIN in text and END in text.split(BEGIN, 1)[1]:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + f"## Reliability\n\n{block}\n"
    path.write_text(text)


@click.command("chaos")
@click.option("--trajectories", default=300, show_default=True, type=click.IntRange(3, 30_000))
@click.option("--kills", default=20, show_default=True, type=click.IntRange(0, 1000), help="SIGKILLs across record and judge.")
@click.option("--seed", default=7, show_default=True, type=int, help="Seed of the fault plan and the kill moments.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the store and logs here (default: a temporary folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the figures into the marked reliability section of this file.")
def command(trajectories: int, kills: int, seed: int, workdir: Path | None, as_json: bool, readme: Path | None) -> None:
    """Record + judge under faults and SIGKILLs; check nothing was lost or paid twice; print the figures."""
    with tempfile.TemporaryDirectory(prefix="searchtrace-chaos-") as tmp:
        figures = run_chaos(Chaos(workdir or Path(tmp), trajectories=trajectories, kills=kills, seed=seed))
    if readme is not None:
        write_section(readme, markdown(figures))
    if as_json:
        click.echo(json.dumps(figures))
    else:
        click.echo(markdown(figures), nl=False)
    if figures["problems"]:
        raise SystemExit(1)
