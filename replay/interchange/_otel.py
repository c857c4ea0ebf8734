"""OpenTelemetry spans -> trajectories (docs/how-to/otel.md "In"), shared by `import --from otel` and `collect`.

One trace is one trajectory. OpenInference spans (`openinference.span.kind` LLM / TOOL, `input.value`,
`output.value`, `llm.input_messages.*`, `llm.output_messages.*`, `llm.token_count.*`, `tool.name`) and GenAI
semantic-convention spans (`gen_ai.operation.name` chat / execute_tool, `gen_ai.input.messages`,
`gen_ai.output.messages`, `gen_ai.usage.*`, `gen_ai.tool.*`) are read; every event is built by the trajectory
module's `Builder` (docs/concepts/shown.md), so a chat span gives `model.responded` with its request messages and `shown` works.
Event ids derive from (run, trace id, span id, index), so the same spans recorded twice add nothing.

Where docs/how-to/otel.md is silent: the final answer is `searchtrace.final_answer`, else the root span's output (after a
`FINAL ANSWER:` prefix when it has one), else the last model reply's `FINAL ANSWER:` line; the root span (no
parent) ends the trajectory (`error` when its status is ERROR); a search's hits are parsed by the provider's own
adapter when the tool output is that provider's reply (as the proxy does), else as generic results.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from searchtrace.adapters import (
    MAX_DEPTH,
    SEARCH_PROVIDERS,
    Endpoint,
    SearchAdapter,
    SearchHit,
    build_search,
    configured_secrets,
    estimate_tokens,
    json_too_deep,
    model_of,
    page_markdown,
    parse_completion,
    read_page,
    read_results,
    scrub_parsed,
    url_domain,
)
from searchtrace.engine import Builder, Question, final_answer, trajectory_id
from searchtrace.replay.interchange._common import append_chunked, event_id, event_ids
from searchtrace.replay.interchange._otlp import Span
from searchtrace.store import BadInput, ToolCall, Usage, shown, trajectory_stream, usage_rule

Message = dict[str, Any]
QID, PROVIDER, QUESTION, GOLD, FINAL = ("searchtrace.qid", "searchtrace.provider", "searchtrace.question",
                                       "searchtrace.gold_answer", "searchtrace.final_answer")
TOKENS_MAX = 10**12


def default_search_tools() -> tuple[str, ...]:
    """`search_web`, `web_search` and each provider's client tool names (`tavily_search`, `brave_search`, …)."""
    names = ["search_web", "web_search"]
    for p in SEARCH_PROVIDERS:
        names += [f"{p}_search", f"{p}_search_results_json", f"{p}_web_search"]
    return tuple(names)


DEFAULT_FETCH_TOOLS = ("fetch_page", "read_url", "fetch_url", "open_url", "read_page", "fetch")


@dataclass(frozen=True)
class ToolNames:
    search: frozenset[str] = field(default_factory=lambda: frozenset(default_search_tools()))
    fetch: frozenset[str] = frozenset(DEFAULT_FETCH_TOOLS)


@dataclass(frozen=True)
class Identity:
    qid: str
    provider: str
    question: str
    gold_answer: str


def _kind(s: Span) -> str | None:
    """`llm`, `tool`, or None (agent, chain, anything else: structure only)."""
    k = str(s.attrs.get("openinference.span.kind") or "").upper()
    op = str(s.attrs.get("gen_ai.operation.name") or "")
    if k == "LLM" or op in ("chat", "text_completion", "generate_content"):
        return "llm"
    if k == "TOOL" or op == "execute_tool":
        return "tool"
    return None


def _json(value: Any) -> Any:
    """A JSON attribute value decoded (None when it is not JSON, or nests deeper than the cap)."""
    if isinstance(value, dict | list):
        return value
    if not isinstance(value, str) or value.lstrip()[:1] not in ("{", "["):
        return None
    data = value.encode()
    if json_too_deep(data, MAX_DEPTH):
        return None
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def _metadata(s: Span) -> dict[str, Any]:
    m = _json(s.attrs.get("metadata"))
    return m if isinstance(m, dict) else {}


def attribute(spans: Sequence[Span], key: str) -> str | None:
    """The first string value of `key` on a span (root first), in OpenInference `metadata`, or on a resource."""
    for s in spans:
        for source in (s.attrs, _metadata(s)):
            v = source.get(key)
            if isinstance(v, str) and v:
                return v
    for s in spans:
        v = s.resource.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def ordered(spans: Iterable[Span]) -> list[Span]:
    """Roots first, then by start time and span id (the order a trajectory's events are built in)."""
    return sorted(spans, key=lambda s: (bool(s.parent_id), s.start_ns, s.span_id))


