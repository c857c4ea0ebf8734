"""Bad input catalogue: each case gives one `searchtrace: error:` line naming what and where, exit 2, store unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.builders import run_cli
from tests.reliability.catalogue import Case, Env, build_env, cases, run_case, snapshot

CASES = cases()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return build_env(tmp_path_factory.mktemp("badinput"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_refused_cleanly(env: Env, case: Case) -> None:
    result = run_case(env, case)
    assert result.ok, result.problem


def test_catalogue_covers_the_issue_list() -> None:
    names = {c.name for c in CASES}
    for command in ("record", "judge", "import", "report", "sql", "verify", "export"):
        assert f"locked-{command}" in names and f"not-a-store-junk-{command}" in names
    for kind in ("jsonl", "csv", "parquet"):
        assert any(n.startswith("sample-") and n.endswith(kind) for n in names)
        assert any(n.startswith("record-") and n.endswith(kind) for n in names)
    assert sum(n.startswith("config-") for n in names) >= 5
    assert sum(n.startswith("import-") for n in names) >= 10
    assert len(CASES) >= 80


def test_the_checker_catches_a_command_that_succeeds(env: Env) -> None:
    """The harness itself can fail: a good command is not a clean rejection, and a change to the store is noticed."""
    ok_case = Case("good-verify", lambda e: ["verify", "--db", str(e.db)])
    assert not run_case(env, ok_case).ok
    sample_ok = Case("good-sample", lambda e: ["sample", "--questions", str(e.questions), "--n", "2"])
    res = run_case(env, sample_ok)
    assert not res.ok and "exit 0" in res.problem


def test_a_changed_store_is_noticed(env: Env, tmp_path: Path) -> None:
    """The catalogue's remembered store state follows a command that writes the store (its check reuses it)."""
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(env.db, copy)
    on_copy = Env(root=env.root, db=copy, questions=env.questions)
    before = on_copy.store_state()[1]
    assert before == snapshot(env.db)
    code, _, err = run_cli("import", "--db", str(copy), str(env.path("t_good.jsonl")))
    assert code == 0, err
    after = on_copy.store_state()[1]
    assert after != before and after == snapshot(copy) and snapshot(env.db) == before
