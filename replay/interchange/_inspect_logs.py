"""Inspect AI eval logs -> docs/reference/interchange.md trace lines, so `import --from inspect` shares the traces importer's strictness.

A sample whose transcript calls a web-search tool becomes one trajectory: question = the sample input, gold = the
target, final answer = the completion (after `FINAL ANSWER:` when it has that prefix), one model step and turn per
model event (text, tool calls, usage, stop reason, working time, the messages and tools sent), one search step per
call of the searching tool (results read from the tool's reply in any provider's shape or as <document> blocks),
one fetch step per call of the fetching tool; each scorer's value an answer verdict (`inspect:<scorer>`), a limit or
error stop the reason `limit` / `error`. Which tools
search and fetch is read from the tool definitions the model was given (adapters/_toolset.py, `pick`). The provider
is `--provider`, else the task's `provider` argument or the sample's `provider` metadata. What cannot be mapped is
named (file, sample, event) and nothing of that file is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.adapters import (
    HostedTurn,
    Tools,
    content_text,
    domain_of,
    estimate_tokens,
    normalize_url,
    pick,
    read_page,
    read_results,
)
from searchtrace.engine import epochs_problem, final_answer, trajectory_id
from searchtrace.replay.interchange._formats import (
    Answer,
    Cited,
    FetchStep,
    ModelStep,
    Result,
    SearchStep,
    Step,
    StepUsage,
    TraceLine,
    Turn,
    TurnCall,
    TurnUsage,
)
from searchtrace.replay.interchange._inspect_hosted import hosted_turn
from searchtrace.store import BadInput, TrajectoryReason, one_line, shown, usage_rule

LOG_SUFFIXES = (".eval", ".json")
# docs/concepts/security.md: what one member of a zipped log, and all of them, may inflate to (a sample's JSON; the whole log)
MAX_MEMBER_BYTES = 128 << 20
MAX_INFLATED_BYTES = 1 << 30


def log_files(paths: Sequence[Path]) -> list[Path]:
    """The logs named, a folder standing for every `.eval` / `.json` log in it (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.suffix in LOG_SUFFIXES and f.is_file())
            if not found:
                raise BadInput(f"{p}: no Inspect logs (*.eval, *.json) in this folder")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise BadInput(f"{p}: no such file or folder")
    return out


