"""SPEC §12 intervals and tests against independent computations (closed forms, hand-made tables)."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from searchtrace.analytics._metrics import TrajectoryStats, provider_metrics
from searchtrace.analytics._uncertainty import RATIOS, mcnemar_exact, sign_flip, uncertainty, wilson
from tests.analytics.analytics_fixture import import_fixture, report_json

Z = 1.959964
ZERO = ("searches fetches input_tokens output_tokens reasoning_tokens page_tokens latency_us domains items valid invalid "
        "snippet_only page_visible smart missed blind noop discovered supported contradicted supported_appearances "
        "supported_rank1").split()


def row(provider: str, qid: str, match: bool | None, epoch: int = 1, **kw: int) -> TrajectoryStats:
    vals: dict[str, Any] = dict.fromkeys(ZERO, 0) | kw
    return TrajectoryStats(stream_id=f"{provider}{qid}{epoch}", trajectory_id=f"{provider}:{qid}~{epoch}",
                           provider=provider, qid=qid, epoch=epoch, gold_answer="paris",
                           final_answer="paris" if match else "rome", semantic_match=match, **vals)


def wilson_closed(x: int, n: int) -> tuple[float, float]:
    """The other textbook form: (x + z²/2 ± z·sqrt(x(n−x)/n + z²/4)) / (n + z²)."""
    root = Z * math.sqrt(x * (n - x) / n + Z * Z / 4)
    return (x + Z * Z / 2 - root) / (n + Z * Z), (x + Z * Z / 2 + root) / (n + Z * Z)


@pytest.mark.parametrize(("x", "n"), [(25, 100), (26, 100), (1, 3), (7, 7), (0, 12)])
def test_wilson_matches_the_closed_form(x: int, n: int) -> None:
    got = wilson(x, n)
    assert got is not None
    lo, hi = wilson_closed(x, n)
    assert math.isclose(got[0], lo, rel_tol=1e-12, abs_tol=1e-15) and math.isclose(got[1], hi, rel_tol=1e-12)


def test_wilson_edges() -> None:
    assert wilson(0, 0) is None
    n = 10
    all_right, all_wrong = wilson(n, n), wilson(0, n)
    assert all_right is not None and all_wrong is not None
    assert math.isclose(all_right[0], n / (n + Z * Z)) and all_right[1] == 1.0  # p̂ = 1: [n/(n+z²), 1]
    assert all_wrong[0] == 0.0 and math.isclose(all_wrong[1], Z * Z / (n + Z * Z))


def test_mcnemar_against_the_binomial() -> None:
    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair
    assert mcnemar_exact(0, 5) == 2 / 32  # 2 · P(X ≤ 0), X ~ Bin(5, ½)
    assert mcnemar_exact(4, 1) == 2 * (1 + 5) / 32
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1
    assert mcnemar_exact(2, 10) == pytest.approx(2 * (1 + 12 + 66) / 4096, rel=1e-15)


def test_paired_tables_by_hand() -> None:
    # 10 questions: both right on 4, a only on 3, b only on 1, both wrong on 2 -> McNemar on (3, 1): 2·(1+4)/16
    pattern = [(True, True)] * 4 + [(True, False)] * 3 + [(False, True)] + [(False, False)] * 2
    rows = {"a": [row("a", f"q{i}", x) for i, (x, _) in enumerate(pattern)],
            "b": [row("b", f"q{i}", y) for i, (_, y) in enumerate(pattern)]}
    _, pairs = uncertainty(rows, replicates=200, seed="s")
    pair = pairs["a|b"]
    assert pair["accuracy_test"] == "mcnemar_exact" and pair["discordant"] == {"a_only_correct": 3, "b_only_correct": 1}
    assert pair["accuracy_diff_p"] == 10 / 16 and pair["accuracy_diff"] == pytest.approx(0.2)
    lo, hi = pair["accuracy_diff_ci"]
    assert lo <= 0.2 <= hi
    for both in (True, False):  # all correct / all wrong on both sides: no discordant pair, a zero difference
        same = {p: [row(p, f"q{i}", both) for i in range(8)] for p in ("a", "b")}
        prov, pairs = uncertainty(same, replicates=200, seed="s")
        assert pairs["a|b"]["accuracy_diff_p"] == 1.0 and pairs["a|b"]["accuracy_diff"] == 0.0
        assert pairs["a|b"]["accuracy_diff_ci"] == [0.0, 0.0]
        assert prov["a"]["accuracy_ci"] == [float(both), float(both)]
        assert prov["a"]["accuracy_wilson"] == wilson(8 if both else 0, 8)


def test_sign_flip_exact_and_drawn() -> None:
    assert sign_flip([Fraction(1)] * 3) == (2 / 8, "sign_flip_exact")  # only ±(1,1,1) reach |3|
    assert sign_flip([Fraction(1), Fraction(-1), Fraction(0)]) == (1.0, "sign_flip_exact")
    assert sign_flip([Fraction(1, 2), Fraction(1, 3)]) == (2 / 4, "sign_flip_exact")  # |±1/2 ± 1/3| ≥ 5/6 twice
    p, how = sign_flip([Fraction(1)] * 25, np.random.Generator(np.random.PCG64(1)))
    assert how == "sign_flip_mc" and 1 / 100_001 <= p < 5e-5  # true p = 2 / 2**25 ≈ 6e-8
    # epochs: per-question mean differences are the unit (3 epochs, 2 questions)
    rows = {"a": [row("a", q, True, e) for q in ("q1", "q2") for e in (1, 2, 3)],
            "b": [row("b", q, e == 1, e) for q in ("q1", "q2") for e in (1, 2, 3)]}
    _, pairs = uncertainty(rows, replicates=100, seed="s")
    assert pairs["a|b"]["accuracy_test"] == "sign_flip_exact" and pairs["a|b"]["accuracy_diff_p"] == 0.5


def synthetic(n: int, copies: int = 1) -> dict[str, list[TrajectoryStats]]:
    """Two providers on n questions with varied facts; `copies` repeats every question under new qids."""
    rng = random.Random(7)
    out: dict[str, list[TrajectoryStats]] = {"p": [], "r": []}
    for i in range(n):
        for name in out:
            facts = {"searches": rng.randint(1, 5), "fetches": rng.randint(0, 3), "input_tokens": rng.randint(100, 900),
                     "output_tokens": rng.randint(10, 90), "valid": rng.randint(2, 9)}
            facts["supported"] = rng.randint(0, facts["valid"])
            facts["contradicted"] = rng.randint(0, 2)
            facts["supported_appearances"] = facts["supported"] + rng.randint(0, 2)
            facts["supported_rank1"] = rng.randint(0, facts["supported_appearances"])
            match = rng.random() < 0.5
            for c in range(copies):
                out[name].append(row(name, f"q{i:03d}-{c}", match, **facts))
    return out


def widths(block: dict[str, Any]) -> dict[str, float]:
    return {k: block[f"{k}_ci"][1] - block[f"{k}_ci"][0] for k in RATIOS}


def test_bootstrap_contains_points_is_seeded_and_narrows_with_more_questions() -> None:
    data = synthetic(40)
    prov, pairs = uncertainty(data, replicates=2000, seed="one")
    for name, block in prov.items():
        point = provider_metrics(data[name])
        for key in RATIOS:
            lo, hi = block[f"{key}_ci"]
            assert lo <= point[key] <= hi, (name, key)
    assert uncertainty(data, replicates=2000, seed="one") == (prov, pairs)  # same seed: the same numbers
    other, _ = uncertainty(data, replicates=2000, seed="two")
    for key in ("surface_support_rate", "contradiction_gold_ratio", "input_tokens_per_trajectory",
                "output_tokens_per_trajectory", "gold_rank1_share"):  # the near-continuous ones move with the seed
        assert other["p"][f"{key}_ci"] != prov["p"][f"{key}_ci"], key
    four, _ = uncertainty(synthetic(40, copies=4), replicates=2000, seed="one")
    ratios = [widths(four["p"])[k] / w for k, w in widths(prov["p"]).items() if w > 0]
    assert len(ratios) >= 10
    assert 0.4 < float(np.median(ratios)) < 0.6 and all(0.3 < x < 0.75 for x in ratios), ratios  # 1/sqrt(4) = 0.5


def test_report_json_with_intervals_is_byte_identical_per_seed(tmp_path: Path) -> None:
    db = tmp_path / "u.duckdb"
    import_fixture(db, tmp_path / "in")
    text, rep = report_json(db, "--judge-run-id", "j1")
    again, _ = report_json(db, "--judge-run-id", "j1")
    assert text == again
    assert rep["uncertainty"] == {"bootstrap": 2000, "seed": "searchtrace", "level": 0.95, "unit": "question"}
    other, _ = report_json(db, "--judge-run-id", "j1", "--seed", "another", "--bootstrap", "500")
    assert other != text
    off, plain = report_json(db, "--judge-run-id", "j1", "--bootstrap", "0")
    assert "uncertainty" not in plain and not any(k.endswith("_ci") for b in plain["providers"].values() for k in b)
    # the intervals only add keys: every key of the plain report keeps its value
    for name, block in plain["providers"].items():
        assert {k: rep["providers"][name][k] for k in block} == block
    assert plain["complementarity"] == rep["complementarity"] and "paired" not in plain
    assert sorted(rep["paired"]) == sorted(rep["complementarity"])
    assert json.loads(off) == plain


def test_html_draws_the_intervals(tmp_path: Path) -> None:
    from searchtrace.analytics import Report, render

    db = tmp_path / "h.duckdb"
    import_fixture(db, tmp_path / "in")
    _, rep = report_json(db, "--judge-run-id", "j1")
    page = render(msgspec.convert(rep, Report))
    section = page.split("<h2>How sure: 95% intervals</h2>", 1)[1].split("<h2>Per provider</h2>", 1)[0]
    # one whisker (line + two caps) and one dot per provider with a defined estimate, per metric chart
    defined = sum(rep["providers"][n]["accuracy_ci"] is not None for n in rep["providers"])
    acc = section.split("<h3>accuracy</h3>", 1)[1].split("<h3>", 1)[0]
    assert acc.count("<circle") == defined and acc.count('stroke-width="2"') == defined
    assert "Wilson" in acc and "Paired differences" in section and "p=" in section
    _, plain = report_json(db, "--judge-run-id", "j1", "--bootstrap", "0")
    assert "How sure" not in render(msgspec.convert(plain, Report))
