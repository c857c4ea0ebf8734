"""docs/concepts/statistics.md judge agreement: Cohen's kappa against hand-computed 2x2 tables, and `judge compare A B`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchtrace.analytics._agreement import cohen_kappa
from tests.analytics.analytics_fixture import import_fixture, labels, report_json, verdict
from tests.builders import run_cli, write_jsonl


def test_kappa_by_hand() -> None:
    # the textbook table (20, 5 / 10, 15): p_o = 35/50, p_e = (25·30 + 25·20) / 50² = 0.5 -> kappa = 0.4
    assert cohen_kappa((20, 5, 10, 15)) == pytest.approx(0.4, rel=1e-15)
    assert cohen_kappa((10, 0, 0, 10)) == 1.0  # perfect agreement
    assert cohen_kappa((0, 10, 10, 0)) == -1.0  # perfect disagreement, balanced marginals
    assert cohen_kappa((6, 0, 0, 0)) is None  # both constant and equal: chance agreement is 1
    assert cohen_kappa((0, 0, 0, 0)) is None
    assert cohen_kappa((0, 1, 0, 0)) == 0.0  # p_o = 0, p_e = 0


J3 = [  # against j1 of the fixture (A = j1, B = j3); comments: j1 -> j3
    verdict("j3", "t-a1", "https://example.com/a", labels(True, False)),  # same
    verdict("j3", "t-a1", "https://other.org/b", labels(True, False, page=False)),  # S F->T, page S T->F
    verdict("j3", "t-a1", "https://third.net/c", labels(False, False)),  # invalid in j1: not compared
    verdict("j3", "t-a1", "https://fourth.io/d", labels(True, False)),  # C T->F
    verdict("j3", "t-a2", "https://x.org", labels(False, True)),  # same
    verdict("j3", "t-b1", "https://example.com/a", labels(False, False)),  # S T->F
    verdict("j3", "t-g1", "https://gamma.com/p", labels(False, False)),  # same (beta-only.com/z: not in j3)
]


def test_judge_compare(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    import_fixture(db, tmp_path / "in")
    code, _, err = run_cli("import", "--db", str(db), "--judgments", str(write_jsonl(tmp_path / "j3.jsonl", J3)))
    assert code == 0, err
    code, out, err = run_cli("judge", "compare", "--db", str(db), "j1", "j3", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["items_valid_in_both"] == 6
    lab = res["labels"]
    # snippet.supports_gold: TT 2 (example.com/a, fourth.io/d), TF 1 (t-b1), FT 1 (other.org/b), FF 2
    assert lab["snippet.supports_gold"]["table"] == {"a_true_b_true": 2, "a_true_b_false": 1, "a_false_b_true": 1,
                                                     "a_false_b_false": 2}
    assert lab["snippet.supports_gold"]["agreement"] == pytest.approx(4 / 6)
    assert lab["snippet.supports_gold"]["kappa"] == pytest.approx(1 / 3)  # (2/3 − 1/2) / (1 − 1/2)
    # snippet.contradicts_gold: TT 1, TF 1, FF 4 -> p_o 5/6, p_e 22/36 -> kappa 4/7
    assert lab["snippet.contradicts_gold"]["kappa"] == pytest.approx(4 / 7)
    assert lab["snippet.relevant"] == {"n": 6, "agreement": 1.0, "kappa": None,
                                       "table": {"a_true_b_true": 6, "a_true_b_false": 0, "a_false_b_true": 0,
                                                 "a_false_b_false": 0}}
    assert lab["page.supports_gold"]["n"] == 1 and lab["page.supports_gold"]["kappa"] == 0.0
    assert [(d["trajectory_id"], d["url"], d["differs"]) for d in res["disagreements"]] == [
        ("t-a1", "https://fourth.io/d", ["snippet.contradicts_gold"]),
        ("t-a1", "https://other.org/b", ["snippet.supports_gold", "page.supports_gold"]),
        ("t-b1", "https://example.com/a", ["snippet.supports_gold"]),
    ]
    assert res["disagreements"][0]["a_rationale"] == "fixture" and res["disagreements"][0]["provider"] == "alpha"
    beta = res["providers"]["beta"]
    # over the items valid in both runs only: beta's example.com/a (beta-only.com/z has no verdict in j3)
    assert beta["items_valid_in_both"] == 1
    assert beta["a"] == {"partition": {"SMART": 0, "MISSED": 1, "BLIND": 0, "NO-OP": 0, "UNOBSERVED": 0}, "surface_support_rate": 1.0}
    assert beta["b"] == {"partition": {"SMART": 0, "MISSED": 0, "BLIND": 0, "NO-OP": 1, "UNOBSERVED": 0}, "surface_support_rate": 0.0}
    # alpha: example.com/a MISSED, other.org/b (fetched) BLIND -> SMART (j3's snippet supports), fourth.io/d SMART,
    # x.org NO-OP
    alpha = res["providers"]["alpha"]
    assert alpha["items_valid_in_both"] == 4
    assert alpha["a"] == {"partition": {"SMART": 1, "MISSED": 1, "BLIND": 1, "NO-OP": 1, "UNOBSERVED": 0}, "surface_support_rate": 0.5}
    assert alpha["b"] == {"partition": {"SMART": 2, "MISSED": 1, "BLIND": 0, "NO-OP": 1, "UNOBSERVED": 0}, "surface_support_rate": 0.75}
    code, out, _ = run_cli("judge", "compare", "--db", str(db), "j1", "j3", "--tsv")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("trajectory_id\turl\tprovider") and len(lines) == 4
    assert all(len(line.split("\t")) == 8 for line in lines)
    code, out, _ = run_cli("judge", "compare", "--db", str(db), "j1", "j3")
    assert code == 0 and "0.333" in out and "3 disagreeing items" in out
    code, _, err = run_cli("judge", "compare", "--db", str(db), "j1", "nope")
    assert code == 2 and "'nope' not found" in err and len(err.strip().splitlines()) == 1


def test_judge_compare_rates_on_common_items(tmp_path: Path) -> None:
    """docs/concepts/statistics.md: two runs with identical labels on the items both judged give equal rates, however many items only
    one of them judged (j1 has 8 valid items, j4 copies 4 of them; each run's own report differs)."""
    db = tmp_path / "c.duckdb"
    import_fixture(db, tmp_path / "in")
    same = [
        verdict("j4", "t-a1", "https://example.com/a", labels(True, False)),
        verdict("j4", "t-a2", "https://x.org", labels(False, True)),
        verdict("j4", "t-b1", "https://beta-only.com/z", labels(False, False)),
        verdict("j4", "t-g1", "https://gamma.com/p", labels(False, False)),
    ]
    assert run_cli("import", "--db", str(db), "--judgments", str(write_jsonl(tmp_path / "j4.jsonl", same)))[0] == 0
    code, out, err = run_cli("judge", "compare", "--db", str(db), "j1", "j4", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["items_valid_in_both"] == 4 and res["disagreements"] == []
    assert {name: (p["items_valid_in_both"], p["a"]["surface_support_rate"]) for name, p in res["providers"].items()} \
        == {"alpha": (2, 0.5), "beta": (1, 0.0), "gamma": (1, 0.0)}
    for p in res["providers"].values():
        assert p["a"] == p["b"]
    # the full reports, each on its own valid items, differ for beta (0.5 under j1, 0.0 under j4)
    rates = {run: report_json(db, "--judge-run-id", run)[1]["providers"]["beta"]["surface_support_rate"]
             for run in ("j1", "j4")}
    assert rates == {"j1": 0.5, "j4": 0.0}
