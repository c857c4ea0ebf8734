"""docs/concepts/statistics.md judge-error correction: the stratified difference estimator, its intervals, and the report wiring."""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path

import msgspec
import numpy as np
import pytest
from rich.console import Console

from searchtrace.analytics import JudgedCase, build_report, html, render_table
from searchtrace.store import (
    AuditCase,
    AuditDesign,
    AuditLabel,
    AuditStratum,
    EventLog,
    JudgeItemRef,
    NewEvent,
    stable_event_id,
)
from tests.analytics.analytics_fixture import corrected
from tests.analytics.test_audit import build_store


def case(provider: str, qid: str, judge: bool, human: bool | str | None = None,
         label: str = "supports_gold") -> JudgedCase:
    return JudgedCase(provider=provider, qid=qid, label=label, judge_value=judge, human_value=human)  # type: ignore[arg-type]


def hand_example() -> tuple[list[JudgedCase], dict[tuple[str, str], int]]:
    """Provider a: 10 valid items over 2 questions, 9 with snippet labels (3 judged true, 6 false), one without."""
    cases = [
        case("a", "q1", True, True), case("a", "q1", True, False), case("a", "q1", False), case("a", "q1", False),
        case("a", "q2", True), case("a", "q2", False, False), case("a", "q2", False, False),
        case("a", "q2", False, True), case("a", "q2", False, "unclear"),
    ]
    return cases, {("a", "q1"): 4, ("a", "q2"): 6}


def test_hand_computed_stratified_example() -> None:
    cases, valid = hand_example()
    block = corrected(cases, valid, replicates=0, seed="s")[0]["a"]
    # judge: 3 of 10. Stratum "judge true" (N=3): humans 1 of 2 -> mean(human - judge) = -1/2;
    # stratum "judge false" (N=6): humans 1 of 3 clear (one unclear, excluded) -> +1/3.
    assert block["surface_support_rate"] is None  # the judge's own rate is the report's (analytics._metrics): left alone
    assert block["surface_support_rate_corrected"] == float(Fraction(3, 10) + Fraction(3, 10) * Fraction(-1, 2)
                                                           + Fraction(6, 10) * Fraction(1, 3))  # 0.35
    # judge TPR = N1·p1 / (N1·p1 + N0·p0) = 1.5 / 3.5; TNR = N0·(1-p0) / (N0·(1-p0) + N1·(1-p1)) = 4 / 5.5
    assert block["judge_tpr"] == float(Fraction(3, 7)) and block["judge_tnr"] == float(Fraction(8, 11))
    assert block["surface_support_rate_corrected_labels"] == 5 and block["corrected_unclear"] == 1
    assert block["corrected_unaudited_strata"] == 0
    assert "surface_support_rate_corrected_ci" not in block  # points only without replicates
    # no contradicts_gold case at all: that rate is 0 by the judge and has nothing to correct it
    assert block["surface_contradiction_rate"] == 0.0 and block["surface_contradiction_rate_corrected"] is None


def random_cases(rng: np.random.Generator, providers: tuple[str, ...], n: int, m: int, k: int,
                 agree: bool) -> tuple[list[JudgedCase], dict[tuple[str, str], int]]:
    """m items per question (one without snippet labels), k audited per stratum; human = judge when `agree`."""
    cases: list[JudgedCase] = []
    valid: dict[tuple[str, str], int] = {}
    for prov in providers:
        drawn: list[tuple[str, bool, bool, str]] = []
        for q in range(n):
            qid = f"q{q:03d}"
            valid[(prov, qid)] = m
            for _ in range(m - 1):
                for label in ("supports_gold", "contradicts_gold"):
                    truth = bool(rng.random() < 0.3)
                    judge = truth if agree else bool(rng.random() < (0.85 if truth else 0.2))
                    drawn.append((qid, judge, truth, label))
        chosen: set[int] = set()
        for label in ("supports_gold", "contradicts_gold"):
            for v in (False, True):
                idx = [i for i, d in enumerate(drawn) if d[1] == v and d[3] == label]
                chosen |= {int(i) for i in rng.permutation(idx)[:k]}
        cases += [case(prov, qid, judge, truth if i in chosen else None, label)
                  for i, (qid, judge, truth, label) in enumerate(drawn)]
    return cases, valid


