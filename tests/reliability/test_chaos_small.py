"""The chaos suite at a small size (30 trajectories, 4 SIGKILLs): faults everywhere, nothing lost, nothing paid twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchtrace.benchmarks._chaos import RATES, Chaos, markdown, run_chaos, write_section


@pytest.mark.slow  # ~20 s, ~18 s CPU: about ten `searchtrace` processes (4 killed) against a real server
def test_chaos_small(tmp_path: Path) -> None:
    rates = {**RATES, "oversized": 0.4}  # a small run fetches few pages: make oversized ones common enough
    figures = run_chaos(Chaos(tmp_path / "chaos", trajectories=30, kills=4, seed=11, timeout_s=0.5, hang_s=2.0,
                              max_wait_s=0.1, rates=rates))
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


def test_a_call_repeated_after_a_kill_is_counted() -> None:
    """The no-double-payment check can fail: requests after a kill for finished work are counted per route."""
    from collections import Counter

    from searchtrace.benchmarks._chaos import JUDGE_RUN, Kill, repeated_calls

    trace = f"{JUDGE_RUN}|t2|https://a.test/"
    c = Chaos(Path("unused"))
    c.killed.append(Kill("record", 10, {"t1"}, {("t2", "https://a.test/")}, Counter({("chat", "t1"): 3, ("chat", trace): 1})))
    assert repeated_calls(c, Counter({("chat", "t1"): 3, ("chat", trace): 1, ("chat", "t3"): 9})) == 0
    assert repeated_calls(c, Counter({("chat", "t1"): 4, ("jina", "t1"): 1, ("chat", trace): 2})) == 3
