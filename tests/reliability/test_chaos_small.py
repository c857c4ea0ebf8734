"""The chaos suite at a small size (30 trajectories, 4 SIGKILLs): faults everywhere, nothing lost, nothing paid twice,
and no key in any artifact of it (one chaos run serves both: each costs ~20 s of CPU)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from searchtrace.benchmarks._chaos import RATES, SEARCHTRACE, Chaos, markdown, run_chaos, write_section
from tests.reliability.test_security import SECRETS, everything, leaks


@pytest.mark.slow  # ~20 s, ~25 s CPU: about ten `searchtrace` processes (4 killed) against a real server
def test_chaos_small(tmp_path: Path) -> None:
    rates = {**RATES, "oversized": 0.4}  # a small run fetches few pages: make oversized ones common enough
    work = tmp_path / "chaos"
    figures = run_chaos(Chaos(work, trajectories=30, kills=4, seed=11, timeout_s=0.5, hang_s=2.0, max_wait_s=0.1,
                              rates=rates, env={**SECRETS, "SEARCHTRACE_LOG_JSON": "1"},
                              log_args=("--log-json", "-vv")))
    assert figures["problems"] == [], figures["problems"]
    assert figures["trajectories"] == 30 and figures["kills"] == 4
    assert figures["kills_record"] >= 1 and figures["kills_judge"] >= 1
    assert figures["verdicts"] == figures["judge_items"] > 0
    assert figures["lost"] == 0 and figures["duplicates"] == 0 and figures["repeated_calls"] == 0
    assert set(figures["faults_injected"]) >= set(RATES)
    assert figures["verify"] and figures["report"]
    assert figures["redone"]["answered_total"] > 0  # the paid-call accounting saw the run
    # the figures land between the markers of a README, and a second write replaces them
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n## Reliability\n\n<!-- reliability:begin -->\nold\n<!-- reliability:end -->\n\ntail\n")
    write_section(readme, markdown(figures))
    write_section(readme, markdown(figures))
    text = readme.read_text()
    assert "old" not in text and text.count("<!-- reliability:begin -->") == 1 and text.endswith("tail\n")
    assert "| SIGKILLs survived (record + judge) | 4 (" in text and "| `searchtrace verify` / `report --json` |" in text
    keys_reach_no_artifact(work, tmp_path)


def test_a_call_repeated_after_a_kill_is_counted() -> None:
    """The no-double-payment check can fail: requests after a kill for finished work are counted per route."""
    from collections import Counter

    from searchtrace.benchmarks._chaos import JUDGE_RUN, Kill, repeated_calls

    trace = f"{JUDGE_RUN}|t2|https://a.test/"
    c = Chaos(Path("unused"))
    c.killed.append(Kill("record", 10, {"t1"}, {("t2", "https://a.test/")}, Counter({("chat", "t1"): 3, ("chat", trace): 1})))
    assert repeated_calls(c, Counter({("chat", "t1"): 3, ("chat", trace): 1, ("chat", "t3"): 9})) == 0
    assert repeated_calls(c, Counter({("chat", "t1"): 4, ("jina", "t1"): 1, ("chat", trace): 2})) == 3


def keys_reach_no_artifact(work: Path, tmp_path: Path) -> None:
    """The chaos run's store, logs, cache, its report/export/sql/verify outputs, a rejected key's error line and
    one-off calls through faults at debug level: no key anywhere (docs/concepts/security.md)."""
    db = work / "chaos.duckdb"
    run_env = {**os.environ, **SECRETS, "SEARCHTRACE_LOG_JSON": "1"}
    outputs = work / "outputs"
    outputs.mkdir()
    for name, argv in (
        ("report-json", ["report", "--db", str(db), "--json"]),
        ("report-html", ["report", "--db", str(db), "--html", str(outputs / "report.html")]),
        ("export", ["export", "--db", str(db), "--out", str(outputs / "export")]),
        ("sql", ["sql", "--db", str(db), "--json", "SELECT type, payload FROM events LIMIT 200"]),
        ("verify", ["verify", "--db", str(db)]),
    ):
        done = subprocess.run([SEARCHTRACE, "--log-json", "-vv", *argv], capture_output=True, env=run_env, timeout=300)
        assert done.returncode == 0, (name, done.stderr[-500:])
        (outputs / f"{name}.stdout").write_bytes(done.stdout)
        (outputs / f"{name}.stderr").write_bytes(done.stderr)
    # a rejected key: the error line names the endpoint, never the key
    bad = {k: "bad-" + v for k, v in SECRETS.items()}
    from searchtrace.adapters.sandbox import running

    with running() as root:
        rejected = subprocess.run([SEARCHTRACE, "--log-json", "-vv", "record", "--config", str(work / "run.toml"),
                                   "--sandbox-url", root, "--db", str(tmp_path / "never.duckdb")],
                                  capture_output=True, env={**os.environ, **bad}, timeout=120)
        # one-off calls with the good keys, through a retry and a provider error, logs at debug level
        for i, argv in enumerate([
            *[["search", "--provider", p, "--base-url", f"{root}/{p}", "--max-retries", "2", f"zebra {marker}"]
              for p in ("brave", "tavily", "firecrawl") for marker in ("!fault:500x1", "!fault:401")],
            ["fetch", "--base-url", f"{root}/jina", "--cache-dir", str(outputs / "probe-cache"),
             "https://faults.sandbox.test/page?!fault:503x1"],
        ]):
            probe = subprocess.run([SEARCHTRACE, "--log-json", "-vv", *argv], capture_output=True, env=run_env,
                                   timeout=120)
            assert probe.returncode in (0, 1, 2) and (probe.stdout or probe.stderr), argv
            (outputs / f"probe-{i}.out").write_bytes(probe.stdout + probe.stderr)
    (outputs / "rejected.stderr").write_bytes(rejected.stderr + rejected.stdout)
    assert rejected.returncode == 2 and b"401" in rejected.stderr, rejected.stderr[-500:]
    assert any((outputs / "probe-cache").rglob("*.gz")) or any((outputs / "probe-cache").rglob("*"))
    # the scan is not vacuous: JSON debug logs were written, the cache holds pages, the exports exist
    assert any(line.startswith(b"{") for line in (work / "record.err").read_bytes().splitlines())
    assert any((work / "cache").rglob("*")) and (outputs / "export" / "events.parquet").exists()
    assert (outputs / "report.html").stat().st_size > 1000
    n, found = leaks(everything(work, db))
    assert found == [], found
    assert n > 500
    bad_found = [f for f in (outputs / "rejected.stderr").read_bytes().split(b"\n") for v in bad.values()
                 if v.encode() in f]
    assert bad_found == []
