"""`demo --providers hosted` (docs/how-to/hosted.md): the paper's three search APIs and the five hosted search layers
on the same sandbox questions, judged, in one report of eight arms."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import run_cli

HOSTED = ("openai_web_search", "anthropic_web_search", "anthropic_web_fetch", "gemini_grounding", "perplexity_agent")


def test_eight_arms_one_report_unobserved_apart_and_citations_counted(tmp_path: Path) -> None:
    code, out, err = run_cli("demo", "--providers", "hosted", "--n", "4", "--out", str(tmp_path), "--json")
    assert code == 0, err
    arms = json.loads(out)["report"]["providers"]
    assert set(arms) == {"brave", "tavily", "firecrawl", *HOSTED}
    assert {a["trajectories"] for a in arms.values()} == {4}  # the same questions for every arm
    for name in ("anthropic_web_search", "anthropic_web_fetch"):  # no snippet reached the caller: UNOBSERVED
        a = arms[name]
        assert a["valid_items"] > 0 and a["partition"]["UNOBSERVED"] == a["valid_items"]
        assert a["partition"]["NO-OP"] == 0 and a["surface_support_rate"] is None
    pplx = arms["perplexity_agent"]  # snippets: snippet verdicts, the four cells
    assert pplx["partition"]["UNOBSERVED"] == 0 and pplx["snippet_observed_items"] == pplx["valid_items"] > 0
    assert pplx["surface_support_rate"] is not None
    for name in HOSTED:
        assert arms[name]["citations"] > 0 and arms[name]["citations_per_answer"] > 0
    for name in ("brave", "tavily", "firecrawl"):
        assert arms[name]["citations"] == 0 and arms[name]["partition"]["UNOBSERVED"] == 0
    # hosted fees per search call from the example prices file: 4 questions, one search each
    example = Path(__file__).resolve().parents[2] / "docs" / "prices-example.toml"
    code, out, err = run_cli("report", "--db", str(tmp_path / "demo.duckdb"), "--prices", str(example), "--json")
    assert code == 0, err
    priced = json.loads(out)["providers"]
    fees = {"openai_web_search": 10.0, "anthropic_web_search": 10.0, "anthropic_web_fetch": 10.0,
            "gemini_grounding": 14.0, "perplexity_agent": 5.0}
    for name, per_1000 in fees.items():
        assert priced[name]["search_usd"] == 4 * per_1000 / 1000
        assert priced[name]["fetch_usd"] == 0.0  # a hosted page read is the model API's tokens, not a fetch backend's
