"""`judge --backfill-pages` (docs/how-to/hosted.md): the pages of items whose text the caller never received are
fetched through the fetch backend and judged as surface `backfill`, reported apart: every other report key keeps
its value; a page that cannot be fetched is recorded invalid; a second run resumes with nothing left to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from searchtrace.store import EventLog, JudgeBackfill, SearchResult
from tests.builders import run_cli
from tests.engine.test_record_hosted import CONFIG
from tests.proxy.support import streams

# a search API, Claude's web_search (url and title), OpenAI's web_search (bare URLs) and Perplexity (snippets)
LAYERS = CONFIG.replace('kind = "anthropic_web_fetch"', 'kind = "anthropic_web_search"').replace(
    "[providers.pplx]", '[providers.oai]\nkind = "openai_web_search"\n[providers.pplx]')
INSPECT_LOGS = Path(__file__).resolve().parents[1] / "data" / "inspect" / "hosted"
KEYS = ("backfill_items", "backfill_judged", "backfill_supports_gold", "backfill_supports_gold_count",
        "backfill_supports_gold_ci")


def _report(db: Path) -> dict[str, Any]:
    ran = run_cli("report", "--db", str(db), "--json")
    assert ran.code == 0, ran.err
    out: dict[str, Any] = json.loads(ran.out)
    return out


def _backfills(db: Path) -> list[JudgeBackfill]:
    with EventLog(db, read_only=True) as log:
        return [e.payload for e in log.read(types=["judge.backfill"]) if isinstance(e.payload, JudgeBackfill)]


def test_backfilled_pages_are_judged_apart_and_change_no_other_figure(tmp_path: Path) -> None:
    (tmp_path / "run.toml").write_text(LAYERS)
    db = tmp_path / "h.duckdb"
    assert run_cli("record", "--config", str(tmp_path / "run.toml"), "--db", str(db), "--sandbox",
                   "--no-progress").code == 0
    assert run_cli("judge", "--db", str(db), "--sandbox").code == 0
    before = _report(db)
    ran = run_cli("judge", "--db", str(db), "--sandbox", "--backfill-pages")
    assert ran.code == 0, ran.err
    after = _report(db)
    # the items whose text never reached the caller, by hand: every result without a snippet in its surface (none of
    # these layers opened a page)
    by_arm: dict[str, set[tuple[str, str]]] = {}
    for stream, events in streams(db).items():
        arm = stream.split(":")[2]
        for _, _, p in events:
            if isinstance(p, SearchResult) and isinstance(p.surface, list) and "snippet" not in p.surface:
                by_arm.setdefault(arm, set()).add((stream.removeprefix("traj:"), p.url_normalized))
    assert set(by_arm) == {"claude_search", "oai"}
    backfills = _backfills(db)
    assert {(b.item.trajectory_id, b.item.url_normalized) for b in backfills} == set().union(*by_arm.values())
    assert all(b.valid and b.fetch_status == "ok" and b.page_digest and b.labels is not None
               and b.labels.snippet is None and b.labels.page is not None for b in backfills)
    assert f"backfill: {len(backfills)} items whose text the caller never received (0 already" in ran.out
    for arm, block in after["providers"].items():
        mine = [b for b in backfills if (b.item.trajectory_id, b.item.url_normalized) in by_arm.get(arm, set())]
        supports = sum(bool(b.labels and b.labels.page and b.labels.page.supports_gold) for b in mine)
        assert (block["backfill_items"], block["backfill_judged"], block["backfill_supports_gold_count"]) == (
            len(mine), len(mine), supports)
        assert block["backfill_supports_gold"] == (supports / len(mine) if mine else None)
        assert block["denominators"]["backfill_supports_gold"] == "backfill_judged"
        # apart: without its own keys, the arm's block is the one before backfill, to the byte
        rest = {k: v for k, v in block.items() if k not in KEYS}
        rest["denominators"] = {k: v for k, v in block["denominators"].items() if k != "backfill_supports_gold"}
        assert json.dumps(rest, sort_keys=True) == json.dumps(before["providers"][arm], sort_keys=True)
    assert after["providers"]["claude_search"]["backfill_items"] == after["providers"]["claude_search"]["unobserved_items"]
    again = run_cli("judge", "--db", str(db), "--sandbox", "--backfill-pages")
    assert again.code == 0 and f"({len(backfills)} already backfilled); 0 pages fetched now" in again.out
    assert len(_backfills(db)) == len(backfills)


def test_a_page_that_cannot_be_fetched_is_recorded_invalid(tmp_path: Path) -> None:
    db = tmp_path / "i.duckdb"
    assert run_cli("import", "--db", str(db), "--from", "inspect", "--run-id", "i", str(INSPECT_LOGS)).code == 0
    ran = run_cli("judge", "--db", str(db), "--sandbox", "--backfill-pages")
    assert ran.code == 0, ran.err
    backfills = _backfills(db)
    # Gemini's redirect URIs from an Inspect log point at a sandbox no longer serving: the fetch backend refuses them
    gemini = [b for b in backfills if "grounding-api-redirect" in b.url]
    assert len(gemini) == 10 and all(not b.valid and b.fetch_status == "http_error" and b.page_digest is None
                                     and b.invalid_reason and b.invalid_reason.startswith("fetch http_error")
                                     for b in gemini)
    # Claude's: 10 results, the one page it fetched per question already read by the caller
    assert len(backfills) - len(gemini) == 8 and all(b.valid for b in backfills if b not in gemini)
    arms = _report(db)["providers"]
    assert (arms["gemini_grounding"]["backfill_items"], arms["gemini_grounding"]["backfill_judged"]) == (10, 0)
    assert arms["gemini_grounding"]["backfill_supports_gold"] is None
    assert arms["perplexity_agent"]["backfill_items"] == 0


def test_backfill_with_batch_or_ray_is_a_usage_error(tmp_path: Path) -> None:
    ran = run_cli("judge", "--db", str(tmp_path / "x.duckdb"), "--sandbox", "--backfill-pages", "--batch")
    assert ran.code == 2 and "--backfill-pages" in ran.err and "Traceback" not in ran.err
