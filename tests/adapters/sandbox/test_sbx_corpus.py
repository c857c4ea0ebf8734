"""The generated corpus: big enough, deterministic, and built so that the evidence surfaces differ."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from searchtrace.adapters import normalize_url
from searchtrace.adapters.sandbox import World, build_corpus, default_world, write_questions_jsonl
from searchtrace.adapters.sandbox._reading import same_answer, stated_answers, subject_of


def test_corpus_size_strata_and_determinism() -> None:
    a, b = build_corpus(), build_corpus()
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    assert msgspec.json.encode(build_corpus(seed=1)) != msgspec.json.encode(a)
    assert len(a.pages) >= 60 and len(a.questions) >= 30
    assert len({q.qid for q in a.questions}) == len(a.questions)
    assert len({normalize_url(p.url) for p in a.pages}) == len(a.pages)
    assert {q.freshness for q in a.questions} == {"never-changing", "slow-changing", "fast-changing"}
    assert {q.search_results for q in a.questions} == {"conflicting", "unhelpful"}
    assert len({q.topic for q in a.questions}) == 6
    assert max(len(p.body) for p in a.pages) > 20_000  # some long pages
    assert any("utm_source=" in p.body for p in a.pages)  # links that need URL normalisation


def test_every_question_has_the_evidence_its_stratum_promises() -> None:
    world = default_world()
    kinds = Counter(p.kind for p in world.pages)
    assert kinds["gold"] == sum(q.answerable for q in world.questions)
    for q in world.questions:
        subject = subject_of(q.question)
        assert subject is not None and (subject.attribute, subject.entity) == (q.attribute, q.entity)
        stated = {p.kind: stated_answers(p.body, subject) for p in world.pages if p.qid == q.qid}
        if not q.answerable:
            assert not any(stated.values())  # the answer is nowhere
            continue
        assert stated["gold"] and all(same_answer(x, q.answer) for x in stated["gold"])
        if "outdated" in stated:
            assert stated["outdated"] and not any(same_answer(x, q.answer) for x in stated["outdated"])
        assert not stated.get("distractor")
        # no page about another subject states an answer for this one
        assert not any(stated_answers(p.body, subject) for p in world.pages if p.qid != q.qid)
    assert kinds["outdated"] > 10  # contradictions exist


def test_question_file_round_trip(tmp_path: Path) -> None:
    path = write_questions_jsonl(tmp_path / "q.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["qid"] for r in rows] == [q.qid for q in default_world().questions]
    assert all(r["answer"] and r["question"] for r in rows)


def test_world_refuses_duplicate_urls() -> None:
    corpus = build_corpus()
    dup = msgspec.structs.replace(corpus.pages[1], url=corpus.pages[0].url + "/?utm_source=x")
    with pytest.raises(ValueError):
        World(msgspec.structs.replace(corpus, pages=[corpus.pages[0], dup]))