def question_text(spans: Sequence[Span]) -> str | None:
    """The question: `searchtrace.question`, the root's input, or the first user message of the first chat span."""
    given = attribute(spans, QUESTION)
    if given:
        return given
    for s in ordered(spans):
        if not s.parent_id and isinstance(s.attrs.get("input.value"), str) and _json(s.attrs["input.value"]) is None:
            return str(s.attrs["input.value"])
    for s in ordered(spans):
        if _kind(s) == "llm":
            for m in request_of(s)[0] or []:
                if isinstance(m, dict) and m.get("role") == "user":
                    text = _content_text(m.get("content") if "content" in m else m.get("parts"))
                    if text:
                        return text
    return None


def identify(spans: Sequence[Span], questions: dict[str, Question], by_text: dict[str, Question],
             provider: str | None) -> Identity | None:
    """qid and provider from `searchtrace.*` attributes (span, metadata or resource), or the question text matched
    exactly against the question file; None while the spans do not say yet."""
    prov = attribute(spans, PROVIDER) or provider
    qid = attribute(spans, QID)
    text = question_text(spans)
    if qid is None and text is not None and text.strip() in by_text:
        qid = by_text[text.strip()].qid
    if qid is None or prov is None:
        return None
    q = questions.get(qid)
    question = q.question if q else (attribute(spans, QUESTION) or text or "")
    gold = q.answer if q else (attribute(spans, GOLD) or "")
    return Identity(qid=qid, provider=prov, question=question, gold_answer=gold)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or p.get("content") or "") for p in content
                       if isinstance(p, dict) and p.get("type") in ("text", None))
    return ""


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened lists (`llm.input_messages.0.message.role`, …) as one dict per index."""
    rows: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        if not k.startswith(prefix):
            continue
        head, _, rest = k[len(prefix):].partition(".")
        if head.isdigit() and rest:
            rows.setdefault(int(head), {})[rest] = v
    return [rows[i] for i in sorted(rows)]


def _oi_message(flat: dict[str, Any]) -> Message:
    """One flattened OpenInference message as a chat message."""
    m: Message = {"role": str(flat.get("message.role") or "")}
    if "message.content" in flat:
        m["content"] = flat["message.content"]
    else:
        parts = _indexed({k: v for k, v in flat.items()}, "message.contents.")
        if parts:
            m["content"] = "".join(str(p.get("message_content.text") or "") for p in parts)
    calls = _indexed(flat, "message.tool_calls.")
    if calls:
        m["tool_calls"] = [{"id": str(c.get("tool_call.id") or ""), "type": "function",
                            "function": {"name": str(c.get("tool_call.function.name") or ""),
                                         "arguments": str(c.get("tool_call.function.arguments") or "")}}
                           for c in calls]
    if "message.tool_call_id" in flat:
        m["tool_call_id"] = flat["message.tool_call_id"]
    return m


def request_of(s: Span) -> tuple[list[Message] | None, list[dict[str, Any]] | None]:
    """What a chat span's model was sent: the request body (`input.value`, as OpenInference's OpenAI instrumentor
    records it), else the flattened input messages, else `gen_ai.input.messages`; and the tools."""
    a = s.attrs
    body = _json(a.get("input.value"))
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        tools = body.get("tools")
        return body["messages"], tools if isinstance(tools, list) else None
    flat = _indexed(a, "llm.input_messages.")
    tools_flat = [_json(t.get("tool.json_schema")) for t in _indexed(a, "llm.tools.")]
    tools = [t for t in tools_flat if isinstance(t, dict)] or None
    if flat:
        return [_oi_message(m) for m in flat], tools
    gen = _json(a.get("gen_ai.input.messages"))
    if isinstance(gen, list):
        system = _json(a.get("gen_ai.system_instructions"))
        head = [{"role": "system", "parts": system}] if isinstance(system, list) else []
        defs = _json(a.get("gen_ai.tool.definitions"))
        return head + [m for m in gen if isinstance(m, dict)], defs if isinstance(defs, list) else tools
    return None, tools


def _count(value: Any) -> int:
    """A token count as recorded: a non-negative integer within the store's range, else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    n = int(value)
    return n if 0 <= n <= TOKENS_MAX else 0


def model_api(s: Span, raw: bytes | None) -> tuple[str | None, str]:
    """The model a chat span names (the reply's, else the span's response or request model) and the model API (by
    the provider or system the span names: anthropic, Google's gemini; else OpenAI's chat)."""
    a = s.attrs
    named = (model_of("chat", raw) if raw is not None else None) or next(
        (str(a[k]) for k in ("gen_ai.response.model", "llm.model_name", "gen_ai.request.model") if a.get(k)), None)
    system = " ".join(str(a.get(k) or "") for k in ("llm.provider", "llm.system", "gen_ai.system",
                                                     "gen_ai.provider.name")).lower()
    api = "anthropic" if "anthropic" in system else "gemini" if any(w in system for w in ("gemini", "google", "vertex")) \
        else "chat"
    return named, api


