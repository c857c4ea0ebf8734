"""The README's notebook recipe and Python API examples run as written (on the sandbox, in a fresh folder).

The blocks of its section "Notebooks and the Python API" run in order in one namespace: the `toml` block is the
`run.toml` the examples load, the API examples (record, judge, report, export, sql) first, then the notebook
one-liners over the files the export wrote. polars is not a dependency of the project: its one-liner is compiled,
and the export test checks that the files' text columns are Arrow strings, which polars reads as String.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```(python|toml)\n(.*?)```", re.S)


def section_blocks() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Notebooks and the Python API")
    end = text.index("\n## ", start + 1)
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text[start:end])]


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = section_blocks()
    monkeypatch.chdir(tmp_path)
    [toml] = [code for kind, code in blocks if kind == "toml"]
    (tmp_path / "run.toml").write_text(toml, encoding="utf-8")
    python = [code for kind, code in blocks if kind == "python"]
    recipe = [code for code in python if code.startswith("import ") and code.count("\n") == 1]
    api = [code for code in python if code not in recipe]
    assert len(recipe) == 3 and len(api) == 5
    ns: dict[str, object] = {"__name__": "readme"}
    for code in api + [c for c in recipe if "polars" not in c]:
        exec(compile(code, str(README), "exec"), ns)  # noqa: S102 - the README's own code
    compile(next(c for c in recipe if "polars" in c), str(README), "exec")
    out = capsys.readouterr().out
    assert "api-example" in out and "brave" in out and "tavily" in out
    assert sorted(p.name for p in (tmp_path / "export").glob("*.parquet")) == [
        "events.parquet", "judge_items.parquet", "trajectories.parquet", "verdicts.parquet"]
    assert len(ns["items"]) > 0 and (tmp_path / "report.html").is_file()  # type: ignore[arg-type]
    assert ns["res"].rows and ns["written"]["trajectories.parquet"] == 6  # type: ignore[attr-defined,index]
