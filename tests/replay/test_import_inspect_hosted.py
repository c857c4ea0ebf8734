"""`import --from inspect` of Inspect's hosted web search (docs/how-to/hosted.md): logs made by a real `inspect eval`
of Inspect's own `web_search()` tool against the sandbox's hosted layers (tests/data/inspect/hosted_task.py) become
ranked search.result events with the surface the caller received, opaque content kept as a blob, page reads as
fetches and the answer's citations linked to items; with or without the raw replies Inspect keeps for the first
calls only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from searchtrace.adapters.sandbox._hosted import unseal
from searchtrace.store import (
    AnswerFinal,
    EventLog,
    FetchCompleted,
    SearchCalled,
    SearchResult,
    TrajectoryStarted,
)
from tests.proxy.support import streams
from tests.replay.test_import_inspect import Out

LOGS = Path(__file__).resolve().parents[1] / "data" / "inspect" / "hosted"

ANSWERED = "sbx-9ab3167de8"
SURFACES = {  # layer -> (the surfaces its results may have, model_saw_more)
    "anthropic_web_fetch": ({("url", "title"), ("url", "title", "cited_text")}, True),
    "gemini_grounding": ({("url", "title")}, True),
    "perplexity_agent": ({("url", "title", "snippet")}, False),
}


def _by_layer(db: Path) -> dict[tuple[str, str], list[Any]]:
    """(layer, qid) -> the trajectory's payloads."""
    out = {}
    for events in streams(db).values():
        payloads = [p for _, _, p in events]
        started = payloads[0]
        assert isinstance(started, TrajectoryStarted)
        out[(started.provider, started.qid)] = payloads
    return out


def _raw_sources(layer: str) -> dict[str, list[str]]:
    """qid -> the source URLs of the layer's raw replies, in order, read from the log with Inspect's own reader."""
    inspect_log = pytest.importorskip("inspect_ai.log")
    model = {"anthropic_web_fetch": "anthropic", "gemini_grounding": "google", "perplexity_agent": "perplexity"}[layer]
    log = next(inspect_log.read_eval_log(str(p), resolve_attachments=True) for p in sorted(LOGS.glob("*.eval"))
               if inspect_log.read_eval_log(str(p), header_only=True).eval.model.startswith(model))
    out: dict[str, list[str]] = {}
    for sample in log.samples:
        urls: list[str] = []
        for e in sample.events:
            if e.event != "model":
                continue
            resp = e.call.response
            if layer == "anthropic_web_fetch":
                urls += [r["url"] for b in resp["content"] if b["type"] == "web_search_tool_result" for r in b["content"]]
            elif layer == "gemini_grounding":
                urls += [c["web"]["uri"] for c in resp["candidates"][0]["groundingMetadata"]["groundingChunks"]]
            else:
                urls += [r["url"] for item in resp["output"] if item["type"] == "search_results" for r in item["results"]]
        out[str(sample.id)] = urls
    return out


def test_inspect_hosted_search_becomes_ranked_results_with_their_surface(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.duckdb"
    res = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "inspect", str(LOGS))
    assert res.returncode == 0, res.stderr
    assert "8 new trajectories" in res.stdout
    got = _by_layer(db)
    assert {layer for layer, _ in got} == {"openai_web_search", *SURFACES}  # the arm is the layer the model searched
    for (layer, qid), payloads in got.items():
        called = [p for p in payloads if isinstance(p, SearchCalled)]
        results = [p for p in payloads if isinstance(p, SearchResult)]
        final = next(p for p in payloads if isinstance(p, AnswerFinal))
        assert [c.provider for c in called] == [layer] and called[0].query == payloads[0].question
        answered = qid == ANSWERED  # the sandbox model finds the other question's answer in no result: no citation
        assert bool(final.citations) is answered and final.text != "unknown" if answered else final.text == "unknown"
        if layer == "openai_web_search":  # Inspect never asks for the sources: the search is there, no result is
            assert results == [] and all(c.item is None for c in final.citations or [])
            continue
        surfaces, more = SURFACES[layer]
        assert [r.url for r in results] == _raw_sources(layer)[qid]
        assert [r.rank for r in results] == list(range(1, len(results) + 1)) == [1, 2, 3, 4, 5]
        assert {tuple(r.surface) for r in results} <= surfaces  # type: ignore[arg-type]
        assert all(r.model_saw_more is more for r in results)
        assert all(bool(r.snippet) is (layer == "perplexity_agent") for r in results)
        assert all(c.item in {r.url_normalized for r in results} for c in final.citations or [])
        if layer == "anthropic_web_fetch":
            fetched = [p for p in payloads if isinstance(p, FetchCompleted)]
            assert [(f.status, f.doc_id) for f in fetched] == [("ok", results[0].doc_id)]
            with EventLog(db, read_only=True) as store:  # the encrypted content: a blob only the sandbox model reads
                assert all(unseal(store.get_blob(r.metadata["opaque_blob"]).decode()) for r in results)
    with EventLog(db, read_only=True) as store:
        cur = store.cursor()
        assert cur.execute("SELECT count(*) FROM events WHERE payload LIKE '%encrypted_content%'").fetchone() == (0,)
        cur.close()
    assert Out(capsys, "judge", "--db", str(db), "--sandbox").returncode == 0
    rep = Out(capsys, "report", "--db", str(db), "--json")
    assert rep.returncode == 0, rep.stderr
    arms = json.loads(rep.stdout)["providers"]
    # Claude's and Gemini's results have no snippet: unobserved, never NO-OP; Perplexity's have snippet verdicts
    for layer in ("anthropic_web_fetch", "gemini_grounding"):
        assert arms[layer]["unobserved_items"] == arms[layer]["valid_items"] == 10
    assert arms["perplexity_agent"]["unobserved_items"] == 0 and arms["perplexity_agent"]["valid_items"] == 10
    assert all(arms[a]["citations_per_answer"] == 0.5 for a in arms)  # one citation over two answers
    again = Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "inspect", str(LOGS))
    assert again.returncode == 0 and "0 new trajectories" in again.stdout