def test_equals_the_judge_rate_when_humans_agree_on_every_audited_case() -> None:
    cases, valid = random_cases(np.random.default_rng(1), ("a", "b"), 25, 4, 6, agree=True)
    providers, pairs = corrected(cases, valid, replicates=200, seed="s")
    for prov, block in providers.items():
        judged = [c for c in cases if c.provider == prov]
        n = sum(v for (p, _), v in valid.items() if p == prov)
        for label, rate in (("supports_gold", "surface_support_rate"), ("contradicts_gold", "surface_contradiction_rate")):
            exact = Fraction(sum(c.judge_value for c in judged if c.label == label), n)
            assert block[f"{rate}_corrected"] == float(exact)
            assert rate == "surface_support_rate" or block[rate] == float(exact)  # the report has the other
            lo, hi = block[f"{rate}_corrected_ci"]
            assert lo < float(exact) < hi  # the correction's own uncertainty remains: never a zero width
        assert block["judge_tpr"] == block["judge_tnr"] == 1.0
        assert block["corrected_labels"] == 4 * 6
    a, b = providers["a"], providers["b"]
    assert pairs["a|b"]["surface_support_rate_corrected_diff"] == pytest.approx(
        a["surface_support_rate_corrected"] - b["surface_support_rate_corrected"])
    assert pairs["a|b"]["surface_support_rate_corrected_diff_questions"] == 25


def test_a_pair_compares_the_questions_both_ran() -> None:
    cases, valid = random_cases(np.random.default_rng(2), ("a", "b"), 20, 3, 4, agree=False)
    extra, more = random_cases(np.random.default_rng(5), ("a",), 26, 3, 2, agree=False)
    late = {q for (_, q) in more} - {q for (_, q) in valid}  # a's questions b never ran
    cases += [c for c in extra if c.qid in late]
    valid |= {k: v for k, v in more.items() if k[1] in late}
    providers, pairs = corrected(cases, valid, replicates=300, seed="s")
    common = [c for c in cases if c.qid not in late]
    alone = corrected(common, {k: v for k, v in valid.items() if k[1] not in late}, replicates=300, seed="s")[0]
    pair = pairs["a|b"]
    assert pair["surface_support_rate_corrected_diff_questions"] == 20
    assert pair["surface_support_rate_corrected_diff"] == pytest.approx(
        alone["a"]["surface_support_rate_corrected"] - alone["b"]["surface_support_rate_corrected"])
    assert providers["a"]["surface_support_rate_corrected"] != alone["a"]["surface_support_rate_corrected"]
    lo, hi = pair["surface_support_rate_corrected_diff_ci"]
    assert lo < pair["surface_support_rate_corrected_diff"] < hi and 0 < pair["surface_support_rate_corrected_diff_p"] <= 1
    assert pair["surface_support_rate_corrected_diff_labels"] == [
        alone["a"]["surface_support_rate_corrected_labels"], alone["b"]["surface_support_rate_corrected_labels"]]


def test_matches_ppi_python_unstratified_and_weighted() -> None:
    """ppi-python (an independent prediction-powered implementation) as the oracle: with one item per question,
    a proportional sample (n_h / N_h equal across strata) makes the stratified estimator the plain PPI mean
    (lam = 1); any stratified sample equals PPI with sample weights N_h / n_h (normalised)."""
    import ppi_py  # type: ignore[import-untyped]  # imported here: numba and statsmodels come with it, a few seconds only this test pays
    rng = np.random.default_rng(3)
    n_items = 3000
    judge = np.arange(n_items) < 750  # strata of 750 and 2250 items: a 10 % sample of each is exactly proportional
    truth = rng.random(n_items) < np.where(judge, 0.7, 0.08)
    strata = {v: np.flatnonzero(judge == v) for v in (False, True)}
    for share in ({False: 0.1, True: 0.1}, {False: 0.05, True: 0.3}):
        chosen = np.concatenate([rng.permutation(idx)[: round(share[v] * idx.size)] for v, idx in strata.items()])
        audited = np.zeros(n_items, dtype=bool)
        audited[chosen] = True
        cases = [case("a", f"q{i:04d}", bool(judge[i]), bool(truth[i]) if audited[i] else None) for i in range(n_items)]
        valid = {("a", f"q{i:04d}"): 1 for i in range(n_items)}
        block = corrected(cases, valid, replicates=1000, seed="ppi")[0]["a"]
        y, yhat = truth[audited].astype(float), judge[audited].astype(float)
        big = {v: idx.size for v, idx in strata.items()}
        small = {v: int(audited[idx].sum()) for v, idx in strata.items()}
        w = np.array([big[bool(j)] / small[bool(j)] for j in judge[audited]])
        w = w / w.mean()
        weighted = float(ppi_py.ppi_mean_pointestimate(y, yhat, judge.astype(float), lam=1, w=w)[0])
        assert block["surface_support_rate_corrected"] == pytest.approx(weighted, abs=1e-12)
        if share[False] == share[True]:
            plain = float(ppi_py.ppi_mean_pointestimate(y, yhat, judge.astype(float), lam=1)[0])
            assert block["surface_support_rate_corrected"] == pytest.approx(plain, abs=1e-12)
            lo, hi = ppi_py.ppi_mean_ci(y, yhat, judge.astype(float), alpha=0.05, lam=1)
            ours = block["surface_support_rate_corrected_ci"]
            # different interval methods (CLT there, bootstrap here): roughly the same place and width
            assert abs((ours[0] + ours[1]) - float(lo[0] + hi[0])) / 2 < 0.25 * float(hi[0] - lo[0])
            assert 0.7 < (ours[1] - ours[0]) / float(hi[0] - lo[0]) < 1.6


