"""Trajectories -> OpenTelemetry traces in the GenAI conventions (docs/how-to/otel.md "Out"), so Phoenix or Langfuse show
searchtrace's per-URL evidence beside how the agent ran.

Each trajectory is one trace: an `invoke_agent` root span (qid, provider, question, gold and final answer, stop
reason, the partition counts of the judge run as `searchtrace.partition.<cell>`), one `chat` span per model turn
(`gen_ai.input.messages` / `gen_ai.output.messages` in the GenAI message-parts shape, usage, and the request and
reply bodies as OpenInference `input.value` / `output.value`, so an import gets the exact messages back) and one
`execute_tool` span per search (its results as `gen_ai.tool.call.result`, one `searchtrace.verdict` span event per
judged result) or fetch (the page). Trace and span ids are digests of event ids. Each step's span lasts its
recorded latency and ends at its event's recorded time, or when the next step started if that is earlier (events
committed together share one time; `_timeline`); the resource names the Phoenix project (`openinference.project.name`). The verdicts are also
Phoenix span annotations (`phoenix_annotations`), built from the same span events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgspec

from searchtrace.analytics import (
    OBSERVED_CELLS,
    SUPPORTED_CELLS,
    partition_cell,
    resolve_judge_run,
    sources,
    surface_support,
)
from searchtrace.engine import Fetch, Folded, Search
from searchtrace.replay.interchange._export import Blobs, current_folds, trajectory_cells
from searchtrace.replay.interchange._otlp import Span, SpanEvent
from searchtrace.store import Cursor, EventLog, ModelResponded, epoch_of, epoch_us

SCOPE = "searchtrace"
PROJECT = "searchtrace"  # the default Phoenix project (resource attribute `openinference.project.name`)
VERDICT = "searchtrace.verdict"  # the span event, and the Phoenix annotation, of one judged result
SEARCH_TOOL, FETCH_TOOL = "search_web", "fetch_page"
CELLS = tuple(c.name for c in OBSERVED_CELLS)  # the root span's counts (analytics._model.PARTITION)
SUPPORTED = frozenset(c.name for c in SUPPORTED_CELLS)  # the cells whose surface supports gold
_enc = msgspec.json.Encoder()


def _hex(text: str, size: int) -> str:
    return hashlib.sha256(f"searchtrace-otel:{text}".encode()).hexdigest()[: 2 * size]


def _parts(m: Any) -> dict[str, Any]:
    """One chat message in the GenAI message-parts shape (any recorded shape: imported logs carry their own)."""
    if not isinstance(m, dict):
        return {"role": None, "parts": [{"type": "text", "content": str(m)}]}
    parts: list[dict[str, Any]] = []
    content = m.get("content")
    if isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        parts += [{"type": "text", "content": str(p.get("text", "")) if isinstance(p, dict) else str(p)}
                  for p in content]
    for c in m.get("tool_calls") or []:
        if isinstance(c, dict):
            f = c.get("function")
            f = f if isinstance(f, dict) else {"name": c.get("name"), "arguments": c.get("arguments")}
            parts.append({"type": "tool_call", "id": c.get("id"), "name": f.get("name"), "arguments": f.get("arguments")})
    if m.get("role") == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": m.get("tool_call_id"),
                                           "response": content}]}
    return {"role": m.get("role"), "parts": parts}


def _items(cur: Cursor, judge_run_id: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    """(trajectory_id, url_normalized) -> the item's verdict and cell in the judge run (valid verdicts only count
    towards the partition, as in the report)."""
    if judge_run_id is None:
        return {}
    cell = partition_cell(surface_support("v", "i"), "i.fetched")
    rows = cur.execute(
        f"SELECT i.trajectory_id, i.url_normalized, v.valid, v.invalid_reason, v.snippet_supports_gold, "
        f"v.snippet_contradicts_gold, v.snippet_relevant, v.has_page, v.page_supports_gold, v.page_contradicts_gold, "
        f"v.page_relevant, v.supports_final_answer, {cell}, i.snippet_shown, i.fetched "
        f"FROM v_judge_items i JOIN (SELECT * FROM v_verdicts WHERE judge_run_id = ? QUALIFY row_number() OVER "
        f"(PARTITION BY trajectory_id, url_normalized ORDER BY position) = 1) v "
        f"ON v.trajectory_id = i.trajectory_id AND v.url_normalized = i.url_normalized", [judge_run_id]).fetchall()
    out = {}
    for (tid, url, valid, why, s_sup, s_con, s_rel, has_page, p_sup, p_con, p_rel, final, c, shown, fetched) in rows:
        labels = None
        if valid:
            labels = {"snippet": {"supports_gold": bool(s_sup), "contradicts_gold": bool(s_con),
                                  "relevant": bool(s_rel)},
                      "page": {"supports_gold": bool(p_sup), "contradicts_gold": bool(p_con), "relevant": bool(p_rel)}
                      if has_page else None,
                      "supports_final_answer": bool(final), "rationale": ""}
        out[(tid, url)] = {"valid": bool(valid), "invalid_reason": why, "labels": labels, "cell": c if valid else None,
                           "shown": bool(shown), "fetched": bool(fetched)}
    return out


def _answers(cur: Cursor) -> dict[str, bool]:
    rows = cur.execute("SELECT trajectory_id, semantic_match FROM v_answers WHERE semantic_match IS NOT NULL").fetchall()
    return {str(t): bool(m) for t, m in rows}


def export_traces(log: EventLog, cur: Cursor, judge_run_id: str | None = None, *,
                  writable: bool = True, project: str = PROJECT) -> Iterable[list[Span]]:
    """The spans of each trajectory (latest attempts), trajectory by trajectory, in the Phoenix project `project`.
    `cur` has the views (v_*) and caught-up projections (`writable`) or reads the raw views."""
    with sources.reading(cur, writable=writable):
        run, _notes = resolve_judge_run(cur, judge_run_id)
        items = _items(cur, run)
        answers = _answers(cur)
    cells = trajectory_cells(log)
    loaded = Blobs(log, None, replies=True)
    for _stream, _started, events, f in current_folds(log, cells, loaded):
        yield _trace(loaded, [(str(e.event_id), epoch_us(e.recorded_at), e.run_id, e.payload) for e in events],
                     f, items, answers, run, project)


def _us(ms: float) -> int:
    """A recorded latency in whole microseconds (what Phoenix and most backends keep of a span's times)."""
    return max(0, round(ms * 1000))


def _timeline(steps: list[tuple[bool, int, int]]) -> list[tuple[int, int]]:
    """(start, end) in µs of each step, from (is a model turn, recorded µs, latency µs) in recorded order.

    Every span lasts its latency exactly. It ends at its event's recorded time (never before the step ended), or
    when the step after it started if that is earlier (a writer commits several events at one time): laid back
    from the last step. The tool calls between two model turns may overlap (the agent runs them concurrently);
    every step starts strictly after the one before it, so a viewer sorting by start time shows the recorded order.
    """
    out = [(0, 0)] * len(steps)
    floor: int | None = None  # the earliest start of the steps after this one
    model_start: int | None = None  # the start of the next model turn
    next_start: int | None = None  # the start of the step right after
    for i in range(len(steps) - 1, -1, -1):
        model, rec, lat = steps[i]
        bound = floor if model else model_start
        end = rec if bound is None else min(rec, bound)
        start = end - lat
        if next_start is not None and start >= next_start:
            start = next_start - 1
            end = start + lat
        out[i] = (start, end)
        floor = start if floor is None else min(floor, start)
        next_start = start
        if model:
            model_start = start
    return out


def _trace(loaded: Blobs, events: list[tuple[str, int, str, Any]], f: Folded,
           items: dict[tuple[str, str], dict[str, Any]], answers: dict[str, bool],
           judge_run_id: str | None, project: str) -> list[Span]:
    """One trajectory's spans: `events` (event id, recorded µs, run, payload) folded as `f`, its blobs in `loaded`."""
    blob = loaded.got.get
    started = f.started
    assert started is not None
    tid = started.trajectory_id
    by_obj = {id(p): (eid, us) for eid, us, _, p in events}
    trace_id = _hex(events[0][0], 16)
    root_id = _hex(events[0][0] + ":root", 8)
    resource = {"service.name": "searchtrace", "openinference.project.name": project,
                "searchtrace.run_id": events[0][2]}
    spans: list[Span] = []
    timed: list[tuple[bool, int, int]] = []
    for step in f.steps:
        if isinstance(step, ModelResponded):
            timed.append((True, by_obj[id(step)][1], _us(step.latency_ms)))
        elif isinstance(step, Search | Fetch):
            done = step.completed
            timed.append((False, by_obj[id(done or step.called)][1], _us(done.latency_ms) if done else 0))
    times = iter([(1000 * a, 1000 * b) for a, b in _timeline(timed)])  # ns

    for step in f.steps:
        if isinstance(step, ModelResponded):
            eid, _ = by_obj[id(step)]
            start, end = next(times)
            messages = None
            if not isinstance(step.request_messages, msgspec.UnsetType):
                got = [blob(d) for d in step.request_messages]
                if all(g is not None for g in got):
                    messages = [msgspec.json.decode(g) for g in got if g is not None]
            tools = None
            if not isinstance(step.tools_digest, msgspec.UnsetType) and step.tools_digest:
                t = blob(step.tools_digest)
                tools = msgspec.json.decode(t) if t is not None else None
            reply = blob(step.raw_digest) if step.raw_digest else None
            out_parts: list[dict[str, Any]] = [{"type": "text", "content": step.text}] if step.text else []
            out_parts += [{"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": c.arguments}
                          for c in step.tool_calls]
            u = step.usage
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat", "openinference.span.kind": "LLM",
                "gen_ai.usage.input_tokens": u.input_tokens, "gen_ai.usage.output_tokens": u.output_tokens,
                "gen_ai.usage.reasoning_tokens": u.reasoning_tokens,
                "gen_ai.usage.cache_read.input_tokens": u.cached_tokens,
                "gen_ai.output.messages": _enc.encode([{"role": "assistant", "parts": out_parts,
                                                        "finish_reason": step.finish_reason}]).decode(),
                "searchtrace.iteration": step.iteration,
            }
            if step.finish_reason:
                attrs["gen_ai.response.finish_reasons"] = [step.finish_reason]
            if messages is not None:
                attrs["gen_ai.input.messages"] = _enc.encode([_parts(m) for m in messages]).decode()
                body: dict[str, Any] = {"messages": messages}
                if tools:
                    body["tools"] = tools
                attrs["input.value"] = _enc.encode(body).decode()
                attrs["input.mime_type"] = "application/json"
            if reply is not None:
                attrs["output.value"] = reply.decode("utf-8", "replace")
                attrs["output.mime_type"] = "application/json"
            spans.append(Span(trace_id=trace_id, span_id=_hex(eid, 8), parent_id=root_id, name="chat", kind=3,
                              start_ns=start, end_ns=end, attrs=attrs, resource=resource))
        elif isinstance(step, Search):
            eid, _ = by_obj[id(step.called)]
            done = step.completed
            start, end = next(times)
            results = [{"doc_id": r.doc_id, "rank": r.rank, "title": r.title, "url": r.url, "domain": r.domain,
                        "snippet": r.snippet} for r in step.results]
            span_events = []
            for r in step.results:
                item = items.get((tid, r.url_normalized))
                if item is None:
                    continue
                ev: dict[str, Any] = {"searchtrace.judge_run_id": judge_run_id or "", "searchtrace.url": r.url,
                                      "searchtrace.url_normalized": r.url_normalized, "searchtrace.doc_id": r.doc_id,
                                      "searchtrace.rank": r.rank, "searchtrace.valid": item["valid"],
                                      "searchtrace.shown": item["shown"], "searchtrace.fetched": item["fetched"]}
                if item["labels"] is not None:
                    ev["searchtrace.labels"] = _enc.encode(item["labels"]).decode()
                    ev["searchtrace.partition"] = item["cell"]
                    ev["searchtrace.snippet.supports_gold"] = item["labels"]["snippet"]["supports_gold"]
                    ev["searchtrace.snippet.contradicts_gold"] = item["labels"]["snippet"]["contradicts_gold"]
                if item["invalid_reason"]:
                    ev["searchtrace.invalid_reason"] = str(item["invalid_reason"])
                span_events.append(SpanEvent(name=VERDICT, time_ns=end, attrs=ev))
            bad = done is not None and done.status != "ok"
            spans.append(Span(
                trace_id=trace_id, span_id=_hex(eid, 8), parent_id=root_id, name=f"execute_tool {SEARCH_TOOL}",
                kind=1, start_ns=start, end_ns=end, events=span_events,
                attrs={"gen_ai.operation.name": "execute_tool", "openinference.span.kind": "TOOL",
                       "gen_ai.tool.name": SEARCH_TOOL, "gen_ai.tool.call.id": step.called.call_id,
                       "gen_ai.tool.call.arguments": _enc.encode({"query": step.called.query}).decode(),
                       "gen_ai.tool.call.result": _enc.encode(results).decode(),
                       "searchtrace.provider": step.called.provider},
                status=2 if bad else 0,
                status_message=(done.error or done.status) if bad and done is not None else ""))
        elif isinstance(step, Fetch):
            eid, _ = by_obj[id(step.called)]
            fc = step.completed
            start, end = next(times)
            page = blob(fc.content_digest) if fc is not None and fc.content_digest else None
            ok = fc is not None and fc.status == "ok" and page is not None
            attrs = {"gen_ai.operation.name": "execute_tool", "openinference.span.kind": "TOOL",
                     "gen_ai.tool.name": FETCH_TOOL, "gen_ai.tool.call.id": step.called.call_id,
                     "gen_ai.tool.call.arguments": _enc.encode({"url": step.called.url,
                                                                "doc_id": step.called.doc_id}).decode()}
            if ok and page is not None:
                attrs["gen_ai.tool.call.result"] = page.decode("utf-8", "replace")
            spans.append(Span(trace_id=trace_id, span_id=_hex(eid, 8), parent_id=root_id,
                              name=f"execute_tool {FETCH_TOOL}", kind=1, start_ns=start, end_ns=end, attrs=attrs,
                              status=0 if ok else 2,
                              status_message="" if ok else (fc.error or fc.status) if fc else "no reply"))
    counts = {c: 0 for c in CELLS}
    for (item_tid, _url), item in items.items():
        if item_tid == tid and item["cell"] in counts:
            counts[item["cell"]] += 1
    fin = f.finished
    root_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "searchtrace", "openinference.span.kind": "AGENT",
        "searchtrace.trajectory_id": tid, "searchtrace.qid": started.qid, "searchtrace.provider": started.provider,
        "searchtrace.question": started.question, "searchtrace.gold_answer": started.gold_answer,
        "input.value": started.question,
        **{f"searchtrace.partition.{c}": n for c, n in counts.items()},
    }
    if judge_run_id is not None:
        root_attrs["searchtrace.judge_run_id"] = judge_run_id
    if f.final is not None:
        root_attrs["searchtrace.final_answer"] = f.final.text
        root_attrs["output.value"] = f.final.text
    if fin is not None:
        root_attrs["searchtrace.reason"] = fin.reason
    if tid in answers:
        root_attrs["searchtrace.semantic_match"] = answers[tid]
    epoch = epoch_of(started)
    name = f"{started.qid} · {started.provider}" + (f" · epoch {epoch}" if epoch > 1 else "")
    root_attrs["langfuse.trace.name"] = name  # Langfuse's trace name (Phoenix takes the root span's name)
    root = Span(trace_id=trace_id, span_id=root_id, kind=1, attrs=root_attrs, name=name,
                start_ns=min([s.start_ns for s in spans] + [1000 * events[0][1]]),
                end_ns=max([s.end_ns for s in spans] + [1000 * events[-1][1]]),
                resource=resource, status=2 if fin is not None and fin.reason == "error" else 0,
                status_message=(fin.error or "") if fin is not None and fin.reason == "error" else "")
    return [root, *[msgspec.structs.replace(s, resource=resource) for s in spans]]


