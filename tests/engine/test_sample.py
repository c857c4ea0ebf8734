"""docs/concepts/protocol.md sampling: quotas on the real SealQA-Hard file, row-order and format independence, tie rules, bad input."""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchtrace.engine import read_questions, sample
from searchtrace.engine._sample import quotas
from tests.builders import run_cli

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "sealqa" / "seal-hard.parquet"
STRATA = ("freshness", "search_results", "topic")
needs_real = pytest.mark.skipif(not REAL.exists(), reason=f"SealQA-Hard file not present at {REAL}")


def fraction_quotas(sizes: dict[tuple[str, ...], int], n: int) -> dict[tuple[str, ...], int]:
    """Independent Hamilton allocation with Fractions, written from the documented rule."""
    total = sum(sizes.values())
    exact = {k: Fraction(n * s, total) for k, s in sizes.items()}
    seats = {k: int(q) for k, q in exact.items()}  # int() floors a non-negative Fraction
    leftover = n - sum(seats.values())
    assert 0 <= leftover < len(sizes)
    # fractional parts as Fractions, largest first; then the larger stratum; then the smaller key
    ordered = sorted(sizes, key=lambda k: (-(exact[k] - seats[k]), -sizes[k], k))
    for k in ordered[:leftover]:
        seats[k] += 1
    return seats


def sha_qid(question: str) -> str:
    return hashlib.sha256(question.encode()).hexdigest()[:16]


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_csv(rows: list[dict], path: Path) -> None:
    cols = list(rows[0])
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in rows:
            w.writerow([json.dumps(r[c]) if isinstance(r[c], list) else r[c] for c in cols])


def sampled_qids(path: Path, n: int, seed: str) -> list[str]:
    code, out, err = run_cli("sample", "--questions", str(path), "--n", str(n), "--seed", seed)
    assert code == 0, err
    return [json.loads(line)["qid"] for line in out.splitlines()]


@needs_real
def test_real_file_counts_are_largest_remainder_quotas() -> None:
    table = pq.read_table(REAL)
    rows = table.to_pylist()
    sizes = Counter(tuple(r[c] for c in STRATA) for r in rows)
    code, out, err = run_cli("sample", "--questions", str(REAL), "--n", "100", "--seed", "paper")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert len(got) == 100
    counts = Counter(tuple(r[c] for c in STRATA) for r in got)
    expected = fraction_quotas(dict(sizes), 100)
    assert {k: v for k, v in expected.items() if v} == dict(counts)
    # every column survives, lists stay lists, qids follow the sha256(question) rule
    assert set(got[0]) == set(table.column_names) | {"qid"}
    assert all(isinstance(r["urls"], list) for r in got)
    assert all(r["qid"] == sha_qid(r["question"]) for r in got)
    # inside a stratum the chosen ones are those with the smallest sha256(seed + qid)
    for key, k in counts.items():
        members = sorted(
            hashlib.sha256(("paper" + sha_qid(r["question"])).encode()).hexdigest()
            for r in rows
            if tuple(r[c] for c in STRATA) == key
        )
        chosen = sorted(
            hashlib.sha256(("paper" + r["qid"]).encode()).hexdigest()
            for r in got
            if tuple(r[c] for c in STRATA) == key
        )
        assert chosen == members[:k]


@needs_real
def test_real_file_same_sample_for_any_order_and_format(
    tmp_path: Path
) -> None:
    table = pq.read_table(REAL)
    base = sampled_qids(REAL, 100, "7")
    perm = list(range(table.num_rows))
    random.Random(3).shuffle(perm)
    shuffled = table.take(pa.array(perm))
    pq.write_table(shuffled, tmp_path / "shuffled.parquet")
    rows = shuffled.to_pylist()
    write_jsonl(rows, tmp_path / "shuffled.jsonl")
    write_csv(rows, tmp_path / "shuffled.csv")
    for name in ("shuffled.parquet", "shuffled.jsonl", "shuffled.csv"):
        assert sampled_qids(tmp_path / name, 100, "7") == base, name
    # a different seed gives a different sample with the same stratum counts
    other = sampled_qids(REAL, 100, "8")
    assert other != base
    by_qid = {sha_qid(r["question"]): tuple(r[c] for c in STRATA) for r in rows}
    assert Counter(by_qid[q] for q in other) == Counter(by_qid[q] for q in base)


def test_ties_go_to_larger_stratum_then_smaller_key() -> None:
    # equal remainders 1/2 and 1/2 (n=2, total 4): the larger stratum wins over the smaller key
    assert quotas({("a",): 1, ("b",): 3}, 2) == {("a",): 0, ("b",): 2}
    # equal remainders and equal sizes: ascending key wins ("m" < "z")
    assert quotas({("z",): 1, ("a",): 4, ("m",): 1}, 3) == {("z",): 0, ("a",): 2, ("m",): 1}
    # three equal strata, two seats
    assert quotas({("c",): 1, ("b",): 1, ("a",): 1}, 2) == {("a",): 1, ("b",): 1, ("c",): 0}
    # largest fractional part wins first: 10*10/18 = 5.56, 10*6/18 = 3.33, 10*2/18 = 1.11 -> 6, 3, 1
    assert quotas({("x",): 10, ("y",): 6, ("z",): 2}, 10) == {("x",): 6, ("y",): 3, ("z",): 1}
    # tuple keys compare element by element
    assert quotas({("b", "a"): 1, ("a", "z"): 1}, 1) == {("a", "z"): 1, ("b", "a"): 0}