def test_a_stratum_without_enough_labels_refuses_the_correction() -> None:
    # judge-false stratum unaudited: the correction does not guess it (it used to keep the judge's 0 there)
    cases = [case("a", "q1", True, False), case("a", "q1", False), case("a", "q2", False)]
    block = corrected(cases, {("a", "q1"): 2, ("a", "q2"): 1}, replicates=50, seed="s")[0]["a"]
    assert block["surface_support_rate_corrected"] is None and block["surface_support_rate_corrected_ci"] is None
    assert block["corrected_unaudited_strata"] == 1
    # the judge-true stratum has one label, fewer than the default 2: named as well
    assert block["corrected_missing_strata"] == ["a|snippet|supports_gold|false", "a|snippet|supports_gold|true"]
    assert block["judge_tpr"] is None and block["judge_tnr"] is None and block["judge_tpr_ci"] is None
    # one label per stratum is enough when the design asks for one
    cases = [case("a", "q1", True, False), case("a", "q1", False, False), case("a", "q2", False)]
    block = corrected(cases, {("a", "q1"): 2, ("a", "q2"): 1}, replicates=50, seed="s", min_labels=1)[0]["a"]
    assert block["surface_support_rate_corrected"] == 0.0 and block["corrected_missing_strata"] == []
    assert block["surface_support_rate_corrected_ci"] is not None


def test_an_audit_of_judge_true_cases_only_gives_no_corrected_figure_and_no_p_value() -> None:
    # the case: every judge-true case audited (human says false on one), no judge-false case audited
    rng = np.random.default_rng(7)
    cases: list[JudgedCase] = []
    valid: dict[tuple[str, str], int] = {}
    for prov in ("a", "b"):
        for q in range(20):
            qid = f"q{q:02d}"
            valid[(prov, qid)] = 5
            for j in range(5):
                judge = bool(rng.random() < 0.1)
                human = (j != 0) if judge else None
                cases.append(case(prov, qid, judge, human))
    providers, pairs = corrected(cases, valid, replicates=200, seed="s")
    for prov in ("a", "b"):
        block = providers[prov]
        assert block["surface_support_rate_corrected"] is None and block["surface_support_rate_corrected_ci"] is None
        assert f"{prov}|snippet|supports_gold|false" in block["corrected_missing_strata"]
    pair = pairs["a|b"]
    assert pair["surface_support_rate_corrected_diff"] is None and pair["surface_support_rate_corrected_diff_p"] is None
    assert pair["surface_support_rate_corrected_diff_ci"] is None
    assert pair["surface_support_rate_corrected_diff_missing_strata"] == [
        "a|snippet|supports_gold|false", "b|snippet|supports_gold|false"]


def test_bad_cases_are_refused() -> None:
    with pytest.raises(ValueError, match="no valid-item count"):
        corrected([case("a", "q9", True)], {("a", "q1"): 1}, replicates=0, seed="s")
    with pytest.raises(ValueError, match="more cases of one label than valid items"):
        corrected([case("a", "q1", True), case("a", "q1", False)], {("a", "q1"): 1}, replicates=0, seed="s")


# -- the report ------------------------------------------------------------------------------------------------


def _label(tid: str, url_n: str, label: str, judge: bool, human: bool | str) -> NewEvent:
    a = AuditLabel(judge_run_id="j1", item=JudgeItemRef(trajectory_id=tid, url_normalized=url_n), surface="snippet",
                   label=label, judge_value=judge, human_value=human)  # type: ignore[arg-type]
    return NewEvent(stream_id="audit:j1", run_id="j1", payload=a,
                    event_id=stable_event_id("audit.label", tid, url_n, label, str(human)))


