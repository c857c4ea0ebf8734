"""Each judge.verdict names the judge model that answered and the model API it was asked over (docs/how-to/claude-gemini.md),
as model.responded does: judged over real HTTP against a running sandbox on each API; a verdict recorded before
these fields (or imported) still decodes, with both UNSET."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from searchtrace.adapters.sandbox import running
from searchtrace.store import EventLog, JudgeItemRef, JudgeVerdict, decode_payload
from tests.builders import run_cli

CONFIG = """run_id = "j"
[agent]
model = "sandbox-agent"
[providers.brave]
[fetch]
cache_dir = ""
[dataset]
path = "sandbox"
[sample]
n = 1
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("judge-api")
    (tmp / "run.toml").write_text(CONFIG)
    db = tmp / "j.duckdb"
    ran = run_cli("record", "--config", str(tmp / "run.toml"), "--db", str(db), "--sandbox", "--no-progress")
    assert ran.code == 0, ran.err
    return db


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_each_verdict_names_the_model_that_answered_and_its_api(store: Path, api: str) -> None:
    with running() as root:
        ran = run_cli("judge", "--db", str(store), "--sandbox-url", root, "--api", api, "--judge-run-id", f"by-{api}",
                      "--no-progress")
    assert ran.code == 0, ran.err
    with EventLog(store, read_only=True) as log:
        verdicts = [e.payload for e in log.read(types=["judge.verdict"]) if e.run_id == f"by-{api}"]
    assert verdicts and all(isinstance(v, JudgeVerdict) and v.valid for v in verdicts)
    assert {(v.model, v.api) for v in verdicts if isinstance(v, JudgeVerdict)} == {("sandbox-judge", api)}


def test_a_verdict_without_model_and_api_still_decodes() -> None:
    old = JudgeVerdict(judge_run_id="old", item=JudgeItemRef(trajectory_id="t", url_normalized="u"),
                       surface="snippet", valid=False, labels=None, invalid_reason="empty reply")
    data = msgspec.json.encode(old)
    assert b'"model"' not in data and b'"api"' not in data  # unset fields are never encoded: old bytes kept
    got = decode_payload(data)
    assert isinstance(got, JudgeVerdict) and got.model is msgspec.UNSET and got.api is msgspec.UNSET
    assert got == old