def reply_of(s: Span) -> tuple[str | None, list[ToolCall], Usage, str | None, bytes | None]:
    """A chat span's reply: text, tool calls, usage, finish reason, raw body (the response JSON when recorded)."""
    a = s.attrs
    out = a.get("output.value")
    if isinstance(out, str) and out.lstrip().startswith("{") and not json_too_deep(out.encode(), MAX_DEPTH):
        try:
            text, calls, usage, finish = parse_completion(out.encode())
            return text, calls, usage, finish, out.encode()
        except (ValueError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
    # the one usage rule: both conventions count cached and cache-write tokens in the prompt, reasoning in the output
    usage = usage_rule(prompt=_count(a.get("llm.token_count.prompt", a.get("gen_ai.usage.input_tokens"))),
                       output=_count(a.get("llm.token_count.completion", a.get("gen_ai.usage.output_tokens"))),
                       reasoning=_count(a.get("llm.token_count.completion_details.reasoning",
                                              a.get("gen_ai.usage.reasoning_tokens"))),
                       cached=_count(a.get("llm.token_count.prompt_details.cache_read",
                                           a.get("gen_ai.usage.cache_read.input_tokens"))),
                       cache_write=_count(a.get("llm.token_count.prompt_details.cache_write",
                                                a.get("gen_ai.usage.cache_creation.input_tokens"))))
    flat = _indexed(a, "llm.output_messages.")
    if flat:
        m = _oi_message(flat[0])
        calls = [ToolCall(call_id=c["id"] or f"call_{i}", name=c["function"]["name"],
                          arguments=c["function"]["arguments"]) for i, c in enumerate(m.get("tool_calls") or [])]
        content = m.get("content")
        return (content if isinstance(content, str) else None), calls, usage, None, None
    gen = _json(a.get("gen_ai.output.messages"))
    if isinstance(gen, list) and gen and isinstance(gen[0], dict):
        msg = gen[0]
        parts: list[Any] = msg["parts"] if isinstance(msg.get("parts"), list) else []
        text = "".join(str(p.get("content") or "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
        calls = [ToolCall(call_id=str(p.get("id") or f"call_{i}"), name=str(p.get("name") or ""),
                          arguments=p["arguments"] if isinstance(p.get("arguments"), str)
                          else msgspec.json.encode(p.get("arguments") or {}).decode())
                 for i, p in enumerate(parts) if isinstance(p, dict) and p.get("type") == "tool_call"]
        finish = msg.get("finish_reason")
        return text or None, calls, usage, finish if isinstance(finish, str) else None, None
    return None, [], usage, None, None


_PARSERS: dict[str, SearchAdapter] = {}


def _parser(provider: str) -> SearchAdapter | None:
    """The provider's own adapter, used only to parse a reply it would have received (it never sends)."""
    if provider not in SEARCH_PROVIDERS:
        return None
    if provider not in _PARSERS:
        _PARSERS[provider] = build_search(provider, Endpoint(base_url="http://unused.invalid"), key_fallback="unused")
    return _PARSERS[provider]


def search_hits(text: str, provider: str) -> tuple[list[SearchHit], str | None]:
    """The results a search tool returned, or why its output is not search results."""
    data = text.encode()
    if json_too_deep(data, MAX_DEPTH):
        return [], f"tool output nests deeper than {MAX_DEPTH} levels"
    parser = _parser(provider)
    if parser is not None and text.lstrip().startswith("{"):
        try:
            hits = parser.parse_hits(data)
            if hits:
                return hits, None
        except (ValueError, KeyError, TypeError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
    try:
        docs = read_results(text, plain_text=False)
    except (RecursionError, ValueError, KeyError, TypeError):
        docs = []
    if docs:
        return [SearchHit(rank=d.rank, title=d.title, url=d.url, domain=d.domain or url_domain(d.url),
                          snippet=d.snippet, metadata={}) for d in docs], None
    doc = _json(text)
    if doc == [] or (isinstance(doc, dict) and any(isinstance(v, list) and not v for v in doc.values())):
        return [], None  # an empty result list
    return [], "tool output is not search results (a JSON list, or an object with one list, of items with a URL " \
               "and a title or text)"


def _arguments(s: Span) -> tuple[dict[str, Any], str]:
    raw = s.attrs.get("gen_ai.tool.call.arguments", s.attrs.get("input.value"))
    text = raw if isinstance(raw, str) else msgspec.json.encode(raw).decode() if raw is not None else ""
    parsed = _json(raw)
    return (parsed if isinstance(parsed, dict) else {}), text


def _result(s: Span) -> str | None:
    raw = s.attrs.get("gen_ai.tool.call.result", s.attrs.get("output.value"))
    if raw is None:
        return None
    return raw if isinstance(raw, str) else msgspec.json.encode(raw).decode()


def _page(result: str) -> str | None:
    """A fetch tool's page: a Reader reply (its markdown, as the proxy records it), else `read_page`'s reading."""
    if json_too_deep(result.encode(), MAX_DEPTH):
        return None
    try:
        return page_markdown(result.encode(), "")
    except (ValueError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return read_page(result)


def _tool_name(s: Span) -> str:
    return str(s.attrs.get("tool.name") or s.attrs.get("gen_ai.tool.name") or s.name)


def _ms(s: Span) -> float:
    return max(s.end_ns - s.start_ns, 0) / 1e6 if s.end_ns and s.start_ns else 0.0


class Trace:
    """One trace being recorded as one trajectory: its builder, the spans already mapped; holds state, so a class."""

    def __init__(self, run_id: str, trace_id: str, ident: Identity, tools: ToolNames,
                 builder: Builder | None = None) -> None:
        self.run_id, self.trace_id, self.ident, self.tools = run_id, trace_id, ident, tools
        self.tid = trajectory_id(run_id, ident.provider, ident.qid)
        self.stream = trajectory_stream(self.tid)
        self.seen: set[str] = set()
        self.root: Span | None = None
        if builder is None:
            self.b = Builder(self.tid)
            self.b.start(qid=ident.qid, provider=ident.provider, question=ident.question,
                         gold_answer=ident.gold_answer)
            self.pending: list[tuple[uuid.UUID, Any]] = [(self.start_id(), None)]
        else:
            self.b, self.pending = builder, []

    def start_id(self) -> uuid.UUID:
        return start_event_id(self.run_id, self.trace_id)

    def _ids(self, *key: str) -> list[tuple[uuid.UUID, Any]]:
        n = len(self.b.payloads) - len(self.pending)
        return [(i, None) for i in event_ids("otel", self.run_id, self.trace_id, *key, n=n)]

    def feed(self, s: Span) -> None:
        """Map one span (a span id seen before is skipped: a re-sent export)."""
        if s.span_id in self.seen or self.b.finished:
            return
        self.seen.add(s.span_id)
        if not s.parent_id:
            self.root = s  # the agent's span: it ends the trajectory (mapped too when it is a chat or tool span)
        kind = _kind(s)
        if kind == "llm":
            self._model(s)
        elif kind == "tool":
            self._tool(s)
        self.pending += self._ids(s.span_id)

    def _model(self, s: Span) -> None:
        if s.status == 2:
            model = str(s.attrs.get("llm.model_name") or s.attrs.get("gen_ai.request.model") or "chat")
            self.b.failed(what=f"chat:{model}", status="http_error", error=s.status_message[:500] or "span status ERROR")
            return
        messages, tools = request_of(s)
        text, calls, usage, finish, raw = reply_of(s)
        answered, api = model_api(s, raw)
        self.b.model(text=text, tool_calls=calls, usage=usage, latency_ms=_ms(s), provider_ms=_ms(s), queue_ms=0.0,
                     finish_reason=finish, raw=raw,
                     messages=messages, tools=tools if messages is not None else None, model=answered, api=api)

    def _tool(self, s: Span) -> None:
        name = _tool_name(s)
        args, arg_text = _arguments(s)
        result = _result(s)
        if name in self.tools.search:
            q = args.get("query", args.get("q"))
            if not isinstance(q, str):
                q = next((v for v in args.values() if isinstance(v, str)), arg_text)
            status: Any = "ok"
            error = None
            hits: list[SearchHit] = []
            if s.status == 2:
                status, error = "http_error", s.status_message[:500] or "span status ERROR"
            elif result is None:
                status, error = "bad_response", "no tool output (output.value / gen_ai.tool.call.result)"
            else:
                hits, error = search_hits(result, self.ident.provider)
                status = "bad_response" if error else "ok"
            self.b.search(query=q, provider=self.ident.provider, status=status, hits=hits, latency_ms=_ms(s),
                          provider_ms=_ms(s), queue_ms=0.0,
                          raw=result.encode() if result is not None else None, error=error)
        elif name in self.tools.fetch:
            target = next((args[k] for k in ("url", "doc_id", "id", "link") if isinstance(args.get(k), str)), arg_text)
            doc = self.b.docs.get(target)
            url = doc.url if doc is not None else target
            page = _page(result) if result is not None and s.status != 2 else None
            self.b.fetch(url=url, status="ok" if page is not None else "http_error", content=page,
                         n_tokens=estimate_tokens(page) if page else 0, latency_ms=_ms(s),
                         doc_id=doc.doc_id if doc is not None else msgspec.UNSET, provider_ms=_ms(s), queue_ms=0.0,
                         error=None if page is not None else (s.status_message[:500] or "no page in the tool output"))

    def finish(self, *, abandoned: bool = False) -> None:
        """answer.final (when there is an answer) and trajectory.finished."""
        if self.b.finished:
            return
        root = self.root
        final = None
        given = root.attrs.get(FINAL) if root else None
        out = root.attrs.get("output.value") if root else None
        if isinstance(given, str):
            final = given
        elif isinstance(out, str) and out.strip() and _json(out) is None:
            final = final_answer(out) or out.strip()
        elif self.b.last_reply is not None:
            final = final_answer(self.b.last_reply[1])
        said = root.attrs.get("searchtrace.reason") if root else None  # what an export of ours recorded
        if said in ("limit", "abandoned") and final is None:
            self.b.finish(said, error=str(root.attrs.get("searchtrace.error") or "") or None if root else None)
        elif root is not None and root.status == 2:
            self.b.finish("error", error=root.status_message[:500] or "root span status ERROR")
        elif final is not None:
            self.b.final(final)
            self.b.finish("answered")
        else:
            self.b.finish("abandoned" if abandoned else "max_iterations")
        self.pending += self._ids("end")

    def take(self) -> tuple[list[Any], list[bytes]]:
        """(event_id, payload) pairs and blobs built since the last take."""
        payloads, blobs = self.b.take()
        ids, self.pending = self.pending, []
        assert len(ids) == len(payloads)
        return [(i, p) for (i, _), p in zip(ids, payloads, strict=True)], blobs


def start_event_id(run_id: str, trace_id: str) -> uuid.UUID:
    return event_id("otel", run_id, trace_id, "start")


def check_spans(requests: Iterable[tuple[str, list[Span]]]) -> Iterator[tuple[str, Span]]:
    """(where, span) of every span, exact repeats dropped; a span id repeated with other content is refused. Each
    span has every configured key replaced by `***` (docs/concepts/security.md), before anything is read from it."""
    seen: dict[tuple[str, str], Span] = {}
    secrets = configured_secrets()
    for at, spans in requests:
        spans = scrub_parsed(spans, secrets)
        for s in spans:
            key = (s.trace_id, s.span_id)
            if key in seen:
                if seen[key] != s:
                    raise BadInput(f"{at}: span {s.span_id} of trace {s.trace_id} appears twice with other content")
                continue
            seen[key] = s
            yield at, s


# -- import --------------------------------------------------------------------------------------------------------


@dataclass
class OtelImport:
    trajectories: int = 0  # traces that became trajectories (new or already stored)
    skipped: int = 0  # traces with neither a chat nor a tool span
    events_written: int = 0
    # what an export of ours carried besides the trajectories: judgment lines (docs/reference/interchange.md) from `searchtrace.verdict`
    # span events, and (provider, qid, semantic_match) from the root's `searchtrace.semantic_match`
    judgments: list[dict[str, Any]] = field(default_factory=list)
    audits: list[tuple[str, str, bool]] = field(default_factory=list)
    # each trajectory's (events, blobs), mapped and not written yet (`map_spans`)
    pending: list[tuple[list[Any], list[bytes]]] = field(default_factory=list)


def question_index(questions: Sequence[Question]) -> tuple[dict[str, Question], dict[str, Question]]:
    """Questions by qid and by their exact text (stripped)."""
    return {q.qid: q for q in questions}, {q.question.strip(): q for q in questions}


def stored_starts(log: Any) -> dict[str, str]:
    """trajectory id -> the event id of its stored trajectory.started (one query for the whole import)."""
    if log.head == 0:
        return {}
    cur = log.cursor()
    try:
        rows = cur.execute("SELECT payload->>'$.trajectory_id', CAST(event_id AS VARCHAR) FROM events "
                           "WHERE type = 'trajectory.started'").fetchall()
    finally:
        cur.close()
    return {str(t): str(e) for t, e in rows}


def question_event(ident: Identity) -> Any:
    """The dataset.question of an imported trajectory (the trace importer's stream and id, so both agree)."""
    from searchtrace.replay.interchange._common import DATASET_STREAM, RUN_ID
    from searchtrace.store import DatasetQuestion, NewEvent

    return NewEvent(stream_id=DATASET_STREAM, run_id=RUN_ID,
                    payload=DatasetQuestion(qid=ident.qid, question=ident.question, gold_answer=ident.gold_answer),
                    event_id=event_id("import", "question", ident.qid, ident.question, ident.gold_answer))


def import_spans(log: Any, requests: Iterable[tuple[str, list[Span]]], *, run_id: str,
                 questions: Sequence[Question] = (), provider: str | None = None,
                 tools: ToolNames | None = None) -> OtelImport:
    """Every trace of the requests as a trajectory, validated whole before anything is written."""
    res = map_spans(log, requests, run_id=run_id, questions=questions, provider=provider, tools=tools)
    res.events_written += append_chunked(log, res.pending)
    res.pending = []
    return res


def map_spans(log: Any, requests: Iterable[tuple[str, list[Span]]], *, run_id: str,
              questions: Sequence[Question] = (), provider: str | None = None,
              tools: ToolNames | None = None) -> OtelImport:
    """Every trace of the requests mapped to a trajectory and checked against the store, into `pending`; nothing
    is written (the caller validates what the traces carry first)."""
    from searchtrace.store import NewEvent

    tools = tools or ToolNames()
    by_qid, by_text = question_index(questions)
    traces: dict[str, list[Span]] = {}
    where: dict[str, str] = {}
    for at, s in check_spans(requests):
        traces.setdefault(s.trace_id, []).append(s)
        where.setdefault(s.trace_id, at)
    res = OtelImport()
    starts = stored_starts(log)
    cells: dict[str, str] = {}
    for trace_id, spans in traces.items():
        if not any(_kind(s) for s in spans):
            res.skipped += 1
            continue
        ident = identify(ordered(spans), by_qid, by_text, provider)
        if ident is None:
            raise BadInput(f"{where[trace_id]}: trace {trace_id}: no qid or provider: set the span or resource "
                           f"attributes {QID} and {PROVIDER}, or give --questions (exact question text) and --provider")
        t = Trace(run_id, trace_id, ident, tools)
        if t.tid in cells:
            raise BadInput(f"{where[trace_id]}: traces {cells[t.tid]} and {trace_id} are both provider "
                           f"{shown(ident.provider)}, qid {shown(ident.qid)} in run {shown(run_id)} (one trace is one trajectory)")
        cells[t.tid] = trace_id
        have = starts.get(t.tid)
        if have is not None and have != str(t.start_id()):
            raise BadInput(f"{where[trace_id]}: trace {trace_id}: trajectory {shown(t.tid)} is already in the database, "
                           "recorded from something else; choose another --run-id")
        for s in ordered(spans):
            t.feed(s)
        t.finish()
        pairs, blobs = t.take()
        events = [question_event(ident)] + [NewEvent(stream_id=t.stream, run_id=run_id, payload=p, event_id=i)
                                            for i, p in pairs]
        res.pending.append((events, blobs))
        res.trajectories += 1
        _carried(t, spans, res)
    return res


# -- collect: spans as they arrive -------------------------------------------------------------------------------

MAX_HELD_SPANS = 10_000  # spans held for traces that have not named their question yet (all traces together)
MAX_HELD_BYTES = 64 << 20  # and their bytes (as OTLP JSON): many large unnamed traces cannot fill memory


def _records(s: Span, tools: ToolNames) -> bool:
    """Whether the span maps to events of its own: a chat span, or a search or fetch tool span (others are structure)."""
    kind = _kind(s)
    return kind == "llm" or (kind == "tool" and _tool_name(s) in tools.search | tools.fetch)


def _span_bytes(s: Span) -> int:
    """What a held span costs, counted as its OTLP JSON bytes (attributes, events and resource)."""
    return len(msgspec.json.encode(s))


class Collector:
    """The traces of one collected run as spans arrive: a trace's spans are held until one of them (or the question
    text) names its qid and provider, then mapped in start order; its root span ends it. Holds state, so a class.

    Idempotent by span id across restarts: the first event of every span that maps to events has an id derived from
    (run, trace id, span id), so a span whose event the store (or this process) holds is a repeat and adds
    nothing, and a trace the store holds continues from its stored events (docs/reliability.md "collect")."""

    def __init__(self, run_id: str, questions: Sequence[Question], *, provider: str | None = None,
                 tools: ToolNames | None = None, max_held_bytes: int = MAX_HELD_BYTES) -> None:
        self.run_id, self.provider, self.tools = run_id, provider, tools or ToolNames()
        self.max_held_bytes = max_held_bytes
        self.by_qid, self.by_text = question_index(questions)
        self.spans = 0  # accepted
        self.rejected = 0  # refused with a partial-success message (all requests together)
        self.dropped = 0
        self.held: dict[str, list[Span]] = {}  # trace id -> its spans, until they name its question
        self.held_size: dict[str, int] = {}  # trace id -> the bytes of its held spans
        self.n_held = 0
        self.held_bytes = 0
        self.refused: dict[str, str] = {}  # trace id -> why its later spans are refused (the trace is closed)
        self._clear()

    def _clear(self) -> None:
        """Forget what the store decides (restore reads it again); held and refused traces are not in the store."""
        self.open: dict[str, Trace] = {}  # trace id -> its open trajectory
        self.closed: set[str] = set(self.refused)  # trace ids whose trajectory finished, or that were refused
        self.cells: dict[str, str] = {}  # trajectory id -> the trace id recording it
        self.recorded: set[int] = set()  # ids of this run's trajectory events, stored or handed out since
        self.starts: dict[int, str] = {}  # start event id -> trajectory id, of those stored before this process
        self.stored_tids: set[str] = set()  # ... those trajectory ids
        self.finished: set[str] = set()  # ... of which these were finished
        self.stored: dict[str, list[Any]] = {}  # trajectory id -> its stored payloads, of the unfinished ones

    def restore(self, log: Any) -> None:
        """What the store holds of this run, so a restarted `collect` continues its traces without duplicates; after
        a failed append too, so the exporter's retry of that request is recorded, not taken for a repeat."""
        from searchtrace.store import decode_payload

        self._clear()
        cur = log.cursor()
        try:
            rows = cur.execute("SELECT stream_id, event_id, type FROM events WHERE run_id = ? "
                               "AND stream_id LIKE 'traj:%' ORDER BY position", [self.run_id]).fetchall()
            for stream_id, eid, kind in rows:
                self.recorded.add(eid.int)
                tid = stream_id.removeprefix("traj:")
                if kind == "trajectory.started":
                    self.starts.setdefault(eid.int, tid)
                    self.stored_tids.add(tid)
                elif kind == "trajectory.finished":
                    self.finished.add(tid)
            open_streams = sorted("traj:" + t for t in self.stored_tids - self.finished)
            if open_streams:
                for stream_id, payload in cur.execute(
                        "SELECT stream_id, payload FROM events WHERE run_id = ? AND stream_id IN "
                        "(SELECT unnest(?::VARCHAR[])) ORDER BY position", [self.run_id, open_streams]).fetchall():
                    self.stored.setdefault(stream_id.removeprefix("traj:"), []).append(decode_payload(payload))
        finally:
            cur.close()

    def _first(self, s: Span) -> int:
        return event_id("otel", self.run_id, s.trace_id, s.span_id, "0").int

    def add(self, spans: Sequence[Span]) -> tuple[list[Any], list[bytes], int, str]:
        """Map the spans of one request: (events, blobs, spans rejected, why)."""
        from searchtrace.store import NewEvent

        events: list[Any] = []
        blobs: list[bytes] = []
        rejected, why = 0, ""
        by_trace: dict[str, list[Span]] = {}
        for _, s in check_spans([("request", list(spans))]):  # a repeat with other content: the request is refused
            if self._first(s) not in self.recorded:  # else committed before (an exporter's retry): a repeat
                by_trace.setdefault(s.trace_id, []).append(s)
        for trace_id, group in by_trace.items():
            t = self.open.get(trace_id)
            if t is None and trace_id not in self.closed:
                t = self._stored(trace_id)
            if t is None and trace_id not in self.closed:
                t, group, n, problem = self._hold(trace_id, group)
                rejected, why = rejected + n, problem or why
                if t is None:
                    continue
            if trace_id in self.closed:
                late = [s for s in group if s.parent_id and _records(s, self.tools)]
                if late:  # spans of a trace that has ended (or was refused): told, never silently dropped
                    rejected += len(late)
                    why = self.refused.get(trace_id) or (
                        f"trace {trace_id} has ended (its root span was recorded); {len(late)} later span(s) that "
                        "would add to it are not recorded")
                continue
            assert t is not None
            for s in ordered(group):
                t.feed(s)
            if t.root is not None:
                t.finish()
                self.closed.add(trace_id)
                self.open.pop(trace_id, None)
            pairs, bl = t.take()
            events += [NewEvent(stream_id=t.stream, run_id=self.run_id, payload=p, event_id=i) for i, p in pairs]
            blobs += bl
            self.spans += len(group)
        self.recorded.update(e.event_id.int for e in events)
        self.rejected += rejected
        return events, blobs, rejected, why

    def _stored(self, trace_id: str) -> Trace | None:
        """The trace's trajectory when the store holds it from before this process: continued (or closed)."""
        tid = self.starts.get(start_event_id(self.run_id, trace_id).int)
        if tid is None:
            return None
        self.cells[tid] = trace_id
        if tid in self.finished:
            self.closed.add(trace_id)
            return None
        payloads = self.stored.pop(tid)
        first = payloads[0]
        ident = Identity(qid=first.qid, provider=first.provider, question=first.question,
                         gold_answer=first.gold_answer)
        t = self.open[trace_id] = Trace(self.run_id, trace_id, ident, self.tools, builder=Builder.resume(payloads))
        return t

    def _refuse(self, trace_id: str, why: str) -> None:
        """Refuse the trace whole: its held spans are let go (counted as dropped), later ones are refused with `why`."""
        held = self.held.pop(trace_id, [])
        self.n_held -= len(held)
        self.held_bytes -= self.held_size.pop(trace_id, 0)
        self.dropped += len(held)
        self.closed.add(trace_id)
        self.refused[trace_id] = why

    def _hold(self, trace_id: str, group: list[Span]) -> tuple[Trace | None, list[Span], int, str]:
        """Hold a new trace's spans until they name its question: (its trajectory once they do, the spans to map,
        spans rejected, why)."""
        held = self.held.get(trace_id, []) + group
        ident = identify(ordered(held), self.by_qid, self.by_text, self.provider) if any(
            _kind(s) or not s.parent_id for s in held) else None
        if ident is None:
            if any(not s.parent_id for s in held):  # the trace is over and never said which question
                why = (f"trace {trace_id} names no {QID} / {PROVIDER} and no question of the file; its spans are "
                       "not recorded")
                n = len(group) if any(_kind(s) for s in held) else 0
                self._refuse(trace_id, why)  # the spans held before were acknowledged: counted as dropped
                return None, [], n, why if n else ""
            size = sum(_span_bytes(s) for s in group)  # counted only for spans that stay held
            if self.n_held + len(group) > MAX_HELD_SPANS or self.held_bytes + size > self.max_held_bytes:
                why = (f"trace {trace_id} has not named its {QID} / {PROVIDER} (nor a known question) and the spans "
                       f"held for such traces would pass {MAX_HELD_SPANS} spans or {self.max_held_bytes} bytes; the "
                       "trace is refused")
                self._refuse(trace_id, why)
                return None, [], len(group), why
            self.held[trace_id] = held
            self.n_held += len(group)
            self.held_bytes += size
            self.held_size[trace_id] = self.held_size.get(trace_id, 0) + size
            return None, [], 0, ""
        self.n_held -= len(self.held.pop(trace_id, []))
        self.held_bytes -= self.held_size.pop(trace_id, 0)
        t, problem = self._begin(trace_id, ident)
        if t is None:
            self.closed.add(trace_id)
            self.refused[trace_id] = problem
            return None, [], len(held), problem
        return t, held, 0, ""

    def _begin(self, trace_id: str, ident: Identity) -> tuple[Trace | None, str]:
        tid = trajectory_id(self.run_id, ident.provider, ident.qid)
        if ident.qid not in self.by_qid:
            return None, f"trace {trace_id}: qid {ident.qid!r} is not in the question file"
        other = self.cells.get(tid)
        if other is not None and other != trace_id:
            return None, f"trace {trace_id}: provider {ident.provider!r}, qid {ident.qid!r} is recorded by trace {other}"
        if tid in self.stored_tids:
            return None, f"trace {trace_id}: trajectory {tid!r} is already in the database from another trace"
        t = Trace(self.run_id, trace_id, ident, self.tools)
        self.cells[tid] = trace_id
        self.open[trace_id] = t
        return t, ""

    def abandon_open(self) -> tuple[list[Any], list[bytes], int]:
        """Finish every open trajectory (collect is stopping): answered when a reply says FINAL ANSWER, else
        `abandoned`; (events, blobs, how many)."""
        from searchtrace.store import NewEvent

        events: list[Any] = []
        blobs: list[bytes] = []
        n = 0
        for t in list(self.open.values()):
            t.finish(abandoned=True)
            n += 1
            pairs, bl = t.take()
            events += [NewEvent(stream_id=t.stream, run_id=self.run_id, payload=p, event_id=i) for i, p in pairs]
            blobs += bl
        self.open.clear()
        self.dropped += self.n_held  # spans of traces that never named their question: acknowledged, not recorded
        self.held.clear()
        self.held_size.clear()
        self.n_held = self.held_bytes = 0
        return events, blobs, n


def _carried(t: Trace, spans: Sequence[Span], res: OtelImport) -> None:
    """The verdicts and the answer audit an exported trace carries (each item once per judge run)."""
    seen: set[tuple[str, str]] = set()
    for s in ordered(spans):
        for e in s.events:
            a = e.attrs
            if e.name != "searchtrace.verdict" or not isinstance(a.get("searchtrace.url"), str):
                continue
            run = str(a.get("searchtrace.judge_run_id") or "")
            key = (run, str(a.get("searchtrace.url_normalized") or a["searchtrace.url"]))
            if not run or key in seen:
                continue
            seen.add(key)
            labels = _json(a.get("searchtrace.labels"))
            res.judgments.append({"judge_run_id": run, "trajectory_id": t.tid, "url": a["searchtrace.url"],
                                  "valid": bool(a.get("searchtrace.valid")) and isinstance(labels, dict),
                                  "labels": labels if isinstance(labels, dict) else None,
                                  "invalid_reason": a.get("searchtrace.invalid_reason")})
    match = t.root.attrs.get("searchtrace.semantic_match") if t.root else None
    if isinstance(match, bool):
        res.audits.append((t.ident.provider, t.ident.qid, match))