def labelled_store(db: Path, *, design: bool) -> None:
    """test_audit's store (alpha, beta × 3 questions × 4 items, judge run j1) with human snippet labels: on alpha
    the human says false to every audited supports_gold case, on beta the human agrees with the judge; one
    extra label (beta q2, contradicts) is outside the design."""
    expected = build_store(db)
    snippet = [e for e in expected if e[3] == "snippet" and e[4] in ("supports_gold", "contradicts_gold")]
    drawn = [e for e in snippet if not (e[0] == "beta" and e[1].endswith("q2"))]
    events = [_label(tid, url_n, label, value, False if prov == "alpha" and label == "supports_gold" else value)
              for prov, tid, url_n, _, label, value in drawn]
    extra = next(e for e in snippet if e not in drawn and e[4] == "contradicts_gold")
    events.append(_label(extra[1], extra[2], extra[4], extra[5], not extra[5]))
    if design:
        strata: dict[tuple[str, str, bool], list[int]] = {}
        for prov, _, _, _, label, value in snippet:
            strata.setdefault((prov, label, value), [0, 0])[0] += 1
        for prov, _, _, _, label, value in drawn:
            strata[(prov, label, value)][1] += 1
        events.append(NewEvent(stream_id="audit:j1", run_id="j1", event_id=stable_event_id("audit.design", "j1"),
                               payload=AuditDesign(
            judge_run_id="j1", seed="s", k=100,
            strata=[AuditStratum(provider=p, surface="snippet", label=lab, judge_value=v, population=big, sampled=n)  # type: ignore[arg-type]
                    for (p, lab, v), (big, n) in sorted(strata.items())],
            cases=[AuditCase(trajectory_id=tid, url_normalized=url_n, surface="snippet", label=label)  # type: ignore[arg-type]
                   for _, tid, url_n, _, label, _ in drawn])))
    with EventLog(db) as log:
        log.append(events)


def test_report_adds_corrected_rates_and_shows_them(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    labelled_store(db, design=True)
    with EventLog(db) as log:
        plain = build_report(log.cursor(), writable=False).report
        built = build_report(log.cursor(), writable=False, bootstrap=200, seed="s")
    rep = built.report
    alpha, beta = (msgspec.to_builtins(rep.providers[n]) for n in ("alpha", "beta"))
    assert alpha["surface_support_rate_corrected"] == 0.0  # every judged-true snippet is false to the human
    assert beta["surface_support_rate_corrected"] == beta["surface_support_rate"]  # the human agrees
    assert beta["surface_contradiction_rate_corrected"] == beta["surface_contradiction_rate"]
    assert beta["surface_contradiction_rate"] == beta["surface_contradicted_items"] / beta["valid_items"]
    assert alpha["judge_tnr"] is not None and alpha["judge_tpr"] is None  # no human "true": TPR undefined
    assert beta["surface_support_rate_corrected_labels"] == 7  # q0 has 3 valid items, q2 was not drawn
    assert any("1 human snippet labels of judge run j1 are not in a recorded audit sample" in n for n in built.notes)
    assert plain.providers["alpha"].surface_support_rate_corrected == 0.0  # points without a bootstrap
    assert "surface_support_rate_corrected_ci" not in msgspec.to_builtins(plain.providers["alpha"])
    assert len(alpha["surface_support_rate_corrected_ci"]) == 2
    pair = msgspec.to_builtins(rep.pairs["alpha|beta"])
    assert pair["surface_support_rate_corrected_diff"] == pytest.approx(-beta["surface_support_rate_corrected"])
    assert 0 < pair["surface_support_rate_corrected_diff_p"] <= 1 and "accuracy_diff" in pair
    out = io.StringIO()
    render_table(rep, Console(file=out, width=200))
    text = out.getvalue()
    assert "corrected for judge error" in text and "human labels it rests on" in text
    assert "corrected surface support, A − B" in text
    page = html.render(rep)
    assert "<h2>Corrected for judge error</h2>" in page and "human labels A / B" in page


def test_report_without_a_design_uses_every_label_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    labelled_store(db, design=False)
    with EventLog(db) as log:
        built = build_report(log.cursor(), writable=False)
    assert built.report.providers["beta"].surface_support_rate_corrected_labels == 7
    assert built.report.providers["beta"].surface_contradiction_rate_corrected_labels == 8  # the extra one too
    assert any("no recorded audit design" in n for n in built.notes)


def test_report_without_human_labels_is_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    build_store(db)
    with EventLog(db) as log:
        built = build_report(log.cursor(), writable=False)
    assert not any("corrected" in k or k.startswith("judge_t")
                   for p in built.report.to_builtins()["providers"].values() for k in p)
    out = io.StringIO()
    render_table(built.report, Console(file=out, width=200))
    assert "corrected" not in out.getvalue()
    assert "Corrected for judge error" not in html.render(built.report)
