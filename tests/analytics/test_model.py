"""The typed read model (analytics._model): the partition's labels are defined once, and every key of the report,
of `judge compare` and of `audit agreement` is a field of its Struct (the JSON decodes into the model and back to the
same values: an unknown key would be dropped and the comparison fail)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from searchtrace.analytics import (
    CORRECTED_ROWS,
    OBSERVED_CELLS,
    PARTITION,
    REPORT_ROWS,
    ArmMetrics,
    JudgeComparison,
    Pair,
    Partition,
    Report,
    field_key,
)
from tests.analytics.analytics_fixture import import_fixture, report_json
from tests.analytics.test_citation_metrics import build as build_citations
from tests.analytics.test_correction import labelled_store
from tests.analytics.test_uncertainty import row
from tests.builders import run_cli
from tests.shared_data import shared_path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ("adapters", "analytics", "benchmarks", "engine", "replay", "store", "searchtrace")
MODEL = "analytics/_model.py"  # the JavaScript is not scanned: it reads the vocabulary from GET /api/vocabulary


def _sources() -> list[Path]:
    return sorted(p for d in PACKAGE for p in (ROOT / d).rglob("*.py") if p.is_file() and not p.is_symlink())


def test_partition_labels_are_defined_once() -> None:
    """No package source but the model spells a cell's name as a string literal (Python or SQL, either quote): the
    SQL rule (analytics._rules.partition_cell) and the metrics' per-cell counts are generated from PARTITION."""
    names = [c.name for c in PARTITION]
    literal = re.compile("|".join(rf"[\"']{re.escape(n)}[\"']" for n in names))
    found = {str(p.relative_to(ROOT)) for p in _sources() if literal.search(p.read_text(encoding="utf-8"))}
    assert MODEL in found  # the test can see a literal where there is one
    assert found == {MODEL}


def test_partition_struct_follows_the_vocabulary() -> None:
    names = [c.name for c in PARTITION]
    assert [f.encode_name for f in msgspec.structs.fields(Partition)] == names
    counts = dict(zip(names, range(1, len(names) + 1), strict=True))
    part = Partition.from_counts(counts)
    assert msgspec.to_builtins(part) == counts
    assert [(c.name, n) for c, n in part.cells()] == list(counts.items())
    assert [part.count(c) for c in OBSERVED_CELLS] == [1, 2, 3, 4]
    stats = row("p", "q1", True, smart=1, missed=2, blind=3, noop=4, unobserved=5)
    assert stats.partition == part  # a trajectory's count of each cell is read from that cell's own field


def test_table_rows_name_report_keys() -> None:
    """Each row's key (what the explorer looks up in the JSON) comes from the attribute its getter reads."""
    keys = {f.encode_name for f in msgspec.structs.fields(ArmMetrics)}
    for key, _ in (*REPORT_ROWS, *CORRECTED_ROWS):
        head, _, cell = key.partition(".")
        assert head in keys, key
        assert not cell or cell in {c.name for c in PARTITION}, key
    assert ("partition.NO-OP", "NO-OP (no S, not fetched)") in REPORT_ROWS
    assert field_key(ArmMetrics, lambda m: m.surface_support_rate_ci) == "surface_support_rate_ci"
    assert field_key(Pair, lambda c: c.p_holm) == "p_holm"


def _roundtrip(text: str, model: type[Any]) -> None:
    """The JSON decodes into `model` and comes back as the same values (nothing unknown, nothing lost)."""
    got = msgspec.to_builtins(msgspec.json.decode(text, type=model))
    assert got == json.loads(text)


def _unknown(value: Any, schema: dict[str, Any], defs: dict[str, Any], path: str = "") -> list[str]:
    """The keys of `value` its JSON Schema (the model's) does not define."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:
        return min((_unknown(value, s, defs, path) for s in schema["anyOf"]), key=len)
    if isinstance(value, dict):
        if "properties" in schema:
            known = schema["properties"]
            return [f"{path}/{k}" for k in value if k not in known] + [
                x for k, v in value.items() if k in known for x in _unknown(v, known[k], defs, f"{path}/{k}")]
        if isinstance(more := schema.get("additionalProperties"), dict):
            return [x for k, v in value.items() for x in _unknown(v, more, defs, f"{path}/{k}")]
        return [f"{path}: an object where the model has none"] if schema.get("type") != "object" else []
    return []


@pytest.mark.parametrize("run", ["j1", "j2"])
def test_the_conformance_reports_keys_are_fields_of_the_model(run: str) -> None:
    """The contract's files list a subset of the keys; each is a field of the model."""
    schema = msgspec.json.schema(Report)
    want = json.loads(shared_path("conformance/report-1").joinpath(f"expected-report-{run}.json").read_text())
    assert _unknown(want, schema, schema["$defs"]) == []
    assert _unknown({"providers": {"p": {"no_such_key": 1}}}, schema, schema["$defs"]) == ["/providers/p/no_such_key"]


def test_every_report_key_is_a_field_of_the_model(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    import_fixture(db, tmp_path / "data")
    prices = ROOT / "docs" / "prices-example.toml"
    texts = [report_json(db, "--judge-run-id", "j1", "--bootstrap", "50", "--prices", str(prices))[0],
             report_json(db, "--judge-run-id", "j1", "--by", "run")[0]]
    labelled = tmp_path / "labelled.duckdb"
    labelled_store(labelled, design=True)
    texts.append(report_json(labelled, "--bootstrap", "50")[0])
    cited = tmp_path / "cited.duckdb"
    build_citations(cited)
    texts.append(report_json(cited, "--bootstrap", "50")[0])
    for text in texts:
        _roundtrip(text, Report)
    keys = {k for text in texts for block in json.loads(text)["providers"].values() for k in block}
    assert {"usd_total", "surface_support_rate_ci", "surface_support_rate_corrected_ci", "citation_supports_gold_ci",
            "search_usd"} <= keys
    arms = json.loads(texts[1])
    assert arms["by"] == "run" and {"runs", "search_providers"} <= set(next(iter(arms["arms"].values())))


def test_judge_compare_json_is_the_model(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    import_fixture(db, tmp_path / "data")
    code, out, err = run_cli("judge", "compare", "--db", str(db), "j1", "j2", "--json")
    assert code == 0, err
    _roundtrip(out, JudgeComparison)
    assert json.loads(out)["providers"]["alpha"]["a"]["partition"]["MISSED"] == 1


def test_every_field_of_the_report_schema_is_described() -> None:
    """docs/reference/report.schema.json (generated from the model, kept current by `docs/_gen.py --check`): every
    property of every block carries its field's docstring."""
    schema = json.loads((ROOT / "docs" / "reference" / "report.schema.json").read_text(encoding="utf-8"))
    missing = [f"{name}.{key}" for name, d in schema["$defs"].items() for key, p in d.get("properties", {}).items()
               if not p.get("description")]
    assert len(schema["$defs"]) >= 10 and missing == []
