"""docs/concepts/statistics.md epochs: every (provider, question) cell recorded k times, ids `~e`, epoch 1 unchanged, all epochs counted."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import duckdb
import pytest

from searchtrace.adapters.sandbox import in_process
from searchtrace.analytics._metrics import TrajectoryStats, epoch_spread
from searchtrace.engine import endpoint_factory, point_at_sandbox, record_run
from searchtrace.pipeline import demo
from searchtrace.pipeline._recording import questions_of
from searchtrace.store import BadInput, EventLog
from tests.analytics.analytics_fixture import TRACES
from tests.builders import run_cli, sandbox_config, write_jsonl

LATENCY_KEYS = ("search_provider_ms_median", "search_provider_ms_p90", "fetch_provider_ms_median", "fetch_provider_ms_p90")


def started(db: Path) -> list[dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT payload FROM events WHERE type = 'trajectory.started' ORDER BY position").fetchall()
    finally:
        con.close()
    return [json.loads(r[0]) for r in rows]


@pytest.mark.anyio
async def test_demo_with_three_epochs(tmp_path: Path) -> None:
    n = 8  # questions: 3 providers x 3 epochs x 8 = 72 trajectories, enough for every figure of the report
    res = await demo(tmp_path / "d.duckdb", tmp_path, n, progress=False, epochs=3)
    assert res.record.trajectories == 9 * n and res.record.recorded == 9 * n
    heads = started(tmp_path / "d.duckdb")
    assert len(heads) == 9 * n
    by_epoch: dict[int, int] = {}
    for h in heads:
        e = h.get("epoch", 1)
        by_epoch[e] = by_epoch.get(e, 0) + 1
        if e == 1:  # epoch 1 keeps today's id and today's payload (no `epoch` key at all)
            assert "epoch" not in h and "~" not in h["trajectory_id"]
        else:
            assert h["trajectory_id"] == f"{h['trajectory_id'].split('~')[0]}~{e}"
    assert by_epoch == {1: 3 * n, 2: 3 * n, 3: 3 * n}
    rep = res.report.to_builtins()
    for name, block in rep["providers"].items():
        assert block["trajectories"] == 3 * n, name
        assert "accuracy_epoch_sd" in block and block["accuracy_epoch_sd"] is not None
        assert [k for k, v in block.items() if v is None] == [], name  # every figure defined
        assert all(isinstance(block[k], float) for k in LATENCY_KEYS)  # provider time (docs/reference/prices.md) included
        assert block["audited"] == 3 * n
    for pair, c in rep["complementarity"].items():  # pairs are (qid, epoch) cells
        assert c["a_only"] + c["b_only"] + c["both"] + c["neither"] == 3 * n, pair
    # the judge saw every epoch's items
    con = duckdb.connect(str(tmp_path / "d.duckdb"), read_only=True)
    try:
        n = con.execute("SELECT count(DISTINCT epoch) FROM v_judge_items").fetchone()
        v = con.execute("SELECT count(*) FROM v_verdicts v JOIN v_trajectories t USING (trajectory_id) "
                        "WHERE t.epoch = 3").fetchone()
    finally:
        con.close()
    assert n == (3,) and v is not None and v[0] > 0


@pytest.mark.anyio
async def test_raising_epochs_resumes_with_the_missing_epochs_only(tmp_path: Path) -> None:
    cfg = sandbox_config(tmp_path, n=2)
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "r.duckdb"

    async def rec() -> Any:
        log = EventLog(db)
        try:
            return await record_run(cfg, log, endpoint_factory(box.transport), questions=questions_of(cfg))
        finally:
            log.close()

    first = await rec()
    assert (first.trajectories, first.recorded) == (6, 6)
    cfg.run.epochs = 2
    second = await rec()
    assert (second.trajectories, second.already, second.recorded) == (12, 6, 6)
    again = await rec()
    assert again.recorded == 0
    ids = sorted(h["trajectory_id"] for h in started(db))
    assert sum(i.endswith("~2") for i in ids) == 6 and len(ids) == 12


def _stats(epoch: int, match: bool | None, qid: str = "q") -> TrajectoryStats:
    zero = dict.fromkeys(
        ("searches fetches input_tokens output_tokens reasoning_tokens page_tokens latency_us domains items valid "
         "invalid snippet_only page_visible smart missed blind noop discovered supported contradicted "
         "supported_appearances supported_rank1").split(), 0)
    return TrajectoryStats(stream_id="s", trajectory_id="t", provider="p", qid=qid, epoch=epoch, gold_answer="g",
                           final_answer=None, semantic_match=match, **zero)


def test_accuracy_epoch_sd_by_hand() -> None:
    # epoch 1: 1 of 2 correct (0.5); epoch 2: 2 of 2 (1.0); sample sd = sqrt(((0.25)^2 * 2) / 1) = sqrt(0.125)
    rows = [_stats(1, True), _stats(1, False), _stats(2, True), _stats(2, True), _stats(2, None)]
    assert epoch_spread(rows) == (math.sqrt(0.125), 1)
    assert epoch_spread(rows[:2]) is None  # one epoch: no key (the /1 report keeps its keys)
    assert epoch_spread([_stats(1, True), _stats(2, None)]) == (None, 0)
    # docs/concepts/statistics.md: only questions audited in every epoch. r is right in epoch 1 and unaudited in epoch 2: counting it
    # would give 2/3 vs 2/2 (sd 0.236); over q alone it is the sd above
    assert epoch_spread([*rows, _stats(1, True, "r"), _stats(2, None, "r")]) == (math.sqrt(0.125), 1)


def test_import_and_export_carry_the_epoch(tmp_path: Path) -> None:
    again = dict(TRACES[0], trajectory_id="t-a1~2", epoch=2)
    t = write_jsonl(tmp_path / "t.jsonl", [*TRACES, again])
    db = tmp_path / "i.duckdb"
    code, _, err = run_cli("import", "--db", str(db), str(t))
    assert code == 0, err
    heads = {h["trajectory_id"]: h for h in started(db)}
    assert heads["t-a1~2"]["epoch"] == 2 and "epoch" not in heads["t-a1"]
    code, out, err = run_cli("report", "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["providers"]["alpha"]["trajectories"] == 3
    code, _, err = run_cli("export", "--db", str(db), "--out", str(tmp_path / "x"))
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "x" / "traces.jsonl").read_text().splitlines()]
    assert {x["trajectory_id"]: x.get("epoch") for x in lines if x["provider"] == "alpha"} == {
        "t-a1": None, "t-a2": None, "t-a1~2": 2}
    # the same (provider, qid, epoch) twice is the duplicate import refuses; another id in epoch 2 too
    dup = write_jsonl(tmp_path / "dup.jsonl", [*TRACES, again, dict(again, trajectory_id="t-a1~2b")])
    code, _, err = run_cli("import", "--db", str(tmp_path / "j.duckdb"), str(dup))
    assert code == 2 and "epoch 2" in err and "line 7" in err.replace(str(dup), "")


@pytest.mark.anyio
async def test_run_config_prices_are_recorded_and_used_by_the_report(
    tmp_path: Path
) -> None:
    prices = {"as_of": "2026-02-03", "search": {"brave": 5.0, "tavily": 8.0, "firecrawl": 1.0},
              "models": {"sandbox-agent": {"input": 1.0, "output": 2.0}}}
    cfg = sandbox_config(tmp_path, n=1, prices=prices)
    box = in_process()
    point_at_sandbox(cfg, box.root)
    db = tmp_path / "p.duckdb"
    log = EventLog(db)
    try:
        await record_run(cfg, log, endpoint_factory(box.transport), questions=questions_of(cfg))
    finally:
        log.close()
    code, out, err = run_cli("report", "--db", str(db), "--json", "--bootstrap", "0")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["prices_as_of"] == "2026-02-03" and rep["providers"]["brave"]["search_usd"] > 0
    assert rep["prices_unpriced"] == ["fetch jina"] and "prices: no price for fetch jina" in err
    bad = dict(prices, search={"brave": "cheap"})
    with pytest.raises(BadInput, match=r"<test>: \[prices\]: key search.brave"):
        sandbox_config(tmp_path, n=1, prices=bad)
