"""docs/how-to/audit.md: balanced audit sample (TSV), strict label import as events, agreement overall and per leaf."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from searchtrace.store import (
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeDefault,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    NewEvent,
    Payload,
    SearchCalled,
    SearchResult,
    TrajectoryStarted,
    Verdict,
)
from tests.builders import run_cli

LABELS = ("supports_gold", "contradicts_gold", "relevant")
Expected = list[tuple[str, str, str, str, str, bool]]  # provider, tid, url_n, surface, label, value


def _verdict(jr: str, tid: str, url_n: str, snippet: Labels, page: Labels | None) -> JudgeVerdict:
    return JudgeVerdict(
        judge_run_id=jr,
        item=JudgeItemRef(trajectory_id=tid, url_normalized=url_n),
        surface="page" if page else "snippet",
        valid=True,
        labels=Verdict(snippet=snippet, page=page, supports_final_answer=False, rationale="r"),
    )


def build_store(path: Path) -> Expected:
    """Two providers × 3 questions × 4 items (one seen twice as a utm_ variant); the expected audit cases of j1."""
    expected: Expected = []
    with EventLog(path) as log:
        log.append(
            [
                NewEvent(
                    stream_id=f"judge:{jr}",
                    run_id=jr,
                    payload=JudgeStarted(judge_run_id=jr, model="m", prompt_version="1", prompt_sha256="x"),
                )
                for jr in ("j2", "j1")
            ]
        )
        for pi, prov in enumerate(("alpha", "beta")):
            for q in range(3):
                tid = f"run:{prov}:q{q}"
                page = f"Intro text. The answer to question {q} is Gold{q}, as recorded.\tMore text."
                digest = log.put_blob(page.encode())
                evs: list[Payload] = [
                    TrajectoryStarted(
                        trajectory_id=tid,
                        qid=f"q{q}",
                        provider=prov,
                        question=f"Question {q}?",
                        gold_answer=f"Gold{q}",
                    ),
                    SearchCalled(call_id="s1", iteration=0, query="x"),
                ]
                for r in range(1, 5):
                    url = f"https://site{r}.example/q{q}"
                    evs.append(
                        SearchResult(
                            call_id="s1",
                            doc_id=f"d{r}",
                            rank=r,
                            title=f"T{r}",
                            url=url,
                            url_normalized=url,
                            domain=f"site{r}.example",
                            snippet=f"snippet {prov} {q} {r}\nsecond line",
                        )
                    )
                evs.append(
                    SearchResult(
                        call_id="s1",
                        doc_id="d5",
                        rank=5,
                        title="T1",
                        url=f"https://SITE1.example/q{q}?utm_source=z",
                        url_normalized=f"https://site1.example/q{q}",
                        domain="site1.example",
                        snippet="variant",
                    )
                )
                evs += [
                    FetchCalled(call_id="f1", iteration=1, doc_id="d2", url=""),
                    FetchCompleted(
                        call_id="f1",
                        doc_id="d2",
                        status="ok",
                        content_digest=digest,
                        n_bytes=len(page),
                        n_tokens=10,
                        cache_hit=False,
                        latency_ms=1.0,
                    ),
                    FetchCalled(call_id="f2", iteration=1, doc_id="d3", url=""),
                    FetchCompleted(
                        call_id="f2",
                        doc_id="d3",
                        status="timeout",
                        content_digest=None,
                        n_bytes=0,
                        n_tokens=0,
                        cache_hit=False,
                        latency_ms=1.0,
                    ),
                ]
                log.append([NewEvent(stream_id=f"traj:{tid}", run_id="run", payload=p) for p in evs])
                judged: list[Payload] = []
                for r in range(1, 5):
                    url_n = f"https://site{r}.example/q{q}"
                    judged.append(
                        _verdict(
                            "j2",
                            tid,
                            url_n,
                            Labels(supports_gold=True, contradicts_gold=True, relevant=True),
                            None
                            if r != 2
                            else Labels(supports_gold=True, contradicts_gold=True, relevant=True),
                        )
                    )
                    if q == 0 and r == 4:
                        judged.append(
                            JudgeVerdict(
                                judge_run_id="j1",
                                item=JudgeItemRef(trajectory_id=tid, url_normalized=url_n),
                                surface="snippet",
                                valid=False,
                                labels=None,
                                invalid_reason="bad json",
                            )
                        )
                        continue
                    snip = Labels(
                        supports_gold=(r + q + pi) % 2 == 0, contradicts_gold=r == 3, relevant=r != 4
                    )
                    pg = Labels(supports_gold=True, contradicts_gold=False, relevant=True) if r == 2 else None
                    judged.append(_verdict("j1", tid, url_n, snip, pg))
                    for surface, labels in (("snippet", snip), ("page", pg)):
                        if labels is not None:
                            expected += [
                                (prov, tid, url_n, surface, lab, getattr(labels, lab)) for lab in LABELS
                            ]
                log.append([NewEvent(stream_id="judge:j", run_id="j", payload=p) for p in judged])
        # j2 gave the first valid verdict; `judge --default` makes j1 the default judge run
        log.append([NewEvent(stream_id="judge:j1", run_id="j1", payload=JudgeDefault(judge_run_id="j1"))])
    return expected


def read_tsv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(), newline=""), delimiter="\t"))


def write_tsv(path: Path, rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue())


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Expected]:
    db = tmp_path / "st.duckdb"
    return db, build_store(db)


def test_sample_is_balanced_and_deterministic(
    store: tuple[Path, Expected], tmp_path: Path
) -> None:
    db, expected = store
    out = tmp_path / "a.tsv"
    code, stdout, err = run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(out))
    assert code == 0, err
    rows = read_tsv(out)
    leaves: dict[tuple[str, str, str, bool], list[tuple[str, str, str, str]]] = {}
    for prov, tid, url_n, surface, label, value in expected:
        leaves.setdefault((prov, surface, label, value), []).append((tid, url_n, surface, label))
    want = Counter({leaf: min(2, len(members)) for leaf, members in leaves.items()})
    got = Counter((r["provider"], r["surface"], r["label"], r["judge_value"] == "true") for r in rows)
    assert got == want
    assert len(rows) == sum(want.values())
    for leaf, members in leaves.items():
        ranked = sorted(members, key=lambda m: hashlib.sha256(("s" + "|".join(m)).encode()).hexdigest())[:2]
        chosen = [
            (r["trajectory_id"], r["url_normalized"], r["surface"], r["label"])
            for r in rows
            if (r["provider"], r["surface"], r["label"], r["judge_value"] == "true") == leaf
        ]
        assert sorted(chosen) == sorted(ranked), leaf
    # the invalid verdict never appears, the judge run is the default one (j1, not j2)
    assert not any(
        r["trajectory_id"] == "run:alpha:q0" and r["url_normalized"].startswith("https://site4") for r in rows
    )
    assert {r["judge_run_id"] for r in rows} == {"j1"}
    # evidence: the snippet on one line, or the page around the gold answer
    for r in rows:
        assert (
            r["human_value"] == ""
            and r["question"].startswith("Question")
            and r["gold_answer"].startswith("Gold")
        )
        assert r["title"] == "T" + r["url_normalized"].split("site")[1][0]
        if r["surface"] == "snippet":
            assert r["evidence"].startswith("snippet ") and "\n" not in r["evidence"]
        else:
            assert r["gold_answer"] in r["evidence"] and "\t" not in r["evidence"]
    # same seed -> same file; another seed -> another choice in the leaves that have more than k
    out2 = tmp_path / "b.tsv"
    run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(out2))
    assert out2.read_bytes() == out.read_bytes()
    run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "other", "--out", str(out2))
    assert out2.read_bytes() != out.read_bytes()
    # all of a leaf when it has fewer than k; explicit judge run
    run_cli("audit", "sample", "--db", str(db), "--k", "100", "--judge-run-id", "j1", "--out", str(out2))
    assert len(read_tsv(out2)) == len(expected)


def fill(rows: list[dict[str, str]], values: list[str]) -> list[dict[str, str]]:
    return [dict(r, human_value=v) for r, v in zip(rows, values, strict=True)]


def count_labels(db: Path) -> int:
    with EventLog(db, read_only=True) as log:
        return sum(1 for _ in log.read(types=["audit.label"]))


def test_import_and_agreement(
    store: tuple[Path, Expected], tmp_path: Path
) -> None:
    db, expected = store
    population = Counter((prov, surface, label, value) for prov, _, _, surface, label, value in expected)
    tsv = tmp_path / "a.tsv"
    run_cli("audit", "sample", "--db", str(db), "--k", "1", "--seed", "s", "--out", str(tsv))
    rows = read_tsv(tsv)[:6]
    # agree, agree, disagree, unclear, (unlabelled), agree -- written with the judge's own value where agreeing
    flip = {"true": "false", "false": "true"}
    values = [
        rows[0]["judge_value"],
        rows[1]["judge_value"].upper(),
        flip[rows[2]["judge_value"]],
        " Unclear ",
        "",
        rows[5]["judge_value"],
    ]
    labelled = tmp_path / "l.tsv"
    write_tsv(labelled, fill(rows, values))
    code, out, err = run_cli("audit", "import", "--db", str(db), str(labelled))
    assert code == 0, err
    assert "5 new labels" in out and "1 without a human value" in out
    assert count_labels(db) == 5
    # idempotent
    code, out, _ = run_cli("audit", "import", "--db", str(db), str(labelled))
    assert code == 0 and "0 new labels" in out and count_labels(db) == 5
    code, out, _ = run_cli("audit", "agreement", "--db", str(db), "--json")
    result = json.loads(out)
    assert result["judge_run_id"] == "j1"
    # no kappa overall or per leaf (a leaf's judge value is constant); kappa per label: test_weighted_kappa_per_label
    assert result["overall"] == {"labelled": 5, "unclear": 1, "clear": 4, "agree": 3, "agreement": 0.75}
    assert all("kappa" not in leaf for leaf in result["leaves"].values())
    leaf = lambda r: f"{r['provider']}|{r['surface']}|{r['label']}|{r['judge_value']}"  # noqa: E731
    assert result["leaves"][leaf(rows[2])]["agree"] == 0
    assert result["leaves"][leaf(rows[3])] == {
        "labelled": 1,
        "unclear": 1,
        "clear": 0,
        "agree": 0,
        "agreement": None,
        "population": population[(rows[3]["provider"], rows[3]["surface"], rows[3]["label"],
                                  rows[3]["judge_value"] == "true")],  # N_h of the recorded design
    }
    assert leaf(rows[4]) not in result["leaves"] or result["leaves"][leaf(rows[4])]["labelled"] == 0
    # the human changes their mind on row 2 and back: each change is an event, the latest counts
    values[2] = rows[2]["judge_value"]
    write_tsv(labelled, fill(rows, values))
    run_cli("audit", "import", "--db", str(db), str(labelled))
    assert count_labels(db) == 6
    result = json.loads(run_cli("audit", "agreement", "--db", str(db), "--json")[1])
    assert result["overall"]["agree"] == 4 and result["overall"]["agreement"] == 1.0
    values[2] = flip[rows[2]["judge_value"]]
    write_tsv(labelled, fill(rows, values))
    run_cli("audit", "import", "--db", str(db), str(labelled))
    assert count_labels(db) == 7
    result = json.loads(run_cli("audit", "agreement", "--db", str(db), "--json")[1])
    assert result["overall"]["agree"] == 3
    # terminal table names every leaf and the overall line
    code, out, _ = run_cli("audit", "agreement", "--db", str(db))
    assert code == 0 and "overall" in out and leaf(rows[0]) in out and "75.0%" in out


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r.__setitem__("human_value", "maybe"), "line 3: field human_value"),
        (
            lambda r: r.__setitem__("judge_value", "true" if r["judge_value"] == "false" else "false"),
            "line 3: field judge_value",
        ),
        (lambda r: r.__setitem__("judge_value", "yes"), "line 3: field judge_value"),
        (lambda r: r.__setitem__("surface", "title"), "line 3: field surface"),
        (lambda r: r.__setitem__("label", "useful"), "line 3: field label"),
        (
            lambda r: r.__setitem__("url_normalized", "https://nowhere.example/"),
            "line 3: field url_normalized",
        ),
        (lambda r: r.__setitem__("trajectory_id", "nope"), "line 3: field url_normalized"),
        (lambda r: r.__setitem__("judge_run_id", "j9"), "line 3: field judge_run_id"),
        (lambda r: r.__setitem__("provider", "gamma"), "line 3: field provider"),
    ],
)
def test_import_is_strict_and_writes_nothing(
    store: tuple[Path, Expected],
    tmp_path: Path,
    mutate: object,
    needle: str,
) -> None:
    db, _ = store
    tsv = tmp_path / "a.tsv"
    run_cli("audit", "sample", "--db", str(db), "--k", "1", "--seed", "s", "--out", str(tsv))
    rows = fill(read_tsv(tsv)[:3], ["true", "false", "true"])
    assert callable(mutate)
    mutate(rows[1])
    bad = tmp_path / "bad.tsv"
    write_tsv(bad, rows)
    code, out, err = run_cli("audit", "import", "--db", str(db), str(bad))
    assert code == 2, out
    assert len(err.strip().splitlines()) == 1 and needle in err and str(bad) in err
    assert count_labels(db) == 0


def test_import_rejects_duplicates_missing_columns_and_page_on_snippet_item(
    store: tuple[Path, Expected], tmp_path: Path
) -> None:
    db, _ = store
    tsv = tmp_path / "a.tsv"
    run_cli("audit", "sample", "--db", str(db), "--k", "1", "--seed", "s", "--out", str(tsv))
    rows = fill(read_tsv(tsv)[:2], ["true", "false"])
    bad = tmp_path / "bad.tsv"
    write_tsv(bad, [rows[0], rows[1], dict(rows[0], human_value="false")])
    code, _, err = run_cli("audit", "import", "--db", str(db), str(bad))
    assert code == 2 and "line 4" in err and "line 2" in err
    write_tsv(bad, [{k: v for k, v in r.items() if k != "human_value"} for r in rows])
    code, _, err = run_cli("audit", "import", "--db", str(db), str(bad))
    assert code == 2 and "'human_value'" in err
    snippet_only = next(
        r
        for r in read_tsv(tsv)
        if r["surface"] == "snippet" and not r["url_normalized"].startswith("https://site2")
    )
    write_tsv(bad, [dict(snippet_only, surface="page", human_value="true")])
    code, _, err = run_cli("audit", "import", "--db", str(db), str(bad))
    assert code == 2 and "not page-visible" in err
    assert count_labels(db) == 0


def test_no_judge_run_is_bad_input(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    EventLog(db).close()
    code, _, err = run_cli("audit", "sample", "--db", str(db), "--out", str(tmp_path / "x.tsv"))
    assert code == 2 and "no judge run" in err
    code, _, err = run_cli("audit", "agreement", "--db", str(db), "--judge-run-id", "zz")
    assert code == 2 and "'zz'" in err
    missing = tmp_path / "missing.duckdb"
    (tmp_path / "x.tsv").write_text("judge_run_id\n")
    code, _, err = run_cli("audit", "import", "--db", str(missing), str(tmp_path / "x.tsv"))
    assert code == 2 and "no such database" in err and not missing.exists()
    code, _, err = run_cli("audit", "sample", "--db", str(missing), "--out", str(tmp_path / "y.tsv"))
    assert code == 2 and not missing.exists()


def designs(db: Path) -> list[dict[str, object]]:
    with EventLog(db, read_only=True) as log:
        return [{"stream": ev.stream_id, **msgspec.to_builtins(ev.payload)} for ev in log.read(types=["audit.design"])]


def test_sample_records_its_design(store: tuple[Path, Expected], tmp_path: Path) -> None:
    """docs/concepts/statistics.md: `audit sample` appends one audit.design (strata with N_h and n_h, the cases drawn), once."""
    db, expected = store
    out = tmp_path / "a.tsv"
    code, said, err = run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(out))
    assert code == 0 and "its design recorded" in said, err
    rows = read_tsv(out)
    population = Counter((prov, surface, label, value) for prov, _, _, surface, label, value in expected)
    [design] = designs(db)
    assert design["stream"] == "audit:j1" and (design["judge_run_id"], design["seed"], design["k"]) == ("j1", "s", 2)
    assert design["strata"] == [
        {"provider": leaf[0], "surface": leaf[1], "label": leaf[2], "judge_value": leaf[3], "population": n,
         "sampled": min(2, n)} for leaf, n in sorted(population.items())]
    assert design["cases"] == [{"trajectory_id": r["trajectory_id"], "url_normalized": r["url_normalized"],
                                "surface": r["surface"], "label": r["label"]} for r in rows]
    # the same sample again adds nothing; another seed is another design; a TSV that cannot be written records none
    code, said, _ = run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(out))
    assert code == 0 and "its design already recorded" in said and len(designs(db)) == 1
    assert run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "t", "--out", str(out))[0] == 0
    assert [d["seed"] for d in designs(db)] == ["s", "t"]
    code, _, err = run_cli("audit", "sample", "--db", str(db), "--seed", "u", "--out", str(tmp_path / "no" / "x.tsv"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and len(designs(db)) == 2


def _kappa(cases: list[tuple[float, bool, bool]]) -> float:
    """Cohen's kappa of weighted (weight, judge, human) cases, written out."""
    total = sum(w for w, _, _ in cases)
    p_o = sum(w for w, j, h in cases if j == h) / total
    pj = sum(w for w, j, _ in cases if j) / total
    ph = sum(w for w, _, h in cases if h) / total
    p_e = pj * ph + (1 - pj) * (1 - ph)
    return (p_o - p_e) / (1 - p_e)


