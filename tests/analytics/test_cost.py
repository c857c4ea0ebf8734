"""docs/reference/prices.md cost: USD per provider from a price file, against an independent count over the documented views."""

from __future__ import annotations

import json
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest

import searchtrace.analytics._sources as sources
from searchtrace import pipeline
from searchtrace.analytics import build_report
from searchtrace.analytics._cost import question_costs
from searchtrace.engine import load_prices, parse_prices
from searchtrace.store import EventLog
from tests.builders import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "prices-example.toml"

PRICES = """as_of = "2026-01-02"
[search]
brave = 5.0
tavily = 8.0
firecrawl = 0.83
[fetch]
jina = 0.05
[models.sandbox-agent]
input = 1.25
cached_input = 0.125
output = 10.0
[models.sandbox-judge]
input = 0.6
output = 2.5
"""


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cost")
    # a smaller run first fills the fetch cache (out/fetch-cache), so some of this store's fetches are cache hits
    anyio.run(lambda: pipeline.demo(out / "warm" / "w.duckdb", out, 2, progress=False))
    anyio.run(lambda: pipeline.demo(out / "d.duckdb", out, 6, progress=False))
    return out / "d.duckdb"


def expected(db: Path, prices: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The same figures computed independently over the documented views."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        q = lambda sql: dict(con.execute(sql).fetchall())  # noqa: E731
        searches = q("SELECT provider, count(*) FROM v_searches WHERE status = 'ok' GROUP BY 1")
        pages = q("SELECT provider, sum(n_tokens) FROM v_fetches WHERE status = 'ok' GROUP BY 1")  # hits too
        hits = q("SELECT provider, count(*) FILTER (WHERE cache_hit) FROM v_fetches WHERE status = 'ok' GROUP BY 1")
        tin = q("SELECT provider, sum(input_tokens) FROM v_usage GROUP BY 1")
        tcached = q("SELECT provider, sum(cached_tokens) FROM v_usage GROUP BY 1")
        tout = q("SELECT provider, sum(output_tokens) FROM v_usage GROUP BY 1")
        jin = q("SELECT provider, sum(input_tokens) FROM v_verdicts GROUP BY 1")
        jcached = q("SELECT provider, sum(cached_tokens) FROM v_verdicts GROUP BY 1")
        jout = q("SELECT provider, sum(output_tokens) FROM v_verdicts GROUP BY 1")
        n = q("SELECT provider, count(*) FROM v_trajectories GROUP BY 1")
        right = q("SELECT provider, count(*) FILTER (WHERE semantic_match) FROM v_trajectories GROUP BY 1")
    finally:
        con.close()
    assert sum(hits.values()) > 0  # the demo's fetch cache serves repeats: they are billed as fetches (docs/concepts/statistics.md)
    out: dict[str, dict[str, float]] = {}
    for p in n:
        s = searches.get(p, 0) * prices["search"][p] / 1000
        f = (pages.get(p) or 0) * 0.05 / 1e6
        assert tcached[p] > 0  # the sandbox reports cached prompt tokens: they take the cached price
        a = ((tin[p] - tcached[p]) * 1.25 + tcached[p] * 0.125 + tout[p] * 10.0) / 1e6
        j = ((jin[p] - jcached[p]) * 0.6 + jcached[p] * 0.6 + jout[p] * 2.5) / 1e6  # no cached_input: input price
        total = s + f + a + j
        out[p] = {"search_usd": s, "fetch_usd": f, "agent_model_usd": a, "judge_model_usd": j, "usd_total": total,
                  "usd_per_trajectory": total / n[p], "usd_per_correct": total / right[p],
                  "fetch_cache_hits": hits.get(p, 0)}
    return out


def test_costs_match_an_independent_count(demo_db: Path, tmp_path: Path) -> None:
    file = tmp_path / "p.toml"
    file.write_text(PRICES)
    code, out, err = run_cli("report", "--db", str(demo_db), "--json", "--bootstrap", "0", "--prices", str(file))
    assert code == 0, err
    rep = json.loads(out)
    assert rep["prices_as_of"] == "2026-01-02" and rep["prices_unpriced"] == [] and "prices:" not in err
    want = expected(demo_db, {"search": {"brave": 5.0, "tavily": 8.0, "firecrawl": 0.83}})
    for p, figures in want.items():
        for k, v in figures.items():
            assert rep["providers"][p][k] == pytest.approx(v, rel=1e-12), (p, k)
        assert rep["providers"][p]["search_usd"] > 0 and rep["providers"][p]["judge_model_usd"] > 0
    # nothing priced without a price file (no run config had [prices])
    _, plain = run_cli("report", "--db", str(demo_db), "--json", "--bootstrap", "0")[1:]
    assert "prices_as_of" not in json.loads(_) and "search_usd" not in json.loads(_)["providers"]["brave"]


def test_unpriced_is_null_and_named_once(demo_db: Path, tmp_path: Path) -> None:
    file = tmp_path / "p.toml"
    file.write_text(PRICES.replace("tavily = 8.0\n", "").replace("[models.sandbox-judge]\ninput = 0.6\noutput = 2.5\n", ""))
    code, out, err = run_cli("report", "--db", str(demo_db), "--json", "--bootstrap", "0", "--prices", str(file))
    assert code == 0, err
    rep = json.loads(out)
    assert rep["prices_unpriced"] == ["judge model sandbox-judge", "search tavily"]
    warnings = [line for line in err.splitlines() if line.startswith("prices:")]
    assert warnings == ["prices: no price for judge model sandbox-judge, search tavily; those costs are null "
                        "(never counted as zero)"]
    t = rep["providers"]["tavily"]
    assert t["search_usd"] is None and t["judge_model_usd"] is None and t["usd_total"] is None
    assert t["usd_per_trajectory"] is None and t["agent_model_usd"] > 0
    assert rep["providers"]["brave"]["search_usd"] > 0 and rep["providers"]["brave"]["usd_total"] is None


def test_bad_price_files(tmp_path: Path, demo_db: Path) -> None:
    for body, what in (("[search]\nbrave = 5\n", "as_of"), ('as_of = "x"\n[search]\nbrave = -1\n', "search.brave"),
                       ('as_of = "x"\n[models.m]\ninput = 1\n', "output"), ("as_of = ", "not valid TOML")):
        f = tmp_path / "bad.toml"
        f.write_text(body)
        code, out, err = run_cli("report", "--db", str(demo_db), "--prices", str(f))
        assert code == 2 and out == "" and what in err and len(err.strip().splitlines()) == 1, (body, err)


def test_the_example_price_file_loads_and_says_where_its_prices_come_from() -> None:
    prices = load_prices(EXAMPLE)
    assert prices.as_of == "2026-11-30"
    assert prices.search["exa"] == 7.0 and prices.search["perplexity"] == 5.0
    assert "brave" not in prices.search and "jina" not in prices.fetch  # no dollar price in the research notes
    text = EXAMPLE.read_text()
    assert "pricing pages" in text and "PLACEHOLDERS" in text
    for name in prices.search:  # every stated price names its source on its own line
        line = next(x for x in text.splitlines() if x.startswith(f"{name} ="))
        assert "#" in line and len(line.split("#", 1)[1].strip()) > 10, name


def test_question_costs_sum_exactly_to_the_provider_totals(demo_db: Path) -> None:
    """usd_per_correct's interval resamples questions: their USD must add up to the report's total to the last bit."""
    prices = parse_prices(tomllib.loads(PRICES), "test")  # 0.05 and 0.6 are not binary fractions: sums must be exact
    with EventLog(demo_db) as log:
        cur = log.cursor()
        try:
            rep = build_report(cur, prices=prices).report
            with sources.reading(cur, writable=True):
                per_question = question_costs(cur, prices, rep.judge_run_id)
        finally:
            cur.close()
    con = duckdb.connect(str(demo_db), read_only=True)
    try:
        qids = con.execute("SELECT provider, list(DISTINCT qid ORDER BY qid) FROM v_trajectories GROUP BY 1").fetchall()
    finally:
        con.close()
    assert {p: sorted(q) for p, q in per_question.items() if q is not None} == dict(qids)
    for name, block in rep.providers.items():
        questions = per_question[name]
        assert questions is not None and all(v > 0 for v in questions.values())
        assert float(sum(questions.values(), Fraction(0))) == block.usd_total, name
