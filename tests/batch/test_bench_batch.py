"""`searchtrace bench judge --batch`: the same items judged online and through batches in one run, both timed and
priced; the batch costs the price file's batch_discount of the online run and labels no item otherwise."""

from __future__ import annotations

from pathlib import Path

import msgspec
from click.testing import CliRunner

from searchtrace.cli import cli


def test_bench_judge_batch_against_online(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["bench", "judge", "--calls", "60", "--rps", "1000", "--concurrency", "8", "--batch",
                                   "--batch-size", "25", "--json"])
    assert res.exit_code == 0, res.output
    f = msgspec.json.decode(res.stdout)
    assert f["items"] == f["online"]["verdicts"] == f["batch"]["verdicts"] == 60 and f["batch"]["batches"] == 3
    assert f["online"]["wall_ms_per_item"] > 0 and f["batch"]["wall_ms_per_item"] > 0
    assert f["usd_batch_over_online"] == 0.5 and f["labels_differ"] == 0
    assert f["batch"]["usd"] == 0.5 * f["online"]["usd"] > 0
    prices = tmp_path / "p.toml"
    prices.write_text('as_of = "2026-12-01"\nbatch_discount = 0.4\n[models."sandbox-judge"]\ninput = 3.0\noutput = 15.0\n')
    res = CliRunner().invoke(cli, ["bench", "judge", "--calls", "30", "--rps", "1000", "--batch", "--prices", str(prices)])
    assert res.exit_code == 0, res.output
    assert "(0.4 of online)" in res.stdout and "items with other labels: 0" in res.stdout and "--prices" in res.stdout