def test_weighted_kappa_per_label(store: tuple[Path, Expected], tmp_path: Path) -> None:
    """Kappa per label across leaves, each clear case of stratum h weighing N_h / (clear labels of h); without a
    recorded design the same labels give the unweighted kappa and a note."""
    db, expected = store
    population = Counter((prov, surface, label, value) for prov, _, _, surface, label, value in expected)
    tsv = tmp_path / "a.tsv"
    assert run_cli("audit", "sample", "--db", str(db), "--k", "2", "--seed", "s", "--out", str(tsv))[0] == 0
    rows = [r for r in read_tsv(tsv) if (r["surface"], r["label"]) == ("snippet", "supports_gold")]
    assert len(rows) == 8  # 2 providers x judge true/false, 2 cases each
    humans: list[str] = []
    for r in rows:  # judge true: the first of each leaf agrees, the second is flipped; alpha's first true is unclear
        first = not any(x["provider"] == r["provider"] and x["judge_value"] == r["judge_value"] for x in rows[:len(humans)])
        if r["provider"] == "alpha" and r["judge_value"] == "true" and first:
            humans.append("unclear")
        elif r["judge_value"] == "true" and not first:
            humans.append("false")
        else:
            humans.append(r["judge_value"])
    labelled = tmp_path / "l.tsv"
    write_tsv(labelled, fill(rows, humans))
    assert run_cli("audit", "import", "--db", str(db), str(labelled))[0] == 0
    clear = [(r, h == "true") for r, h in zip(rows, humans, strict=True) if h != "unclear"]
    leaf = lambda r: (r["provider"], "snippet", "supports_gold", r["judge_value"] == "true")  # noqa: E731
    m = Counter(leaf(r) for r, _ in clear)
    weighted = [(population[leaf(r)] / m[leaf(r)], r["judge_value"] == "true", h) for r, h in clear]
    unweighted = [(1.0, j, h) for _, j, h in weighted]
    got = json.loads(run_cli("audit", "agreement", "--db", str(db), "--json")[1])
    one = got["labels"]["snippet.supports_gold"]
    assert list(got["labels"]) == ["snippet.supports_gold"] and got["designs"] == 1 and got["notes"] == []
    assert (one["labelled"], one["unclear"], one["clear"], one["weighted"]) == (8, 1, 7, True)
    assert one["kappa"] == pytest.approx(_kappa(weighted), rel=1e-12)
    assert one["kappa_unweighted"] == pytest.approx(_kappa(unweighted), rel=1e-12)
    assert abs(one["kappa"] - one["kappa_unweighted"]) > 1e-3  # the design matters here
    assert one["population"] == sum(population[x] for x in m)
    assert one["agreement_weighted"] == pytest.approx(
        sum(w for w, j, h in weighted if j == h) / sum(w for w, _, _ in weighted), rel=1e-12)
    code, table, _ = run_cli("audit", "agreement", "--db", str(db))
    assert code == 0 and "snippet.supports_gold" in table and f"{one['kappa']:.3f}" in table and "weighted by" in table
    # the same labels in a store whose sample design was never recorded: unweighted, and said so
    other = tmp_path / "other.duckdb"
    build_store(other)
    assert run_cli("audit", "import", "--db", str(other), str(labelled))[0] == 0
    got = json.loads(run_cli("audit", "agreement", "--db", str(other), "--json")[1])
    one = got["labels"]["snippet.supports_gold"]
    assert one["weighted"] is False and one["kappa"] == one["kappa_unweighted"] == pytest.approx(_kappa(unweighted))
    assert got["designs"] == 0 and len(got["notes"]) == 1 and "no audit.design is recorded" in got["notes"][0]
