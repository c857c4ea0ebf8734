"""docs/how-to/otel.md "Out" as Phoenix shows it: a recorded, judged sandbox store exported with `export --otlp` to a
real Phoenix server, read back through Phoenix's REST API (spans in the project, their times, the span
annotations); `--otlp-file NAME.pb` is an ExportTraceServiceRequest Phoenix's /v1/traces takes; the timeline rule."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from searchtrace.replay.interchange._otel_export import _timeline
from searchtrace.store import (
    EventLog,
    FetchCalled,
    FetchCompleted,
    ModelResponded,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryStarted,
)
from tests.builders import run_cli, trajectories

TOKEN = "tok-otlp-header-secret-5150"  # an exporter header value: it authenticates, it is never exported


def recorded(tmp: Path, n: int = 2) -> Path:
    """A short sandbox record (n questions × 2 providers), judged and audited by `demo`."""
    got = run_cli("demo", "--out", str(tmp / "demo"), "--n", str(n), "--providers", "brave,tavily")
    assert got.code == 0, got.err
    return tmp / "demo" / "demo.duckdb"


def steps(db: Path) -> dict[str, list[tuple[str, int]]]:
    """trajectory id -> (span name, recorded latency µs) of each model turn, search and fetch in recorded order."""
    out: dict[str, list[tuple[str, int]]] = {}
    with EventLog(db, read_only=True) as log:
        for payloads in trajectories(log).values():
            tid, seq, calls = "", list[tuple[str, int]](), dict[str, int]()
            for p in payloads:
                if isinstance(p, TrajectoryStarted):
                    tid = p.trajectory_id
                elif isinstance(p, ModelResponded):
                    seq.append(("chat", round(p.latency_ms * 1000)))
                elif isinstance(p, SearchCalled | FetchCalled):
                    calls[p.call_id] = len(seq)
                    seq.append(("execute_tool " + ("search_web" if isinstance(p, SearchCalled) else "fetch_page"), 0))
                elif isinstance(p, SearchCompleted | FetchCompleted):
                    i = calls[p.call_id]
                    seq[i] = (seq[i][0], round(p.latency_ms * 1000))
            out[tid] = seq
    return out


def cells(db: Path) -> dict[tuple[str, int, str], str]:
    """(trajectory id, rank, url_normalized) -> the partition cell of each judged result, by the rule itself: the
    snippet supports the gold answer and was shown (S), the page fetched (F): SMART S∧F, MISSED S∧¬F, BLIND ¬S∧F."""
    got = run_cli("sql", "--db", str(db), "--json",
                  "SELECT i.trajectory_id AS t, i.url_normalized AS u, v.valid, v.snippet_supports_gold AS sup, "
                  "i.snippet_shown AS shown, i.fetched FROM v_judge_items i JOIN v_verdicts v USING "
                  "(trajectory_id, url_normalized)")
    assert got.code == 0, got.err
    verdict = {(r["t"], r["u"]): r for r in json.loads(got.out)}
    assert verdict and all(r["valid"] for r in verdict.values())
    out = {}
    with EventLog(db, read_only=True) as log:
        for payloads in trajectories(log).values():
            tid = next(p.trajectory_id for p in payloads if isinstance(p, TrajectoryStarted))
            for p in payloads:
                if isinstance(p, SearchResult) and (r := verdict.get((tid, p.url_normalized))) is not None:
                    s, f = bool(r["sup"]) and bool(r["shown"]), bool(r["fetched"])
                    out[(tid, p.rank, p.url_normalized)] = {(True, True): "SMART", (True, False): "MISSED",
                                                            (False, True): "BLIND", (False, False): "NO-OP"}[(s, f)]
    return out


def us(ts: str) -> int:
    """An ISO time as Phoenix answers it, in µs since the epoch (exact: integer arithmetic)."""
    return (datetime.fromisoformat(ts) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def read(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a paged Phoenix REST listing."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        r = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        body = r.json()
        rows += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return rows


def test_phoenix_shows_recorded_durations_order_annotations_and_project(
        tmp_path: Path, phoenix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = recorded(tmp_path)
    want, want_cells = steps(db), cells(db)
    project = f"searchtrace-test-{tmp_path.name}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{TOKEN}")
    sent = run_cli("export", "--db", str(db), "--otlp", f"{phoenix}/v1/traces", "--project", project)
    assert sent.code == 0, sent.err
    assert sent.out.strip().startswith(f"{phoenix}/v1/traces: 4 traces, {len(want_cells) + 4} span annotations, "
                                       "judge run "), sent.out
    assert TOKEN not in sent.out + sent.err
    with httpx.Client(base_url=phoenix, timeout=30) as client:
        spans = read(client, f"/v1/projects/{project}/spans", limit=1000)  # the project the resource named
        assert project in [p["name"] for p in read(client, "/v1/projects")]
        notes = read(client, f"/v1/projects/{project}/span_annotations", limit=10000,
                     span_ids=[s["context"]["span_id"] for s in spans])
    assert TOKEN not in json.dumps(spans) + json.dumps(notes)
    roots = {s["context"]["trace_id"]: s for s in spans if s["parent_id"] is None}
    assert len(roots) == 4 == len(want)
    trace_of = {s["context"]["span_id"]: roots[s["context"]["trace_id"]]["attributes"]["searchtrace.trajectory_id"]
                for s in spans}
    for trace, root in roots.items():
        a = root["attributes"]
        assert root["name"] == f"{a['searchtrace.qid']} · {a['searchtrace.provider']}"  # what the trace is
        children = sorted((s for s in spans if s["context"]["trace_id"] == trace and s["parent_id"]),
                          key=lambda s: us(s["start_time"]))
        starts = [us(s["start_time"]) for s in children]
        assert starts == sorted(set(starts))  # strictly increasing: no two steps tie
        got = [(s["name"], us(s["end_time"]) - us(s["start_time"])) for s in children]
        assert got == want[a["searchtrace.trajectory_id"]]  # recorded order, each lasting its recorded latency
        assert all(d > 0 for name, d in got if name != "execute_tool fetch_page")  # a cached page takes no time
        assert us(root["start_time"]) <= starts[0] and us(root["end_time"]) >= us(children[-1]["end_time"])
    verdicts = [n for n in notes if n["name"] == "searchtrace.verdict"]
    by_result = {(trace_of[n["span_id"]], n["metadata"]["rank"], n["metadata"]["url_normalized"]):
                 n["result"]["label"] for n in verdicts}
    assert len(by_result) == len(verdicts) and by_result == want_cells  # one per judged result, the right label
    assert all(n["annotator_kind"] == "LLM" and n["result"]["score"] == float(n["result"]["label"] in
               ("SMART", "MISSED")) for n in verdicts)
    assert {n["result"]["label"] for n in notes if n["name"] == "searchtrace.semantic_match"} <= {"correct",
                                                                                                  "incorrect"}
    assert sum(n["name"] == "searchtrace.semantic_match" for n in notes) == 4
    # sent again: the same spans and annotations (identifiers make the annotations updates, not new ones)
    again = run_cli("export", "--db", str(db), "--otlp", phoenix, "--project", project)
    assert again.code == 0, again.err
    with httpx.Client(base_url=phoenix, timeout=30) as client:
        assert len(read(client, f"/v1/projects/{project}/span_annotations", limit=10000,
                        span_ids=[s["context"]["span_id"] for s in spans])) == len(notes)
    # the file form: NAME.pb is one protobuf ExportTraceServiceRequest that Phoenix's /v1/traces takes as it is (from
    # another recording: Phoenix keeps a span id once, in the project that sent it first)
    other = recorded(tmp_path / "other", n=1)
    pb = tmp_path / "traces.pb"
    wrote = run_cli("export", "--db", str(other), "--otlp-file", str(pb), "--project", project + "-file")
    assert wrote.code == 0, wrote.err
    req = ExportTraceServiceRequest()
    req.ParseFromString(pb.read_bytes())
    ids = sorted(s.span_id.hex() for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans)
    with httpx.Client(base_url=phoenix, timeout=30) as client:
        r = client.post("/v1/traces", content=pb.read_bytes(), headers={"Content-Type": "application/x-protobuf"})
        assert r.status_code == 200, r.text
        hung = time.monotonic() + 120  # a guard against a hang, not a wait: the loop ends when all are listed
        while time.monotonic() < hung:  # Phoenix stores accepted spans (and makes the project) a moment later
            listed = client.get(f"/v1/projects/{project}-file/spans", params={"limit": 1000})
            if listed.status_code == 200 and len(listed.json()["data"]) == len(ids):
                break
            time.sleep(0.1)
    assert listed.status_code == 200, listed.text
    assert sorted(s["context"]["span_id"] for s in listed.json()["data"]) == ids


def test_a_pb_file_is_one_export_request_and_imports_back_with_the_latencies(tmp_path: Path) -> None:
    db = recorded(tmp_path)
    pb, js = tmp_path / "t.pb", tmp_path / "t.jsonl"
    assert run_cli("export", "--db", str(db), "--otlp-file", str(pb), "--project", "p").code == 0
    assert run_cli("export", "--db", str(db), "--otlp-file", str(js), "--project", "p").code == 0
    req = ExportTraceServiceRequest()
    req.ParseFromString(pb.read_bytes())
    spans = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    lines = [json.loads(line) for line in js.read_text().splitlines()]
    assert len(lines) == 4 and len(spans) == sum(len(ss["spans"]) for d in lines for rs in d["resourceSpans"]
                                                 for ss in rs["scopeSpans"])
    assert {kv.key: kv.value.string_value for kv in req.resource_spans[0].resource.attributes
            }["openinference.project.name"] == "p"
    # a span lasts its step's recorded latency, which the import below reads back span for span: a step recorded
    # with none lasts 0 ns (a strict `end > start` for all failed once in a loaded run)
    assert all(s.end_time_unix_nano >= s.start_time_unix_nano for s in spans)
    assert any(s.end_time_unix_nano > s.start_time_unix_nano for s in spans)
    misuse = run_cli("export", "--db", str(db), "--out", str(tmp_path / "out"), "--project", "p")
    assert misuse.code == 2 and "--project applies to --otlp" in misuse.err and not (tmp_path / "out").exists()
    back = tmp_path / "back.duckdb"
    imp = run_cli("import", "--db", str(back), "--from", "otel", str(pb))
    assert imp.code == 0, imp.err
    assert steps(back).values() and sorted(steps(back).values()) == sorted(steps(db).values())  # span = latency


def test_the_timeline_keeps_latencies_and_order_and_ends_by_the_recorded_times() -> None:
    # recorded as each step ended: each span ends at its recorded time
    assert _timeline([(True, 10, 10), (False, 25, 14), (True, 40, 15)]) == [(0, 10), (11, 25), (25, 40)]
    # events committed together (one recorded time): steps laid end to end back from it
    assert _timeline([(True, 1000, 10), (False, 1000, 5), (True, 1000, 7)]) == [(978, 988), (988, 993), (993, 1000)]
    # a step without latency still starts after the one before it, and before the one after it
    assert _timeline([(True, 50, 0), (False, 50, 0), (True, 50, 0)]) == [(48, 48), (49, 49), (50, 50)]
    # two tool calls of one turn (run concurrently, recorded together): they overlap, yet start in recorded order
    given = [(True, 10, 10), (False, 30, 15), (False, 30, 20), (True, 40, 9)]
    got = _timeline(given)
    assert [e - s for s, e in got] == [lat for _, _, lat in given]
    assert [s for s, _ in got] == sorted({s for s, _ in got})
    assert got[1][1] > got[2][0]  # overlapping
    assert all(e <= rec for (_, rec, _), (_, e) in zip(given, got, strict=True))
    assert _timeline([]) == []
