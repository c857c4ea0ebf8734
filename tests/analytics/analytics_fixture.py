"""A small hand-computed dataset in the docs/reference/interchange.md formats, and helpers to import it and read its report
(trace-line builders and the CLI runner: tests/builders.py).

Providers: alpha (q1, q2), beta (q1 only), gamma (q1, q2). Judge runs j1 (full) then j2 (one verdict).
The expected numbers in the tests are worked out by hand from the comments below.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from tests.builders import fetch, model, run_cli, search, traj, write_jsonl
from tests.builders import result as r

TRACES: list[dict[str, Any]] = [
    # alpha q1: 4 items. example.com/a appears twice (utm + case variant), both rank 1.
    # other.org/b fetched twice, ok -> page-visible; fourth.io/d fetched, timeout -> fetched, not page-visible.
    traj("t-a1", "alpha", "q1", "Paris", "paris.", [
        model(1, 100, 10, 5),
        search(1, "s1", [r("d1", 1, "https://Example.com/a?utm_source=x"), r("d2", 2, "https://other.org/b/"),
                         r("d3", 3, "https://third.net/c#frag")]),
        search(2, "s2", [r("d4", 1, "https://example.com/a"), r("d5", 2, "https://fourth.io/d")]),
        fetch(2, "f1", "d2", "https://other.org/b/", "ok", "page b says Paris"),
        fetch(2, "f2", "d5", "https://fourth.io/d", "timeout", None),
        fetch(3, "f3", "d2", "https://other.org/b/", "ok", "page b says Paris"),
        model(2, 200, 20),
    ]),
    # alpha q2: no final answer (max_iterations); 2 items, y.org unjudged.
    traj("t-a2", "alpha", "q2", "3 cats", None, [
        model(1, 50, 5),
        search(1, "s1", [r("d1", 1, "https://x.org/"), r("d2", 2, "https://y.org/p")]),
    ], stop="max_iterations"),
    # beta q1 only: example.com/a again (default port, trailing slash, host case), beta-only.com/z.
    traj("t-b1", "beta", "q1", "Paris", "The city is Paris", [
        model(1, 300, 30),
        search(1, "s1", [r("d1", 1, "https://EXAMPLE.com:443/a/"), r("d2", 2, "https://beta-only.com/z")]),
    ]),
    # gamma q1: no item with S; other.org/b unjudged.
    traj("t-g1", "gamma", "q1", "Paris", "London", [
        model(1, 10, 1),
        search(1, "s1", [r("d1", 1, "https://gamma.com/p"), r("d2", 2, "https://other.org/b")]),
    ]),
    # gamma q2: a search with no result; number words in the answer.
    traj("t-g2", "gamma", "q2", "3 cats", "Three cats!", [
        model(1, 20, 2),
        search(1, "s1", []),
    ]),
]


def labels(s: bool, c: bool, page: bool | None = None) -> dict[str, Any]:
    return {
        "snippet": {"supports_gold": s, "contradicts_gold": c, "relevant": True},
        "page": None if page is None else {"supports_gold": page, "contradicts_gold": False, "relevant": True},
        "supports_final_answer": s,
        "rationale": "fixture",
    }


def verdict(run: str, tid: str, url: str, lab: dict[str, Any] | None, valid: bool = True) -> dict[str, Any]:
    return {"judge_run_id": run, "trajectory_id": tid, "url": url, "valid": valid, "labels": lab,
            "invalid_reason": None if valid else "not json"}


JUDGMENTS: list[dict[str, Any]] = [
    verdict("j1", "t-a1", "https://EXAMPLE.COM/a/#x", labels(True, False)),  # MISSED
    verdict("j1", "t-a1", "https://other.org/b", labels(False, False, page=True)),  # BLIND + discovered
    verdict("j1", "t-a1", "https://third.net/c", None, valid=False),  # invalid, excluded, counted
    verdict("j1", "t-a1", "https://fourth.io/d", labels(True, True)),  # SMART (fetched, not page-visible)
    verdict("j1", "t-a2", "https://x.org", labels(False, True)),  # NO-OP, contradicts
    verdict("j1", "t-b1", "https://example.com/a", labels(True, False)),  # MISSED
    verdict("j1", "t-b1", "https://beta-only.com/z", labels(False, False)),  # NO-OP
    verdict("j1", "t-g1", "https://gamma.com/p", labels(False, False)),  # NO-OP
    verdict("j2", "t-a1", "https://example.com/a", labels(True, False)),
]

AUDIT = "provider\tqid\tsemantic_match\nalpha\tq1\t TRUE \nalpha\tq2\t0\ngamma\tq1\tfalse\ngamma\tq2\t1\n"


def write_fixture(folder: Path) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    t = write_jsonl(folder / "traces.jsonl", TRACES)
    j = write_jsonl(folder / "judgments.jsonl", JUDGMENTS)
    a = folder / "audit.tsv"
    a.write_text(AUDIT, encoding="utf-8")
    return t, j, a


def import_fixture(db: Path, folder: Path) -> None:
    t, j, a = write_fixture(folder)
    code, _, err = run_cli("import", "--db", str(db), str(t), "--judgments", str(j), "--audit", str(a))
    assert code == 0, err


def report_json(db: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    code, out, err = run_cli("report", "--db", str(db), "--json", *extra)
    assert code == 0, err
    return out, json.loads(out)


def plain(values: Mapping[str, msgspec.Struct]) -> dict[str, dict[str, Any]]:
    """Blocks of the report's model as their JSON values."""
    return {k: msgspec.to_builtins(v) for k, v in values.items()}


def intervals(by_provider: dict[str, list[Any]], **kw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """analytics.uncertainty over each provider's block (analytics.provider_metrics), as JSON values: (per provider,
    per pair "A|B")."""
    from searchtrace.analytics import provider_metrics, uncertainty

    blocks = {n: provider_metrics(rows) for n, rows in by_provider.items()}
    pairs = uncertainty(by_provider, blocks, **kw)
    return plain(blocks), plain(pairs)


def corrected(cases: Sequence[Any], valid: Mapping[tuple[str, str], int],
              **kw: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """analytics.correction into empty blocks, as JSON values: (per provider, per pair "A|B")."""
    from searchtrace.analytics import correction, provider_metrics

    blocks = {p: provider_metrics([]) for p in sorted({c.provider for c in cases})}
    pairs: dict[str, Any] = {}
    correction(cases, valid, blocks, pairs, **kw)
    return plain(blocks), plain(pairs)
