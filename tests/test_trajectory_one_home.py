"""docs/concepts/shown.md "one writer": engine/_trajectory.py is the only shipped module that builds a trajectory's payloads.

Every other module records through its `Builder` (the agent loop, the proxy, trace-file and Inspect import, the benchmarks'
synthetic stores), so ids, doc_id numbering, `surface_chars` and the request evidence cannot drift between paths.
The store defines the structs (and decodes them); tests build hand-made stores and are not shipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import ROOT, _source_files

HOME = ROOT / "engine" / "_trajectory.py"
STRUCTS = frozenset({
    "TrajectoryStarted", "ModelResponded", "SearchCalled", "SearchResult", "SearchCompleted", "FetchCalled",
    "FetchCompleted", "ToolRefused", "ToolCalled", "CallRetried", "CallFailed", "AnswerFinal", "TrajectoryFinished",
})
# (module, struct) pairs allowed to construct outside the home, each with its reason.
ALLOWED = {
    # A judge run's own stream (`judge:<run>`) records the judge's chat retries and failures with the same event
    # types as a trajectory's; they belong to no trajectory, so no trajectory Builder could hold them.
    ("replay/_judge.py", "CallRetried"),
    ("replay/_judge.py", "CallFailed"),
    # the same for a batch judge run: a failed batch endpoint is a failure of the judge run's stream
    ("replay/_batch_judge.py", "CallFailed"),
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def constructions(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """(line, struct) of every place the source builds a trajectory payload: a call of the struct, or the struct
    handed to msgspec as the type to convert or decode into."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if not isinstance(node, ast.Call):
            continue
        called = _name(node.func)
        if called in STRUCTS:
            out.append((node.lineno, called))
        elif called in {"convert", "decode", "Decoder"}:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                named = _name(arg)
                if named in STRUCTS:
                    out.append((node.lineno, named))
    return out


def _shipped() -> list[Path]:
    return [p for p in _source_files() if p != HOME and p.relative_to(ROOT).parts[0] != "store"]


def test_only_the_trajectory_module_builds_trajectory_payloads() -> None:
    files = _shipped()
    assert len(files) > 100 and ROOT / "engine" / "_agent.py" in files  # the walk reaches the shipped tree
    found = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for line, struct in constructions(path.read_text(encoding="utf-8"), rel):
            if (rel, struct) not in ALLOWED:
                found.append(f"{rel}:{line} builds {struct} (record through engine.Builder instead)")
    assert found == []


def test_every_allowance_is_still_needed() -> None:
    used = {(p.relative_to(ROOT).as_posix(), s) for p in _shipped() for _, s in constructions(p.read_text("utf-8"))}
    assert ALLOWED <= used  # a stale allowance would hide a new construction in the same module


def test_the_check_catches_a_construction() -> None:
    source = '''
from searchtrace import store
from searchtrace.store import SearchResult, TrajectoryFinished
import msgspec

def f(x):
    a = SearchResult(call_id="c", doc_id="d1", rank=1, title="", url="u", url_normalized="u", domain="", snippet="")
    b = store.ModelResponded(iteration=1, text=None)
    c = msgspec.convert(x, TrajectoryFinished)
    d = msgspec.json.decode(x, type=store.AnswerFinal)
    return a, b, c, d, SearchResultish(), Builder("t").search
'''
    assert constructions(source) == [(7, "SearchResult"), (8, "ModelResponded"), (9, "TrajectoryFinished"),
                                     (10, "AnswerFinal")]
    assert constructions(HOME.read_text("utf-8"))  # the home itself builds them, so the check sees real code