def _without_raw_replies(path: Path, out: Path) -> None:
    """The log as Inspect writes it past its first calls: no model event keeps the raw call."""
    inspect_log = pytest.importorskip("inspect_ai.log")
    log = inspect_log.read_eval_log(str(path), resolve_attachments=True)
    for sample in log.samples:
        for e in sample.events:
            if e.event == "model":
                e.call = None
    inspect_log.write_eval_log(log, str(out))


def test_without_raw_replies_inspect_content_gives_the_same_results(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    edited = tmp_path / "logs"
    edited.mkdir()
    for p in sorted(LOGS.glob("*.eval")):
        _without_raw_replies(p, edited / f"{p.stem}.json")
    raw_db, content_db = tmp_path / "raw.duckdb", tmp_path / "content.duckdb"
    assert Out(capsys, "import", "--db", str(raw_db), "--from", "inspect", "--run-id", "i", str(LOGS)).returncode == 0
    res = Out(capsys, "import", "--db", str(content_db), "--from", "inspect", "--run-id", "i", str(edited))
    assert res.returncode == 0, res.stderr
    raw, content = _by_layer(raw_db), _by_layer(content_db)
    # Inspect keeps Gemini's grounding only as the answer's citations: an answer that cites nothing leaves no search
    assert set(raw) - set(content) == {("gemini_grounding", "sbx-cf5d760f25")} and set(content) <= set(raw)

    def seen(payloads: list[Any]) -> list[tuple[Any, ...]]:
        return [(r.url, r.rank, r.title, r.snippet, tuple(r.surface), r.model_saw_more, sorted(r.metadata))
                for r in payloads if isinstance(r, SearchResult)]

    def cited(payloads: list[Any]) -> list[tuple[Any, ...]]:
        final = next(p for p in payloads if isinstance(p, AnswerFinal))
        return [(c.url, c.cited_text, c.item) for c in final.citations or []]

    for key, payloads in raw.items():
        layer = key[0]
        if key not in content:
            continue
        if layer == "gemini_grounding":  # Inspect keeps only the cited grounding chunks, as citations
            kept = seen(content[key])
            assert len(kept) == 1 and kept[0] == seen(payloads)[0]
        else:
            assert seen(content[key]) == seen(payloads), layer
        assert cited(content[key]) == cited(payloads), layer
        fetches = [(f.status, f.doc_id) for f in payloads if isinstance(f, FetchCompleted)]
        assert [(f.status, f.doc_id) for f in content[key] if isinstance(f, FetchCompleted)] == fetches


def test_hosted_trajectories_export_and_import_back_byte_for_byte(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db, back, out = tmp_path / "h.duckdb", tmp_path / "back.duckdb", tmp_path / "out"
    assert Out(capsys, "import", "--db", str(db), "--from", "inspect", "--run-id", "i", str(LOGS)).returncode == 0
    assert Out(capsys, "export", "--db", str(db), "--out", str(out)).returncode == 0
    lines = [json.loads(x) for x in (out / "traces.jsonl").read_text().splitlines()]
    assert sum(len(t.get("citations", [])) for t in lines) == 4  # the answered question's, in each arm
    assert {tuple(r["surface"]) for t in lines for s in t["steps"] if s["kind"] == "search"
            for r in s["results"]} >= {("url", "title"), ("url", "title", "snippet")}
    res = Out(capsys, "import", "--db", str(back), str(out / "traces.jsonl"))
    assert res.returncode == 0, res.stderr

    def payloads(path: Path) -> dict[str, list[Any]]:
        return {k: [p for _, _, p in v] for k, v in streams(path).items()}

    assert payloads(back) == payloads(db)
