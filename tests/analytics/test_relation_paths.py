"""Every JSON path the SQL reads names a field of its event's payload Struct: a misspelled or mis-nested path would
read NULL for ever and no metric would say so."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import searchtrace
from searchtrace.analytics._relations import RELATIONS, Relation, path_error
from searchtrace.store import JudgeVerdict, RunStarted, SearchResult, TrajectoryStarted
from searchtrace.store._events import PAYLOAD_TYPES, TYPE_NAMES

_QUOTED_PATH = re.compile(r"'(\$(?:\.\w+)+)'")


def test_every_relation_path_names_a_field_of_its_payload() -> None:
    checked = 0
    for rel in RELATIONS:
        assert rel.event_type in TYPE_NAMES, rel.name
        for _, typ, expr in rel.columns:
            for path in re.findall(r"\$(?:\.\w+)+", expr):
                assert path_error(rel.payload, path, typ if expr == path else "VARCHAR") is None, (rel.name, path)
                checked += 1
    assert checked >= 100  # the 16 relations' columns, not an empty loop


@pytest.mark.parametrize(("payload", "path", "typ", "why"), [
    (SearchResult, "$.ulr", "VARCHAR", "no field 'ulr'"),  # misspelled
    (JudgeVerdict, "$.labels.supports_gold", "BOOLEAN", "no field 'labels.supports_gold'"),  # nesting left out
    (JudgeVerdict, "$.trajectory_id", "VARCHAR", "no field 'trajectory_id'"),  # it is item.trajectory_id
    (JudgeVerdict, "$.item.trajectory_id.x", "VARCHAR", "no field 'item.trajectory_id.x'"),  # below a string
    (SearchResult, "$.rank", "BOOLEAN", "cannot hold"),  # a field, of a type the column cannot hold
    (SearchResult, "$.title", "INTEGER", "cannot hold"),
])
def test_a_wrong_path_is_rejected(payload: type[SearchResult], path: str, typ: str, why: str) -> None:
    err = path_error(payload, path, typ)
    assert err is not None and why in err, err


def test_right_paths_are_accepted() -> None:
    assert path_error(JudgeVerdict, "$.labels.page.supports_gold", "BOOLEAN") is None  # through optional Structs
    assert path_error(JudgeVerdict, "$.labels.page", "PRESENT") is None
    assert path_error(RunStarted, "$.config.agent.model", "VARCHAR") is None  # free JSON below `config`
    assert path_error(TrajectoryStarted, "$.epoch", "INTEGER") is None  # an UNSET-able int
    assert path_error(SearchResult, "$.surface", "VARCHAR") is None  # a list read as JSON text


def test_every_relation_is_checked_when_defined() -> None:
    """Each real column, its first step misspelled (and its last, unless below free JSON), is refused where the
    relation is defined (at import)."""
    refused = 0
    for rel in RELATIONS:
        for i, (col, typ, expr) in enumerate(rel.columns):
            bads = {re.sub(r"\$\.(\w+)", r"$.\1_x", expr)} - {expr}
            if expr.startswith("$.") and not expr.startswith("$.config."):
                bads.add(f"{expr}_x")
            for bad in bads:
                columns = (*rel.columns[:i], (col, typ, bad), *rel.columns[i + 1:])
                with pytest.raises(TypeError, match=f"relation {rel.name}: .*_x"):
                    Relation(rel.name, rel.payload, columns)
                refused += 1
    assert refused >= 120  # every path column twice, the expression paths and those below `config` once


def _package_sources() -> set[Path]:
    out: set[Path] = set()
    for top, _, files in os.walk(Path(searchtrace.__file__).parent, followlinks=True):
        out.update(Path(top, f).resolve() for f in files if f.endswith(".py"))
    return out


def test_every_path_in_the_package_names_a_payload_field() -> None:
    """The SQL outside the relations (lookups, exports, verify) names paths too: each names a field of some payload."""
    seen: dict[str, str] = {}
    for src in _package_sources():
        for path in _QUOTED_PATH.findall(src.read_text(encoding="utf-8")):
            seen.setdefault(path, src.name)
    assert len(seen) >= 20, seen
    wrong = {p: f for p, f in seen.items() if all(path_error(t, p, "VARCHAR") for t in PAYLOAD_TYPES)}
    assert not wrong
    assert all(path_error(t, "$.item.trajectory_idd", "VARCHAR") for t in PAYLOAD_TYPES)  # what it would catch