def test_within_stratum_order_and_qid_rule(tmp_path: Path) -> None:
    rows = [
        {"qid": "q1", "question": "one?", "freshness": "f", "search_results": "s", "topic": "t"},
        {"qid": "", "question": "two?", "freshness": "f", "search_results": "s", "topic": "t"},
        {"qid": "q3", "question": "three?", "freshness": "f", "search_results": "s", "topic": "t"},
        {"question": "four?", "freshness": "f", "search_results": "s", "topic": "t"},
    ]
    qids = ["q1", sha_qid("two?"), "q3", sha_qid("four?")]
    ranked = sorted(qids, key=lambda q: hashlib.sha256(("s1" + q).encode()).hexdigest())
    picked = sample(rows, 2, "s1", source="mem")
    assert [r["qid"] for r in picked] == ranked[:2]
    path = tmp_path / "q.jsonl"
    write_jsonl(rows, path)
    assert sampled_qids(path, 4, "s1") == ranked


@pytest.mark.parametrize("column", ["id", "question_id"])
def test_a_common_id_column_gives_the_qids(tmp_path: Path, column: str) -> None:
    rows = [{column: f"Q{i}", "question": f"q{i}?", "freshness": "f", "search_results": "s", "topic": "t"}
            for i in range(3)]
    assert sorted(r["qid"] for r in sample(rows, 3, "s1", source="mem")) == ["Q0", "Q1", "Q2"]
    # `qid` wins over `id` when a file has both
    both = [{**r, "qid": f"x{i}"} for i, r in enumerate(rows)]
    assert sorted(r["qid"] for r in sample(both, 3, "s1", source="mem")) == ["x0", "x1", "x2"]
    bad = [{**rows[0], column: 1.5}]
    with pytest.raises(Exception, match=f"column '{column}' must be a string"):
        sample(bad, 1, "s1", source="mem")


def test_numpy_and_nested_values_serialise(tmp_path: Path) -> None:
    table = pa.table(
        {
            "question": ["a?", "b?"],
            "freshness": ["f", "f"],
            "search_results": ["s", "s"],
            "topic": ["t", "u"],
            "urls": [["x", "y"], []],
            "year": [2024, None],
            "score": [0.5, 1.5],
        }
    )
    pq.write_table(table, tmp_path / "q.parquet")
    code, out, err = run_cli("sample", "--questions", str(tmp_path / "q.parquet"), "--n", "2")
    assert code == 0, err
    got = sorted((json.loads(line) for line in out.splitlines()), key=lambda r: r["question"])
    assert got[0]["urls"] == ["x", "y"] and got[0]["year"] == 2024 and got[1]["year"] is None


def test_out_file(tmp_path: Path) -> None:
    rows = [{"question": f"q{i}?", "freshness": "f", "search_results": "s", "topic": "t"} for i in range(5)]
    write_jsonl(rows, tmp_path / "q.jsonl")
    out = tmp_path / "s.jsonl"
    code, stdout, err = run_cli("sample", "--questions", str(tmp_path / "q.jsonl"), "--n", "3", "--out", str(out))
    assert code == 0, err
    assert stdout == ""
    assert len(out.read_text().splitlines()) == 3


GOOD = '{"question": "q?", "freshness": "f", "search_results": "s", "topic": "t"}\n'


@pytest.mark.parametrize(
    ("name", "content", "n", "needle"),
    [
        ("bad.jsonl", GOOD + '{"question": "x?", "freshness": \n', 1, "line 2"),
        ("trunc.jsonl", GOOD + '{"question": "x?", "fresh', 1, "line 2"),
        ("list.jsonl", GOOD + "[1, 2]\n", 1, "line 2"),
        ("nostrata.jsonl", '{"question": "q?", "freshness": "f", "search_results": "s"}\n', 1, "'topic'"),
        ("noquestion.csv", "freshness,search_results,topic\nf,s,t\n", 1, "'question'"),
        (
            "type.jsonl",
            GOOD + '{"question": "x?", "freshness": 3, "search_results": "s", "topic": "t"}\n',
            1,
            "row 2",
        ),
        (
            "qtype.jsonl",
            '{"question": 5, "freshness": "f", "search_results": "s", "topic": "t"}\n',
            1,
            "'question'",
        ),
        ("fields.csv", "question,freshness,search_results,topic\nq?,f,s\n", 1, "line 2"),
        ("toomany.jsonl", GOOD, 2, "more than the 1"),
        ("zero.jsonl", GOOD, 0, "positive"),
        ("dup.jsonl", GOOD + GOOD, 1, "already used"),
        ("empty.jsonl", "", 1, "no questions"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, name: str, content: str, n: int, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    code, out, err = run_cli("sample", "--questions", str(path), "--n", str(n))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert needle in err
    if needle.startswith("'"):
        assert str(path) in err


def test_truncated_parquet_and_missing_file(tmp_path: Path) -> None:
    table = pa.table(
        {"question": ["a?"] * 50, "freshness": ["f"] * 50, "search_results": ["s"] * 50, "topic": ["t"] * 50}
    )
    pq.write_table(table, tmp_path / "full.parquet")
    data = (tmp_path / "full.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    code, _, err = run_cli("sample", "--questions", str(tmp_path / "cut.parquet"), "--n", "1")
    assert code == 2 and "cut.parquet" in err and "Parquet" in err
    code, _, err = run_cli("sample", "--questions", str(tmp_path / "nope.jsonl"), "--n", "1")
    assert code == 2 and "no such question file" in err
    assert read_questions(tmp_path / "full.parquet")[0]["question"] == "a?"