def phoenix_annotations(spans: list[Span]) -> list[dict[str, Any]]:
    """Phoenix span annotations (`POST /v1/span_annotations`) of one trace, from its spans: one `searchtrace.verdict`
    per judged result on its search span (label the partition cell, or `invalid`; score 1 when the shown snippet
    supports the gold answer), and `searchtrace.semantic_match` on the root when the final answer was audited.
    Each has an identifier, so sending it again updates it instead of adding one."""
    out: list[dict[str, Any]] = []
    for s in spans:
        if not s.parent_id and "searchtrace.semantic_match" in s.attrs:
            match = bool(s.attrs["searchtrace.semantic_match"])
            out.append({"span_id": s.span_id, "name": "searchtrace.semantic_match", "annotator_kind": "LLM",
                        "identifier": "searchtrace", "result": {
                            "label": "correct" if match else "incorrect", "score": 1.0 if match else 0.0,
                            "explanation": f"final answer {s.attrs.get('searchtrace.final_answer')!r}, gold "
                                           f"{s.attrs.get('searchtrace.gold_answer')!r}"}})
        for e in s.events:
            if e.name != VERDICT:
                continue
            a = {k.removeprefix("searchtrace."): v for k, v in e.attrs.items()}
            if "labels" in a:
                a["labels"] = msgspec.json.decode(a["labels"])
            cell = a.get("partition")
            why = f"#{a['rank']} {a['url']}: " + (
                f"invalid verdict ({a.get('invalid_reason') or 'no reason'})" if cell is None else
                f"{cell}: the snippet {'supports' if a.get('snippet.supports_gold') else 'does not support'} the gold "
                f"answer; {'shown' if a['shown'] else 'not shown'}, {'fetched' if a['fetched'] else 'not fetched'}")
            out.append({"span_id": s.span_id, "name": VERDICT, "annotator_kind": "LLM",
                        "identifier": f"{a['rank']}:{a['url_normalized']}", "metadata": a,
                        "result": {"label": cell or "invalid", "explanation": why,
                                   "score": None if cell is None else float(cell in SUPPORTED)}})
    return out
