"""`searchtrace bench startup`: the CPU a small command costs from a cold process, against the bare interpreter in
the same run.

Each command runs `--rounds` times in a child process, the three alternating so that all see the same load: the bare
interpreter (`python -c pass`), `searchtrace --help`, and a one-question `searchtrace record --sandbox` (one Brave
persona, `[sample] n = 1`, a fresh store each time). A child's CPU is user + system time from the rusage of the
children this process waited for. Target: the one-question run under 1 CPU-s.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import msgspec

TARGET_RECORD_S = 1.0
ONE_QUESTION = '[agent]\nmodel = "sandbox-agent"\n[providers.brave]\n[dataset]\npath = "sandbox"\n[sample]\nn = 1\n'
_CLI = "from searchtrace.cli import main; main()"


def _cpu(argv: list[str], cwd: Path) -> float:
    """CPU-s (user + system) of one child process running `argv` to its end; a failed command raises."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise click.ClickException(f"{' '.join(argv[2:])[:80]} exited {done.returncode}: "
                                   f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(rounds: int) -> dict[str, Any]:
    """Median CPU-s of each command over `rounds` alternating runs, and the ratios to the bare interpreter."""
    py = sys.executable
    samples: dict[str, list[float]] = {"bare": [], "help": [], "record": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "one.toml").write_text(ONE_QUESTION, encoding="utf-8")
        for i in range(rounds):
            samples["bare"].append(_cpu([py, "-c", "pass"], folder))
            samples["help"].append(_cpu([py, "-c", _CLI, "--help"], folder))
            samples["record"].append(_cpu([py, "-c", _CLI, "record", "--config", "one.toml", "--sandbox", "--db",
                                           f"r{i}.duckdb", "--no-progress"], folder))
    med = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "rounds": rounds,
        "bare_cpu_s": round(med["bare"], 3),
        "help_cpu_s": round(med["help"], 3),
        "record_cpu_s": round(med["record"], 3),
        "help_vs_bare": round(med["help"] / med["bare"], 1) if med["bare"] else None,
        "record_vs_bare": round(med["record"] / med["bare"], 1) if med["bare"] else None,
        "samples": {name: [round(v, 3) for v in values] for name, values in samples.items()},
        "target_record_s": TARGET_RECORD_S,
        "ok": med["record"] < TARGET_RECORD_S,
    }


@click.command("startup")
@click.option("--rounds", default=5, show_default=True, type=click.IntRange(1), help="Runs of each command.")
@click.option("--json", "as_json", is_flag=True)
def command(rounds: int, as_json: bool) -> None:
    """CPU of `searchtrace --help` and of a one-question `record --sandbox` from a cold process, against the bare
    interpreter, same run."""
    result = run(rounds)
    if as_json:
        click.echo(msgspec.json.encode(result).decode())
    else:
        click.echo(f"start-up, median of {rounds}: bare interpreter {result['bare_cpu_s']} CPU-s; `searchtrace --help` "
                   f"{result['help_cpu_s']} ({result['help_vs_bare']}x); one-question `record --sandbox` "
                   f"{result['record_cpu_s']} ({result['record_vs_bare']}x; "
                   f"{'under' if result['ok'] else 'over'} the {TARGET_RECORD_S} CPU-s target)")
    if not result["ok"]:
        raise SystemExit(1)
