"""Pins what `import` stores (event ids, payload bytes, order), so a faster importer keeps old stores idempotent.

The digests below were computed with the importer as it was before its speed work; any change to an event id,
a payload byte, a stream or the order of events changes them (and would make re-imports add duplicates).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest

import searchtrace.adapters._urls as url_rules
import searchtrace.replay.interchange._common as import_common
from searchtrace.adapters import domain_of, normalize_url
from searchtrace.adapters._urls import norm_url, url_domain
from searchtrace.replay.interchange import import_files
from searchtrace.replay.interchange._common import event_id, event_ids
from searchtrace.store import BadInput, EventLog, stable_event_id


def _r(doc: str, rank: int, url: str, **extra: Any) -> dict[str, Any]:
    return {"doc_id": doc, "rank": rank, "title": f"T {doc}", "url": url, "domain": "", "snippet": f"s {doc}",
            "metadata": {"age": "1d"}} | extra  # fmt: skip


TRACES: list[dict[str, Any]] = [
    {"trajectory_id": "p-1", "provider": "alpha", "qid": "q1", "question": "What is q1?", "gold_answer": "Paris",
     "final_answer": "Paris", "stop_reason": "answered", "steps": [
        {"kind": "model", "iteration": 1, "usage": {"input_tokens": 100, "output_tokens": 10, "reasoning_tokens": 3},
         "latency_ms": 812.5},
        {"kind": "search", "iteration": 1, "call_id": "s1", "query": "capital", "latency_ms": 300, "results": [
            _r("d1", 1, "https://Example.com/a?utm_source=x"),
            _r("d2", 2, "https://other.org/b/", title=None, snippet=None, metadata=None, domain="given.example"),
            _r("d3", 3, "https://third.net/c#frag", metadata={"n": [1, 2], "z": {"y": None}})]},
        {"kind": "fetch", "iteration": 2, "call_id": "f1", "doc_id": "d2", "url": "https://other.org/b/",
         "status": "ok", "content": "page b says Paris \u00e9", "n_tokens": 7, "latency_ms": 41.25},
        {"kind": "fetch", "iteration": 2, "call_id": "f2", "doc_id": "d3", "url": "https://third.net/c",
         "status": "timeout", "content": None, "n_tokens": 0},
        {"kind": "model", "iteration": 3, "usage": {"input_tokens": 200, "output_tokens": 20}}]},
    {"trajectory_id": "p-2", "provider": "beta", "qid": "q1", "question": "What is q1?", "gold_answer": "Paris",
     "final_answer": None, "stop_reason": "max_iterations", "steps": [
        {"kind": "search", "iteration": 1, "call_id": "s1", "query": "q", "results": []},
        {"kind": "search", "iteration": 2, "call_id": "s2", "query": "r", "results": [
            _r("e1", 1, "https://EXAMPLE.com:443/a/")]}]},
]  # fmt: skip

JUDGMENTS: list[dict[str, Any]] = [
    {"judge_run_id": "j1", "trajectory_id": "p-1", "url": "https://example.com/a", "valid": True, "labels": {
        "snippet": {"supports_gold": True, "contradicts_gold": False, "relevant": True}, "page": None,
        "supports_final_answer": True, "rationale": "r"}, "invalid_reason": None},
    {"judge_run_id": "j1", "trajectory_id": "p-1", "url": "https://other.org/b", "valid": True, "labels": {
        "snippet": {"supports_gold": False, "contradicts_gold": False, "relevant": False},
        "page": {"supports_gold": True, "contradicts_gold": False, "relevant": True},
        "supports_final_answer": False, "rationale": "p"}, "invalid_reason": None},
    {"judge_run_id": "j1", "trajectory_id": "p-1", "url": "https://third.net/c", "valid": False, "labels": None,
     "invalid_reason": "not json"},
    {"judge_run_id": "j2", "trajectory_id": "p-2", "url": "https://example.com/a/", "valid": True, "labels": {
        "snippet": {"supports_gold": False, "contradicts_gold": True, "relevant": True}, "page": None,
        "supports_final_answer": False, "rationale": ""}, "invalid_reason": None},
]  # fmt: skip

AUDIT = "provider\tqid\tsemantic_match\nalpha\tq1\t TRUE \nbeta\tq1\t0\n"

# computed with the importer before the speed work (commit 734d1a0); re-pinned when imports gained surface_chars
# (docs/concepts/shown.md: written through the trajectory builder), the only change to their payloads
PINNED_ALL = "f2ac8d6bf1e9b474b931455b9bc386dded85ab6c8ca2d6140f1298fe5f600b49"
PINNED_IDS = {
    "dataset.question@dataset:imported": "1f476e76-5f75-5395-b848-84733cfd0d25",
    "trajectory.started@traj:p-1": "167358e0-d294-5042-9de6-76b04f352a9a",
    "search.result@traj:p-1": "54a5897a-73c6-59c7-b276-a6e866bf7809",
    "fetch.completed@traj:p-1": "7238be35-8949-5382-9eb2-3ee09dc15858",
    "trajectory.finished@traj:p-2": "8893b0a9-d886-5f22-8c60-20d51da21853",
    "judge.verdict@judge:j1": "8ac0f1a8-c731-5ead-8261-b65dfbc811ce",
    "judge.started@judge:j2": "8a51dc50-a6aa-55db-a54d-e0c077ebd6f6",
    "audit.answer@audit:imported": "4eb0f3b0-1fe8-5cba-8218-620d7485b600",
}


def _files(folder: Path) -> tuple[Path, Path, Path]:
    t, j, a = folder / "traces.jsonl", folder / "judgments.jsonl", folder / "audit.tsv"
    t.write_text("".join(json.dumps(x) + "\n" for x in TRACES), encoding="utf-8")
    j.write_text("".join(json.dumps(x) + "\n" for x in JUDGMENTS), encoding="utf-8")
    a.write_text(AUDIT, encoding="utf-8")
    return t, j, a


def _rows(db: Path) -> list[tuple[str, str, str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [
            (str(eid), stream, typ, str(payload))
            for eid, stream, typ, payload in con.execute(
                "SELECT event_id, stream_id, type, payload FROM events ORDER BY position"
            ).fetchall()
        ]
    finally:
        con.close()


def _digest(rows: list[tuple[str, str, str, str]]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update("\x1f".join(row).encode() + b"\x1e")
    return h.hexdigest()


def test_ids_payloads_and_order_are_pinned(tmp_path: Path) -> None:
    t, j, a = _files(tmp_path)
    db = tmp_path / "x.duckdb"
    with EventLog(db) as log:
        res = import_files(log, [t], [j], [a])
    rows = _rows(db)
    assert res.events_written == len(rows) == 30
    by_type: dict[tuple[str, str], str] = {}
    for eid, stream, typ, _ in rows:
        by_type.setdefault((typ, stream), eid)  # the first of its type in the stream
    for key, eid in PINNED_IDS.items():
        typ, _, stream = key.partition("@")
        assert by_type[(typ, stream)] == eid, key
    assert _digest(rows) == PINNED_ALL
    with EventLog(db) as log:  # the same files again add nothing
        assert import_files(log, [t], [j], [a]).events_written == 0


def test_small_chunks_store_the_same(tmp_path: Path, monkeypatch: Any) -> None:
    """Chunk boundaries inside a file (even inside one trajectory's events) change nothing that is stored."""
    monkeypatch.setattr(import_common, "CHUNK", 3)
    t, j, a = _files(tmp_path)
    db = tmp_path / "x.duckdb"
    with EventLog(db) as log:
        import_files(log, [t], [j], [a])
    assert _digest(_rows(db)) == PINNED_ALL


def test_fast_ids_and_urls_match_the_reference() -> None:
    """The importer's uuid5 and URL shortcuts give exactly store._events / adapters._urls results."""
    rng = random.Random(7)
    for _ in range(3000):
        parts = ["".join(rng.choice("ab\x1fé:/ 9\u2603") for _ in range(rng.randint(0, 9))) for _ in range(rng.randint(1, 5))]
        want = stable_event_id(*parts)
        got = event_id(*parts)
        assert (got, got.hex, got.bytes, str(got), hash(got), got.version) == (
            want, want.hex, want.bytes, str(want), hash(want), want.version
        )
        assert event_ids(*parts, n=3) == [stable_event_id(*parts, str(k)) for k in range(3)]
    urls = ["https://a.com", "https://a.com/", "https://a.com//", "http://a.com/x/", "https://A.com/x", "https://a.com:443/x",
            "https://a.com/x?", "https://a.com/x#", "https://a.com/x//y", "https://a.com/x y", "https://u@a.com/",
            " https://a.com/", "https://a.com/x\n", "https://a.com/../x", "HTTPS://a.com/", "https://a.com/x?utm_source=1",
            "https://a.com?utm_a=1&gclid", "https://a.com/x/?utm_a", "https://a.com/x?utm_a=1&b=2", "https://a.com/x?gclidx=1",
            "https://a.com/x?utm_a=1#f", "https://a.com/x?utm_a=1&", "https://a.com/x?utm_a=b=c", "https://a.com/x?fbclid=&utm_="]  # fmt: skip
    alphabet = ["a", "b", ".", "-", "/", ":", "@", "?", "#", "%", "=", "&", "A", "_", "~", " ", "1", "\n", "utm_",
                "?utm_", "&utm_", "gclid", "fbclid", "?gclid=", "&fbclid", "Utm_"]  # fmt: skip
    for _ in range(30000):
        head = rng.choice(["https://", "http://", "ftp://", "https:", "https://a.b/", "https://a.b/c?", "https://a.b?"])
        urls.append(head + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))))
    plain = 0
    for u in urls:
        assert (norm_url(u), url_domain(u)) == (normalize_url(u), domain_of(u)), u
        plain += url_rules._PLAIN.fullmatch(u) is not None
    assert plain > 1000  # the parse-free path was exercised
    assert sum(1 for u in urls if "?" in u and url_rules._PLAIN.fullmatch(u)) > 100  # with a tracking query


