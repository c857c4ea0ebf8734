"""`bench startup` end to end on one round: three real child processes, a real one-question run on the sandbox."""

from __future__ import annotations

from searchtrace.benchmarks._startup import TARGET_RECORD_S, run


def test_bench_startup_measures_each_command_against_the_bare_interpreter() -> None:
    result = run(1)
    samples = result["samples"]
    assert {k: len(v) for k, v in samples.items()} == {"bare": 1, "help": 1, "record": 1}
    # what each adds is work, not noise: --help imports the command line, a recorded run its engine and store
    assert 0 < result["bare_cpu_s"] < result["help_cpu_s"] < result["record_cpu_s"]
    assert result["record_vs_bare"] > result["help_vs_bare"] > 1
    assert result["ok"] == (result["record_cpu_s"] < TARGET_RECORD_S)
