"""docs/how-to/compare.md arms: `report --by run | model | prompt | config:<key>` over real stores, the refusals that keep runs
apart, `trajectory_arms`, and the run columns of the views.

Two stores: two proxied runs of two agents on one provider (a full-results agent and a top-2 agent, through a real
`searchtrace proxy` child over the sandbox, judged and graded), and two imported runs (docs/concepts/shown.md run.jsonl) whose
configs name different models, prompts and max_iterations, judged and audited by hand.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from searchtrace.analytics import trajectory_arms
from searchtrace.store import EventLog
from tests.analytics.analytics_fixture import report_json
from tests.builders import model, run_cli, search, traj, write_jsonl
from tests.builders import result as r
from tests.proxy.support import proxy, write_questions

TOOLS = [
    {"type": "function", "function": {
        "name": "search", "description": "Web search; returns the Brave response as JSON.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}},
    {"type": "function", "function": {
        "name": "open_page", "description": "Fetch and read a page.",
        "parameters": {"type": "object", "properties": {"link": {"type": "string"}}, "required": ["link"]}}},
]


def agent(url: str, qid: str, question: str, top: int | None) -> None:
    """An own agent loop through the proxy on Brave: the model sees every result, or only the `top` first."""
    base = f"{url}/t/brave/{quote(qid, safe='')}"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Use the tools, then reply `FINAL ANSWER: <answer>`."},
        {"role": "user", "content": question},
    ]
    with httpx.Client(timeout=30) as http:
        for _ in range(6):
            reply = http.post(f"{base}/openai/v1/chat/completions",
                              json={"model": "sandbox-agent", "messages": messages, "tools": TOOLS})
            msg = reply.json()["choices"][0]["message"]
            messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
            if not msg.get("tool_calls"):
                text = (msg.get("content") or "").strip()
                http.post(f"{base}/final", json={"answer": text.removeprefix("FINAL ANSWER:").strip()})
                return
            for call in msg["tool_calls"]:
                args = json.loads(call["function"]["arguments"] or "{}")
                if call["function"]["name"] == "search":
                    body = http.get(f"{base}/brave/res/v1/web/search", params={"q": args["q"], "count": 10},
                                    headers={"X-Subscription-Token": "not-a-key"}).json()
                    body["web"]["results"] = body["web"]["results"][:top]
                    content = json.dumps(body)
                else:
                    content = http.get(f"{base}/jina/{args['link']}", headers={"Accept": "text/plain"}).text
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    raise AssertionError(f"{qid}: no final answer")


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs `full` (every result) and `top2` (the first two) of 3 questions on Brave, judged and graded."""
    tmp = tmp_path_factory.mktemp("arms-proxy")
    qfile = tmp / "q.jsonl"
    rows = write_questions(qfile, 3)
    db = tmp / "p.duckdb"
    for run, top in (("full", None), ("top2", 2)):
        with proxy(db, qfile, run) as p:
            for row in rows:
                agent(p.url, row["qid"], row["question"], top)
            assert p.stop() == 0
    for argv in (("judge", "--db", str(db), "--sandbox"), ("grade", "--db", str(db))):
        code, _, err = run_cli(*argv)
        assert code == 0, err
    return db


def test_by_run_compares_two_proxied_agents(proxied: Path) -> None:
    _, rep = report_json(proxied, "--by", "run", "--bootstrap", "200")
    assert rep["by"] == "run" and rep["providers"] == {} and sorted(rep["arms"]) == ["full", "top2"]
    full, top2 = rep["arms"]["full"], rep["arms"]["top2"]
    for arm, run in ((full, "full"), (top2, "top2")):
        assert arm["runs"] == [run] and arm["search_providers"] == ["brave"] and arm["trajectories"] == 3
        assert arm["audited"] == 3 and "accuracy_ci" in arm and "surface_support_rate_ci" in arm
    # the top-2 agent was shown fewer results: fewer judge items, a different surface support rate
    assert top2["results_shown"] < full["results_shown"] == full["results_returned"]
    assert top2["items"] < full["items"]
    (pair,) = rep["paired"].values()
    assert list(rep["paired"]) == list(rep["complementarity"]) == ["full|top2"]
    assert pair["paired_questions"] == 3 and pair["accuracy_test"] == "mcnemar_exact"
    assert pair["accuracy_diff"] == full["accuracy"] - top2["accuracy"]
    assert pair["surface_support_rate_diff"] is not None and pair["surface_support_rate_test"].startswith("sign_flip")
    assert sum(rep["complementarity"]["full|top2"][k] for k in ("a_only", "b_only", "both", "neither")) == 3
    with EventLog(proxied, read_only=True) as log:
        arms = trajectory_arms(log.cursor(), "run")
    assert sorted(arms.values()) == ["full"] * 3 + ["top2"] * 3
    assert all(tid.startswith(f"{run}:brave:") for tid, run in arms.items())