def test_blank_lines_and_a_byte_order_mark_change_nothing(tmp_path: Path) -> None:
    t, j, a = _files(tmp_path)
    t.write_bytes(b"\xef\xbb\xbf" + b"\n  \t\n".join(json.dumps(x).encode() for x in TRACES) + b"\r\n\n")
    j.write_bytes(b"\xef\xbb\xbf\n" + b"\n\x0b\x0c\n".join(json.dumps(x).encode() for x in JUDGMENTS))
    db = tmp_path / "x.duckdb"
    with EventLog(db) as log:
        import_files(log, [t], [j], [a])
    assert _digest(_rows(db)) == PINNED_ALL


def test_a_trajectory_repeated_by_a_later_file_of_the_call(tmp_path: Path) -> None:
    """Same content (in another spelling) is one trajectory; other content is refused naming the later file."""
    t, j, a = _files(tmp_path)
    again = tmp_path / "again.jsonl"
    respelled = {k: TRACES[1][k] for k in reversed(list(TRACES[1]))}
    again.write_text(json.dumps(TRACES[0], indent=None, separators=(",", ":")) + "\n" + json.dumps(respelled) + "\n")
    db = tmp_path / "x.duckdb"
    with EventLog(db) as log:
        res = import_files(log, [t, again], [j], [a])
    assert res.trajectories == 2
    assert _digest(_rows(db)) == PINNED_ALL
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({**TRACES[1], "final_answer": "Lyon"}) + "\n")
    db2 = tmp_path / "y.duckdb"
    with EventLog(db2) as log:
        with pytest.raises(BadInput, match=r"changed\.jsonl: line 1: field trajectory_id: 'p-2'"):
            import_files(log, [t, changed], [j], [a])
        assert log.head == 0
