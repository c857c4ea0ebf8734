"""A run config names a hosted search layer like a provider (docs/how-to/hosted.md): `record --sandbox` asks each
question of it over its model API and records its searches with their surface, its page reads and its citations;
a model key on a search provider is refused in one line."""

from __future__ import annotations

from pathlib import Path

from searchtrace.store import (
    AnswerFinal,
    EventLog,
    FetchCompleted,
    ModelResponded,
    SearchCalled,
    SearchResult,
)
from tests.builders import run_cli

CONFIG = """run_id = "h"
[agent]
model = "sandbox-agent"
[providers.brave]
[providers.claude_search]
kind = "anthropic_web_fetch"
model = "sandbox-agent-claude"
[providers.pplx]
kind = "perplexity_agent"
[fetch]
cache_dir = ""
[dataset]
path = "sandbox"
[sample]
n = 3
"""


def test_a_config_records_hosted_layers_beside_a_search_api(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text(CONFIG)
    db = tmp_path / "h.duckdb"
    ran = run_cli("record", "--config", str(tmp_path / "run.toml"), "--db", str(db), "--sandbox", "--no-progress")
    assert ran.code == 0, ran.err
    with EventLog(db, read_only=True) as log:
        by: dict[str, list[object]] = {}
        for ev in log.read():
            if ev.stream_id.startswith("traj:"):
                by.setdefault(ev.stream_id, []).append(ev.payload)
    claude = [s for k, s in by.items() if ":claude_search:" in k]
    pplx = [s for k, s in by.items() if ":pplx:" in k]
    assert len(claude) == len(pplx) == 3 and sum(":brave:" in k for k in by) == 3
    for events in claude:
        turns = [e for e in events if isinstance(e, ModelResponded)]
        assert [(t.model, t.api) for t in turns] == [("sandbox-agent-claude", "anthropic")]
        assert [c.provider for c in events if isinstance(c, SearchCalled)] == ["anthropic_web_fetch"]
        got = [r for r in events if isinstance(r, SearchResult)]
        assert got and [r.rank for r in got] == list(range(1, len(got) + 1)) and all(r.model_saw_more for r in got)
        assert [f.status for f in events if isinstance(f, FetchCompleted)] == ["ok"]
        answer = next(e for e in events if isinstance(e, AnswerFinal))
        assert answer.citations and answer.citations[0].item in {r.url_normalized for r in got}  # type: ignore[union-attr]
    for events in pplx:
        assert all(r.surface == ["url", "title", "snippet"] for r in events if isinstance(r, SearchResult))


def test_a_model_on_a_search_provider_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(CONFIG.replace("[providers.brave]\n", "[providers.brave]\nmodel = \"x\"\n"))
    ran = run_cli("record", "--config", str(tmp_path / "bad.toml"), "--db", str(tmp_path / "b.duckdb"), "--sandbox")
    assert ran.code == 2 and "providers.brave.model" in ran.err and "Traceback" not in ran.err
    assert not (tmp_path / "b.duckdb").exists()