def test_by_provider_never_merges_the_two_runs(proxied: Path) -> None:
    code, out, err = run_cli("report", "--db", str(proxied), "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "2 runs (full, top2)" in err
    code, out, err = run_cli("report", "--db", str(proxied), "--by", "provider", "--run-id", "full", "--run-id", "top2")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("searchtrace: error: runs full, top2 hold trajectories of the same provider, question and "
                          "epoch (3 (provider, qid, epoch) cells, e.g. brave/"), err
    # a proxied run's model is the one its turns name: both runs' turns are sandbox-agent's, so --by model would
    # merge the two runs into one arm: refused
    code, _, err = run_cli("report", "--db", str(proxied), "--by", "model")
    assert code == 2 and err.startswith("searchtrace: error: --by model: runs full, top2 hold trajectories of the same "
                                        "arm 'sandbox-agent', provider, question and epoch"), err
    code, _, err = run_cli("report", "--db", str(proxied), "--by", "agent")
    assert code == 2 and err.startswith("searchtrace: error: --by agent: choose provider, run, model, prompt or config:")
    # one run alone is reported per provider as always
    _, alone = report_json(proxied, "--run-id", "top2", "--bootstrap", "0")
    assert list(alone["providers"]) == ["brave"] and "arms" not in alone and "by" not in alone


def test_views_carry_the_run(proxied: Path) -> None:
    code, out, err = run_cli("sql", "--db", str(proxied), "--json",
                             "SELECT t.run_id, t.model, t.prompt_sha256, t.epoch, count(DISTINCT i.url_normalized) AS n, "
                             "count(DISTINCT v.run_id) AS verdict_runs FROM v_trajectories t "
                             "JOIN v_judge_items i USING (trajectory_id, run_id, epoch) "
                             "JOIN v_verdicts v USING (trajectory_id, run_id, epoch) GROUP BY ALL ORDER BY 1")
    assert code == 0, err
    rows = json.loads(out)
    assert [(x["run_id"], x["model"], x["prompt_sha256"], x["epoch"], x["verdict_runs"]) for x in rows] == [
        ("full", "sandbox-agent", None, 1, 1), ("top2", "sandbox-agent", None, 1, 1)]  # the model its turns name


# -- two imported runs whose configs differ in model, prompt and max_iterations ---------------------------------

QIDS = ("q1", "q2", "q3", "q4")
CONFIGS = {
    "ra": {"agent": {"model": "gpt-a"}, "prompt": {"version": "agent/1", "sha256": "a" * 64},
           "limits": {"max_iterations": 10}},
    "rb": {"agent": {"model": "gpt-b"}, "prompt": {"version": "mine@bbbbbbbbbbbb", "sha256": "b" * 64},
           "limits": {"max_iterations": 4}},
}
RIGHT = {"ra": ("q1", "q2", "q3"), "rb": ("q1",)}  # final answer equal to the gold answer; the others are wrong


def _line(run: str, qid: str) -> dict[str, Any]:
    line = traj(f"{run}:brave:{qid}", "brave", qid, f"gold {qid}", f"gold {qid}" if qid in RIGHT[run] else "no",
                [model(1, 100 if run == "ra" else 40, 10),
                 search(1, "s1", [r("d1", 1, f"https://{run}.org/{qid}", "s"), r("d2", 2, f"https://both.org/{qid}", "s")])])
    return {**line, "run_id": run}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("arms-import")
    traces = write_jsonl(tmp / "traces.jsonl", [_line(run, q) for run in CONFIGS for q in QIDS])
    write_jsonl(tmp / "run.jsonl", [{"run_id": run, "config": cfg, "code_version": "t"} for run, cfg in CONFIGS.items()])
    labels = {"snippet": {"supports_gold": True, "contradicts_gold": False, "relevant": True}, "page": None,
              "supports_final_answer": True, "rationale": "t"}
    judgments = write_jsonl(tmp / "judgments.jsonl", [
        {"judge_run_id": "j", "trajectory_id": f"{run}:brave:{q}", "url": f"https://{host}.org/{q}", "valid": True,
         "labels": {**labels, "snippet": {**labels["snippet"], "supports_gold": host == run or q == "q1"}},
         "invalid_reason": None}
        for run in CONFIGS for q in QIDS for host in (run, "both")])
    db = tmp / "i.duckdb"
    for argv in (("import", "--db", str(db), str(traces), "--judgments", str(judgments)), ("grade", "--db", str(db)),
                 ("audit", "sample", "--db", str(db), "--k", "20", "--out", str(tmp / "s.tsv"))):
        code, _, err = run_cli(*argv)
        assert code == 0, err
    with (tmp / "s.tsv").open(encoding="utf-8") as f:
        sample = list(csv.DictReader(f, delimiter="\t"))
    for row in sample:  # the human disagrees with every "supports" of run rb on its own host
        wrong = row["label"] == "supports_gold" and row["trajectory_id"].startswith("rb:") and "rb.org" in row["url"]
        row["human_value"] = str(row["judge_value"] != "true" if wrong else row["judge_value"] == "true").lower()
    with (tmp / "l.tsv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(sample[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(sample)
    code, _, err = run_cli("audit", "import", "--db", str(db), str(tmp / "l.tsv"))
    assert code == 0, err
    (tmp / "prices.toml").write_text('as_of = "2026-12-01"\n[search]\nbrave = 5.0\n[fetch]\njina = 0.05\n'
                                     '[models."gpt-a"]\ninput = 1.0\noutput = 2.0\n[models."gpt-b"]\ninput = 3.0\n'
                                     'output = 4.0\n', encoding="utf-8")
    return db


def _prices(db: Path) -> tuple[str, str]:
    return "--prices", str(db.parent / "prices.toml")


@pytest.fixture(scope="module")
def by_run(imported: Path) -> dict[str, Any]:
    return report_json(imported, "--by", "run", *_prices(imported))[1]


@pytest.fixture(scope="module")
def by_run_points(imported: Path) -> dict[str, Any]:
    """The same without intervals (the corrected rates' draws are seeded with the arm's name)."""
    return report_json(imported, "--by", "run", "--bootstrap", "0", *_prices(imported))[1]


def _drawn_by_name(key: str) -> bool:
    """The corrected rates' interval keys: their label draws are seeded with the block's name (analytics._correction)."""
    return ("corrected" in key or key.startswith("judge_t")) and ("_ci" in key)


@pytest.mark.parametrize("run", ["ra", "rb"])
def test_an_arm_has_every_figure_its_provider_has(imported: Path, by_run: dict[str, Any], run: str) -> None:
    """One run on one provider: its arm is the provider's block (intervals, cost, corrected rates), plus what it holds."""
    _, alone = report_json(imported, "--run-id", run, *_prices(imported))
    arm, provider = dict(by_run["arms"][run]), alone["providers"]["brave"]
    assert arm.pop("runs") == [run] and arm.pop("search_providers") == ["brave"]
    assert "usd_per_correct_ci" in arm and "surface_support_rate_corrected_ci" in arm and "judge_tpr" in arm
    assert sorted(arm) == sorted(provider)
    assert {k: v for k, v in arm.items() if not _drawn_by_name(k)} == {
        k: v for k, v in provider.items() if not _drawn_by_name(k)}


def test_by_run_pairs_the_runs_with_every_comparison(by_run: dict[str, Any]) -> None:
    assert by_run["complementarity"] == {"ra|rb": {"a_only": 0, "b_only": 0, "both": 4, "neither": 0,
                                                    "url_jaccard": 1 / 3}}
    pair = by_run["paired"]["ra|rb"]
    assert pair["accuracy_diff"] == 0.5 and pair["accuracy_test"] == "mcnemar_exact"
    assert pair["discordant"] == {"a_only_correct": 2, "b_only_correct": 0} and pair["accuracy_diff_p"] == 0.5
    assert pair["surface_support_rate_diff"] == 0.0  # the judge sees the same support on both sides ...
    assert pair["surface_support_rate_corrected_diff"] > 0  # ... which the human labels correct on run rb
    ra, rb = by_run["arms"]["ra"], by_run["arms"]["rb"]
    assert (ra["agent_model_usd"], rb["agent_model_usd"]) == (4 * (100 * 1 + 10 * 2) / 1e6, 4 * (40 * 3 + 10 * 4) / 1e6)
    assert ra["search_usd"] == rb["search_usd"] == 4 * 5.0 / 1000  # priced by the provider, whatever the arm


@pytest.mark.parametrize(("by", "names"), [
    ("model", {"ra": "gpt-a", "rb": "gpt-b"}),
    ("prompt", {"ra": "a" * 64, "rb": "b" * 64}),
    ("config:limits.max_iterations", {"ra": "10", "rb": "4"}),
    ("config:agent", {"ra": '{"model":"gpt-a"}', "rb": '{"model":"gpt-b"}'}),
])
def test_every_axis_names_its_arms(imported: Path, by_run_points: dict[str, Any], by: str, names: dict[str, str]
                                   ) -> None:
    _, rep = report_json(imported, "--by", by, "--bootstrap", "0", *_prices(imported))
    runs = by_run_points
    assert rep["by"] == by and rep["providers"] == {}
    assert rep["arms"] == {names[run]: block for run, block in runs["arms"].items()}
    key = "|".join(sorted(names.values()))
    assert rep["paired"] == {key: runs["paired"]["ra|rb"]} and rep["complementarity"] == {
        key: runs["complementarity"]["ra|rb"]}
    with EventLog(imported, read_only=True) as log:
        assert trajectory_arms(log.cursor(), by) == {f"{run}:brave:{q}": names[run] for run in CONFIGS for q in QIDS}


def test_the_page_and_the_table_name_the_axis(imported: Path, tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    code, out, err = run_cli("report", "--db", str(imported), "--by", "model", "--bootstrap", "0", "--html", str(page))
    assert code == 0, err
    assert "arms by model" in out.splitlines()[0] and "gpt-a" in out and "search providers" in out
    html = page.read_text(encoding="utf-8")
    assert "<h2>Per model</h2>" in html and "2 arms by model" in html and "<th>gpt-b</th>" in html


def test_an_arm_never_merges_runs(imported: Path, tmp_path: Path) -> None:
    """Two runs with one value of the axis on one provider and question are refused, like --by provider."""
    _, one = report_json(imported, "--by", "config:prompt.version", "--run-id", "rb", "--bootstrap", "0")
    assert list(one["arms"]) == ["mine@bbbbbbbbbbbb"]
    code, _, err = run_cli("report", "--db", str(imported), "--by", "config:code")
    assert code == 2 and err == ("searchtrace: error: --by config:code: runs ra, rb record no code key in the run config "
                                 "(run.started); choose runs with --run-id or another --by (e.g. --by run)\n")
    db = tmp_path / "same.duckdb"
    same = {run: {**cfg, "agent": {"model": "gpt-a"}} for run, cfg in CONFIGS.items()}
    write_jsonl(tmp_path / "run.jsonl", [{"run_id": run, "config": cfg, "code_version": "t"} for run, cfg in same.items()])
    traces = write_jsonl(tmp_path / "traces.jsonl", [_line(run, q) for run in same for q in QIDS])
    assert run_cli("import", "--db", str(db), str(traces)).code == 0
    code, _, err = run_cli("report", "--db", str(db), "--by", "model")
    assert code == 2 and err.startswith("searchtrace: error: --by model: runs ra, rb hold trajectories of the same arm "
                                        "'gpt-a', provider, question and epoch (4 (provider, qid, epoch) cells"), err


def test_the_explorer_shows_the_same_arms(proxied: Path, imported: Path) -> None:
    """docs/how-to/compare.md: the explorer's report by run is the CLI's, and its items of an arm are that arm's (any axis)."""
    from tests.web.test_api import get_all

    _, want = report_json(proxied, "--by", "run", "--bootstrap", "200")
    rep, top2, refused, cells, paired = get_all(
        proxied, ("GET", "/api/report?by=run&bootstrap=200", None),
        ("GET", "/api/items?by=run&arm=top2&label=trajectories", None),
        ("GET", "/api/report?by=provider&run=full&run=top2&bootstrap=0", None),
        ("GET", "/api/items?by=run&label=cells&pair=full%7Ctop2&cell=a_only", None),
        ("GET", "/api/items?by=run&label=paired_questions&pair=full%7Ctop2", None))
    assert rep.status_code == 200 and rep.json() == want
    assert top2.json()["total"] == want["arms"]["top2"]["trajectories"] == 3
    # the counts of the pair of arms open their (qid, epoch) cells and questions, by the report's own rules
    assert cells.json()["total"] == want["complementarity"]["full|top2"]["a_only"]
    assert paired.json()["total"] == want["paired"]["full|top2"]["paired_questions"] == len(paired.json()["rows"])
    assert refused.status_code == 400 and "full" in refused.json()["error"] and "top2" in refused.json()["error"]
    (model,) = get_all(imported, ("GET", "/api/items?by=model&arm=gpt-b&label=trajectories", None))
    assert model.status_code == 200 and model.json()["total"] == len(QIDS)