def read_log(path: Path) -> dict[str, Any]:
    """The whole log as plain JSON data, read with inspect-ai's own reader (the `.eval` format is zstd-zipped)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise BadInput(f"{path}: reading Inspect logs needs the inspect-ai package (pip install inspect-ai)") from None
    check_zip_members(path)
    try:
        log = read_eval_log(str(path), resolve_attachments=True)  # the texts Inspect stored once, in place
    except Exception as exc:  # inspect raises many kinds for a file that is not one of its logs
        raise BadInput(f"{path}: not an Inspect AI log ({type(exc).__name__}: {one_line(str(exc), 160)})") from None
    data: dict[str, Any] = log.model_dump(mode="json")
    return data


def check_zip_members(path: Path, *, member_cap: int = MAX_MEMBER_BYTES, total_cap: int = MAX_INFLATED_BYTES) -> None:
    """Refuse a zipped log (`.eval`) whose members inflate beyond the caps, found by inflating each member in
    1 MiB pieces (never whole), so a small member that inflates to gigabytes costs 1 MiB, not the gigabytes."""
    import zipfile

    from inspect_ai._util import zipfile as _zstd  # noqa: F401  (registers the zstd method zipfile needs)

    if not zipfile.is_zipfile(path):
        return
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                size = 0
                with zf.open(info) as member:
                    while chunk := member.read(1 << 20):
                        size += len(chunk)
                        total += len(chunk)
                        if size > member_cap:
                            raise BadInput(f"{path}: member {shown(info.filename)} inflates beyond {member_cap >> 20} MiB; "
                                           "not an Inspect log this reader takes")
                        if total > total_cap:
                            raise BadInput(f"{path}: the members inflate beyond {total_cap >> 20} MiB in all; "
                                           "not an Inspect log this reader takes")
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, ValueError) as exc:
        raise BadInput(f"{path}: not an Inspect AI log ({type(exc).__name__}: {one_line(str(exc), 160)})") from None


class _Sample:
    """One sample being mapped; `where(event)` names it in an error."""

    def __init__(self, path: Path, sample: dict[str, Any]) -> None:
        self.path, self.sample = path, sample
        self.id = str(sample.get("id"))
        epoch = sample.get("epoch") or 1
        if (problem := epochs_problem(epoch)) is not None:
            raise BadInput(f"{path}: sample {self.id}: epoch: {problem}")
        self.epoch: int = epoch

    def fail(self, what: str, event: int | None = None) -> BadInput:
        at = f", event {event}" if event is not None else ""
        return BadInput(f"{self.path}: sample {self.id} (epoch {self.epoch}){at}: {what}")


def _question(s: _Sample) -> str:
    value = s.sample.get("input")
    if isinstance(value, list):
        value = "\n".join(content_text(m.get("content")) for m in value if isinstance(m, dict) and m.get("role") == "user")
    if not isinstance(value, str) or not value.strip():
        raise s.fail("input: no question text")
    return value


def _gold(s: _Sample) -> str:
    target = s.sample.get("target")
    if isinstance(target, list) and all(isinstance(t, str) for t in target) and target:
        return "; ".join(target)
    if isinstance(target, str):
        return target
    raise s.fail(f"target: {shown(target)} is not a gold answer (a string or a list of strings)")


def _tools(events: list[dict[str, Any]]) -> Tools | None:
    """The searching / fetching tools among those the model was given (None: no searching tool)."""
    for e in events:
        if e.get("event") == "model" and e.get("tools"):
            t = pick(e["tools"])
            names = {str(x.get("name")) for x in e["tools"] if isinstance(x, dict)}
            return t if t.search in names else None
    return None


def _usage(output: dict[str, Any]) -> TurnUsage:
    """Inspect's ModelUsage under the one usage rule: Inspect reports cache reads and writes beside `input_tokens`
    (for every provider), so they are summed in; its `output_tokens` already hold the reasoning."""
    u = output.get("usage") or {}
    rule = usage_rule(prompt=int(u.get("input_tokens") or 0), output=int(u.get("output_tokens") or 0),
                      reasoning=int(u.get("reasoning_tokens") or 0), cached=int(u.get("input_tokens_cache_read") or 0),
                      cache_write=int(u.get("input_tokens_cache_write") or 0), cache_apart=True)
    return TurnUsage(input_tokens=rule.input_tokens, output_tokens=rule.output_tokens,
                     reasoning_tokens=rule.reasoning_tokens, cached_tokens=rule.cached_tokens)


def _turn(e: dict[str, Any], iteration: int, before: list[Any]) -> Turn:
    """One model event in full: the reply's text, tool calls (arguments as JSON text), usage and stop reason, and
    the messages and tools it was sent (Inspect's own message objects), sharing a prefix with `before`."""
    output = e.get("output") or {}
    choice = next(iter(output.get("choices") or []), None) or {}
    message = choice.get("message") or {}
    calls = [TurnCall(str(c.get("id") or ""), str(c.get("function") or ""),
                      c["arguments"] if isinstance(c.get("arguments"), str)
                      else msgspec.json.encode(c.get("arguments") or {}).decode())
             for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    sent = e.get("input") if isinstance(e.get("input"), list) else None
    kept = 0
    if sent is not None:
        while kept < len(sent) and kept < len(before) and sent[kept] == before[kept]:
            kept += 1
    took = output.get("time")
    model, api = _model_api(e, output)
    return Turn(iteration=iteration, text=content_text(message.get("content")) or None, tool_calls=calls,
                usage=_usage(output), finish_reason=choice.get("stop_reason"), latency_ms=_ms(e),
                provider_ms=float(took) * 1000 if isinstance(took, int | float) and took >= 0 else msgspec.UNSET,
                kept=kept, messages=sent[kept:] if sent is not None else msgspec.UNSET,
                tools=e.get("tools") or None if sent is not None else None, model=model, api=api)


_INSPECT_APIS = {"anthropic": "anthropic", "google": "gemini"}  # Inspect's provider prefix -> the model API


def _model_api(e: dict[str, Any], output: dict[str, Any]) -> tuple[str | msgspec.UnsetType, str]:
    """The model that answered (the reply's name, else the event's without its provider prefix) and the API it was
    asked over (by the provider prefix; an OpenAI request with `input` is the Responses API, else chat)."""
    named = str(e.get("model") or "")
    prefix, _, bare = named.partition("/")
    model = output.get("model") if isinstance(output.get("model"), str) and output.get("model") else bare or named
    call: dict[str, Any] = e["call"] if isinstance(e.get("call"), dict) else {}
    request: dict[str, Any] = call["request"] if isinstance(call.get("request"), dict) else {}
    api = _INSPECT_APIS.get(prefix) or ("responses" if "input" in request else "chat")
    return (str(model) if model else msgspec.UNSET), api


# Inspect's score values read as a match of the final answer (its value_to_float: CORRECT, INCORRECT, NOANSWER);
# a partial or non-scalar value is no yes/no verdict and is left out
_VALUES: dict[Any, bool] = {"C": True, "I": False, "N": False}


def _answers(sample: dict[str, Any]) -> list[Answer]:
    """Each scorer's value as a verdict on the final answer (`audit.answer` with source `inspect:<scorer>`)."""
    out: list[Answer] = []
    for name, score in (sample.get("scores") or {}).items():
        value = score.get("value") if isinstance(score, dict) else None
        if isinstance(value, str):
            match = _VALUES.get(value.upper()) if value.upper() in _VALUES else {"true": True, "false": False}.get(
                value.lower())
        elif isinstance(value, bool | int | float) and value in (0, 1):
            match = bool(value)
        else:
            match = None
        if match is not None:
            out.append(Answer(source=f"inspect:{name}", semantic_match=match))
    return out


def _stop(sample: dict[str, Any], final: str | None) -> tuple[TrajectoryReason, str | None]:
    """Why the sample stopped: a limit (which, in the error line), an error, an answer, or none of these."""
    limit = sample.get("limit")
    if isinstance(limit, dict) and limit.get("type"):
        value = limit.get("limit")
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        return "limit", one_line(f"{limit.get('type')} limit {shown}", 160)
    error = sample.get("error")
    if error:
        return "error", one_line(str(error.get("message") if isinstance(error, dict) else error), 500)
    return ("answered" if final is not None else "max_iterations"), None


def _ms(event: dict[str, Any]) -> float:
    return float(event.get("working_time") or 0.0) * 1000


def hosted_layer(turns: Sequence[HostedTurn | None]) -> str | None:
    """The hosted layer a sample's model searched with (Claude's is `anthropic_web_fetch` once any turn fetched)."""
    layers = [t.layer for t in turns if t is not None and not t.empty]
    return "anthropic_web_fetch" if "anthropic_web_fetch" in layers else next(iter(layers), None)


def sample_hosted(sample: dict[str, Any]) -> list[HostedTurn | None]:
    """The hosted search of each model event of the sample, in order (None: none)."""
    return [hosted_turn(e) for e in sample.get("events") or [] if isinstance(e, dict) and e.get("event") == "model"]


def sample_trace(path: Path, sample: dict[str, Any], *, provider: str, run_id: str) -> TraceLine | None:
    """One sample as a trace line; None when it never calls a searching tool nor searches inside the model API."""
    s = _Sample(path, sample)
    events = [e for e in sample.get("events") or [] if isinstance(e, dict)]
    tools = _tools(events)
    per_call = sample_hosted(sample)
    hosted = iter(per_call)
    searched = tools is not None and any(e.get("event") == "tool" and e.get("function") == tools.search
                                         for e in events)
    if not searched and hosted_layer(per_call) is None:
        return None
    steps: list[Step] = []
    citations: list[Cited] = []
    turns: list[Turn] = []
    sent: list[Any] = []  # the previous model event's input messages
    docs: dict[str, str] = {}  # url_normalized and doc_id -> doc_id of the first appearance
    urls: dict[str, str] = {}  # doc_id -> url
    iteration = 0
    n_docs = 0
    for i, e in enumerate(events):
        kind = e.get("event")
        if kind == "model":
            iteration += 1
            turn = _turn(e, iteration, sent)
            sent = e["input"] if isinstance(e.get("input"), list) else []
            turns.append(turn)
            u = turn.usage
            steps.append(ModelStep(iteration=iteration, latency_ms=turn.latency_ms, usage=StepUsage(
                input_tokens=u.input_tokens, output_tokens=u.output_tokens, reasoning_tokens=u.reasoning_tokens)))
            got = next(hosted, None)
            if got is not None:  # docs/how-to/hosted.md: the search the model API ran inside this call
                n_docs = _hosted_steps(got, iteration, f"{e.get('uuid') or i}", steps, docs, urls, n_docs)
                citations = [Cited(url=c.url, title=c.title, cited_text=c.cited_text, start=c.start, end=c.end)
                             for c in got.citations if c.url]
            continue
        if tools is None or kind != "tool" or e.get("function") not in (tools.search, tools.fetch):
            continue
        args: dict[str, Any] = e["arguments"] if isinstance(e.get("arguments"), dict) else {}
        call_id = str(e.get("id") or f"tool-{i}")
        result = content_text(e.get("result"))
        if e.get("function") == tools.search:
            query = args.get(tools.search_arg)
            if not isinstance(query, str):
                raise s.fail(f"{tools.search} call has no string argument {shown(tools.search_arg)}", i)
            results: list[Result] = []
            if e.get("error") is None:
                found = read_results(result, plain_text=False)
                if not found and not _empty_results(result):
                    raise s.fail(f"{tools.search} reply is neither search results nor an empty result list", i)
                for rank, d in enumerate(found, start=1):
                    n_docs += 1
                    doc_id = f"d{n_docs}"
                    docs.setdefault(normalize_url(d.url), doc_id)
                    docs.setdefault(d.doc_id, doc_id)
                    urls[doc_id] = d.url
                    results.append(Result(doc_id=doc_id, rank=rank, url=d.url, title=d.title,
                                          domain=d.domain or domain_of(d.url), snippet=d.snippet, metadata={}))
            steps.append(SearchStep(iteration=max(iteration, 1), call_id=call_id, query=query, results=results,
                                    latency_ms=_ms(e)))
        else:
            target = args.get(tools.fetch_arg)
            if not isinstance(target, str):
                raise s.fail(f"{tools.fetch} call has no string argument {shown(tools.fetch_arg)}", i)
            doc_id_or_none = docs.get(normalize_url(target)) if tools.fetch_by_url else docs.get(target)
            if doc_id_or_none is None:
                raise s.fail(f"{tools.fetch} of {shown(target)}, which no earlier search result of the sample showed", i)
            page = read_page(result) if e.get("error") is None else None
            steps.append(FetchStep(iteration=max(iteration, 1), call_id=call_id, doc_id=doc_id_or_none,
                                   url=urls[doc_id_or_none], status="ok" if page is not None else "http_error",
                                   content=page, n_tokens=estimate_tokens(page) if page else 0, latency_ms=_ms(e)))
    completion = content_text((sample.get("output") or {}).get("completion"))
    final = final_answer(completion) if completion else None
    if final is None and completion.strip():
        final = completion.strip()
    reason, error = _stop(sample, final)
    return TraceLine(
        trajectory_id=trajectory_id(run_id, provider, s.id, epoch=s.epoch), provider=provider, qid=s.id,
        question=_question(s), gold_answer=_gold(s), final_answer=final, stop_reason=reason, steps=steps, epoch=s.epoch,
        run_id=run_id, turns=turns, error=error, answers=_answers(sample), citations=citations,
    )


def _hosted_steps(turn: HostedTurn, iteration: int, at: str, steps: list[Step], docs: dict[str, str],
                  urls: dict[str, str], n_docs: int) -> int:
    """A hosted turn's searches (each source a result with its surface) and page reads as steps, doc_ids going on
    from `n_docs`; returns the last doc number given. A page read of a URL no result showed has no judge item."""
    for k, search in enumerate(turn.searches, start=1):
        results: list[Result] = []
        for h in search.hits:
            if not h.url:
                continue
            n_docs += 1
            doc_id = f"d{n_docs}"
            docs.setdefault(normalize_url(h.url), doc_id)
            urls[doc_id] = h.url
            results.append(Result(doc_id=doc_id, rank=len(results) + 1, url=h.url, title=h.title, domain=h.domain,
                                  snippet=h.snippet, metadata=dict(h.metadata),
                                  surface=h.surface if h.surface is not None else msgspec.UNSET,  # type: ignore[arg-type]
                                  model_saw_more=msgspec.UNSET if h.model_saw_more is None else h.model_saw_more))
        steps.append(SearchStep(iteration=iteration, call_id=f"{at}-s{k}", query=search.query, results=results,
                                provider=turn.layer, params=search.params))
    for k, f in enumerate(turn.fetches, start=1):
        steps.append(FetchStep(iteration=iteration, call_id=f"{at}-f{k}", doc_id=docs.get(normalize_url(f.url)),
                               url=f.url, status="hidden" if f.text is None else "ok", content=f.text,
                               n_tokens=estimate_tokens(f.text) if f.text else 0))
    return n_docs


def _empty_results(text: str) -> bool:
    """A reply that is a result list with nothing in it (e.g. Tavily's `"results": []`)."""
    try:
        doc = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return False
    return isinstance(doc, dict) and any(isinstance(v, list) and not v for v in doc.values())


def _provider_of(log: dict[str, Any], sample: dict[str, Any], given: str | None) -> str | None:
    """`--provider`, else the task's or sample's `provider`, else the hosted layer the sample searched with."""
    if given:
        return given
    for source in ((log.get("eval") or {}).get("task_args") or {}, sample.get("metadata") or {}):
        if isinstance(source.get("provider"), str) and source["provider"]:
            return str(source["provider"])
    return hosted_layer(sample_hosted(sample))


def log_traces(path: Path, *, provider: str | None, run_id: str | None) -> Iterator[tuple[str, TraceLine]]:
    """(sample id, trace line) for each sample of one log that searched; BadInput names what cannot be mapped."""
    log = read_log(path)
    if log.get("status") not in ("success", "error", "cancelled", "started"):
        raise BadInput(f"{path}: unknown Inspect log status {shown(log.get('status'))}")
    run = run_id or f"inspect-{(log.get('eval') or {}).get('eval_id') or path.stem}"
    for sample in log.get("samples") or []:
        name = _provider_of(log, sample, provider)
        if name is None:
            if sample_trace(path, sample, provider="?", run_id=run) is None:
                continue  # it searched nothing that can be read: no trajectory, whatever its provider
            raise BadInput(f"{path}: sample {sample.get('id')}: no provider: pass --provider (the search API used)")
        line = sample_trace(path, sample, provider=name, run_id=run)
        if line is not None:
            yield f"{sample.get('id')} (epoch {sample.get('epoch') or 1})", line
