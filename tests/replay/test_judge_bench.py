"""`searchtrace bench judge` on a small scale: every call judged, the rate limit held, figures present."""

from __future__ import annotations

import msgspec
from click.testing import CliRunner

from searchtrace.cli import cli


def test_bench_judge_small() -> None:
    res = CliRunner().invoke(cli, ["bench", "judge", "--calls", "60", "--rps", "40", "--concurrency", "8", "--json"])
    assert res.exit_code == 0, res.output
    f = msgspec.json.decode(res.stdout)
    assert f["calls"] == f["verdicts"] == f["valid"] == 60 and f["failed"] == 0
    # 60 calls at 40/s with a bucket of 4 per 0.1 s: about 1.5 s, never more than limit + bucket in a second (a
    # loaded machine may run slower than the limit, never faster)
    assert 0 < f["achieved_share_of_limit"] <= 1.2
    assert f["max_calls_in_any_1s"] <= 40 + 4 + 1
    assert f["cpu_ms_per_call"] > 0 and f["peak_rss_mb"] >= f["peak_rss_mb_before_run"] > 0
