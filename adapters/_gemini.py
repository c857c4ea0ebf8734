"""Google's Gemini API (`POST {base}/v1beta/models/{model}:generateContent`, and `:streamGenerateContent?alt=sse`)
in Chat Completions terms, both ways: the only place that knows its shapes, for the engine, the sandbox and the proxy.

Chat messages become `contents` (role `user` / `model`; an assistant's calls `functionCall` parts; tool results
`functionResponse` parts named after the call they answer; system messages the `systemInstruction`), and a
request's contents become chat messages again. A call without an `id` gets one from its name and place, and a
`functionResponse` without one answers the first open call of its name. A reply's text is its first candidate's
text parts (thought parts left out), its tool calls its `functionCall` parts; `usageMetadata` follows the one usage
rule (`promptTokenCount` holds the cached tokens; `thoughtsTokenCount` is reported beside the output and added).
A streamed reply is a series of `data:` chunks, each a partial reply: texts are joined, calls and the last usage kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec

import searchtrace.adapters._chat_shapes as shapes
from searchtrace.adapters._keys import Secret
from searchtrace.adapters._types import EndpointSpec, Limits, Tokens
from searchtrace.store import ToolCall, Usage, usage_rule

ENDPOINT = EndpointSpec(name="gemini", key_env="GEMINI_API_KEY", base_url_env="GOOGLE_GEMINI_BASE_URL",
                        default_base_url="https://generativelanguage.googleapis.com",
                        limits=Limits(rps=1.0, concurrency=8, timeout_s=120.0), sandbox_path="gemini")
VERSION = "v1beta"
# the request fields that are not generation settings: a config's other params go into `generationConfig`
_TOP_LEVEL = frozenset({"safetySettings", "toolConfig", "cachedContent", "labels", "generationConfig", "tools",
                        "systemInstruction", "contents"})
# an HTTP status as Google's error `status`
STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def path(model: str, *, stream: bool = False) -> str:
    """The path below the base URL of one call (the model name without a `models/` prefix)."""
    name = model.removeprefix("models/")
    return f"{VERSION}/models/{name}:streamGenerateContent?alt=sse" if stream else f"{VERSION}/models/{name}:generateContent"


def headers(key: Secret | None) -> dict[str, str]:
    """JSON both ways, the key as `x-goog-api-key` when there is one."""
    out = {"Accept": "application/json", "Content-Type": "application/json"}
    if key is not None:
        out["x-goog-api-key"] = key.reveal()
    return out


# ---------------------------------------------------------------- requests: chat -> Gemini

def tools_to_gemini(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Chat function tools as one Gemini tool of `functionDeclarations`."""
    decls = []
    for t in tools or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict):
            decls.append(shapes.declaration(fn, "parameters"))
    return [{"functionDeclarations": decls}] if decls else []


def to_contents(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Chat messages as the system text and `contents` (consecutive turns of one role merged)."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> function name, for the functionResponse that answers it

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        shapes.merge_turn(contents, role, "parts", parts)

    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(shapes.content_text(m.get("content")))
        elif role == "tool":
            call_id = str(m.get("tool_call_id", ""))
            add("user", [{"functionResponse": {"id": call_id, "name": names.get(call_id, ""),
                                               "response": {"result": shapes.content_text(m.get("content"))}}}])
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            if text := shapes.content_text(m.get("content")):
                parts.append({"text": text})
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                call_id, name = str(tc.get("id", "")), str(fn.get("name", ""))
                names[call_id] = name
                parts.append({"functionCall": {"id": call_id, "name": name, "args": shapes.arguments_object(fn.get("arguments", ""))}})
            add("model", parts or [{"text": ""}])
        else:
            add("user", [{"text": shapes.content_text(m.get("content"))}])
    return "\n\n".join(s for s in system if s), contents


def request_body(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 response_format: dict[str, Any] | None, params: dict[str, Any]) -> dict[str, Any]:
    """The generateContent request of one turn (the model is in the path); `params` are generation settings unless
    they name a request field; a `response_format` asks for JSON (`responseMimeType`)."""
    system, contents = to_contents(messages)
    config = dict(params.get("generationConfig") or {})
    config.update({k: v for k, v in params.items() if k not in _TOP_LEVEL})
    if response_format is not None and response_format.get("type") != "text":
        config["responseMimeType"] = "application/json"
    body: dict[str, Any] = {"contents": contents, **{k: v for k, v in params.items() if k in _TOP_LEVEL}}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if tools:
        body["tools"] = tools_to_gemini(tools)
    if config:
        body["generationConfig"] = config
    return body


# ---------------------------------------------------------------- requests: Gemini -> chat

def tools_to_chat(tools: list[Any]) -> list[dict[str, Any]]:
    """Gemini tools' `functionDeclarations` as chat function tools (the schema under any of the names the API takes:
    google-genai sends `parameters_json_schema`); ValueError on another tool (`googleSearch` …)."""
    out = []
    for t in tools:
        decls = t.get("functionDeclarations", t.get("function_declarations")) if isinstance(t, dict) else None
        if not isinstance(decls, list):
            kind = ", ".join(t) if isinstance(t, dict) else type(t).__name__
            raise ValueError(f"tools: tool {kind!r} is not served here: only functionDeclarations")
        for d in decls:
            if isinstance(d, dict):
                schema = d.get("parameters") or d.get("parametersJsonSchema") or d.get("parameters_json_schema")
                out.append(shapes.chat_tool(str(d.get("name", "")), schema, d.get("description")))
    return out


def chat_messages(system: Any, contents: Any) -> list[dict[str, Any]]:
    """A request's `systemInstruction` and `contents` as chat messages; ValueError in Google's words when malformed."""
    out: list[dict[str, Any]] = []
    if isinstance(system, str) and system:
        out.append({"role": "system", "content": system})
    elif isinstance(system, dict) and (text := _parts_text(system.get("parts"))):
        out.append({"role": "system", "content": text})
    if not isinstance(contents, list):
        raise ValueError("* GenerateContentRequest.contents: contents is not specified")
    pending: list[tuple[str, str]] = []  # (id, name) of the calls the last model turn made
    for i, c in enumerate(contents):
        if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
            raise ValueError(f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty")
        parts = [p for p in c["parts"] if isinstance(p, dict)]
        if c.get("role") == "model":
            calls: list[dict[str, Any]] = []
            pending = []
            for k, p in enumerate(p for p in parts if isinstance(p.get("functionCall"), dict)):
                fc = p["functionCall"]
                call_id, name = str(fc.get("id") or f"{fc.get('name', '')}#{k}"), str(fc.get("name", ""))
                pending.append((call_id, name))
                calls.append({"id": call_id, "type": "function",
                              "function": {"name": name,
                                           "arguments": json.dumps(fc.get("args") or {}, ensure_ascii=False)}})
            msg: dict[str, Any] = {"role": "assistant", "content": _parts_text(parts) or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            continue
        for p in parts:
            fr = p.get("functionResponse")
            if isinstance(fr, dict):
                name = str(fr.get("name", ""))
                call_id = str(fr.get("id") or next((cid for cid, n in pending if n == name), name))
                pending = [(cid, n) for cid, n in pending if cid != call_id]
                response = fr.get("response")
                result = response.get("result", response.get("output")) if isinstance(response, dict) else response
                out.append({"role": "tool", "tool_call_id": call_id,
                            "content": result if isinstance(result, str) else json.dumps(response, ensure_ascii=False)})
        if text := _parts_text(parts):
            out.append({"role": "user", "content": text})
    return out


def _parts_text(parts: Any) -> str:
    """The text parts of a part list joined (thought parts left out)."""
    if not isinstance(parts, list):
        return ""
    return "".join(str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))


# ---------------------------------------------------------------- replies

class _Call(msgspec.Struct):
    name: str = ""
    args: Any = None
    id: str | None = None


class _Part(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: bool | None = None
    function_call: _Call | None = None


class _Content(msgspec.Struct):
    parts: list[_Part] = []
    role: str | None = None


class _Candidate(msgspec.Struct, rename="camel"):
    content: _Content | None = None
    finish_reason: str | None = None


class _Usage(msgspec.Struct, rename="camel"):
    prompt_token_count: Tokens | None = None
    candidates_token_count: Tokens | None = None
    cached_content_token_count: Tokens | None = None
    thoughts_token_count: Tokens | None = None


class _Reply(msgspec.Struct, rename="camel"):
    candidates: list[_Candidate] = []
    usage_metadata: _Usage | None = None
    model_version: str | None = None


def usage_of(u: _Usage | None) -> Usage:
    """usageMetadata under the one usage rule: thoughts are reasoning, added to the output tokens."""
    if u is None:
        return Usage()
    return usage_rule(prompt=u.prompt_token_count or 0, output=u.candidates_token_count or 0,
                      cached=u.cached_content_token_count or 0, reasoning=u.thoughts_token_count or 0,
                      reasoning_apart=True)


def parse_reply(body: bytes) -> tuple[str | None, list[ToolCall], Usage, str | None]:
    """Text, tool calls (`functionCall` parts), usage and `finishReason` of a generateContent reply."""
    parsed = msgspec.json.decode(body, type=_Reply)
    if not parsed.candidates:
        raise ValueError("no candidates in the reply")
    cand = parsed.candidates[0]
    parts = cand.content.parts if cand.content else []
    texts = [p.text for p in parts if p.text is not None and not p.thought]
    fcs = [p.function_call for p in parts if p.function_call is not None]
    calls = [ToolCall(call_id=fc.id or f"{fc.name}#{k}", name=fc.name,
                      arguments=json.dumps(fc.args or {}, ensure_ascii=False)) for k, fc in enumerate(fcs)]
    return ("".join(texts) if texts else None), calls, usage_of(parsed.usage_metadata), cand.finish_reason


def model_of(body: bytes) -> str | None:
    """The model version a reply names."""
    return shapes.named_field(body, "modelVersion")


def reply(*, response_id: str, model: str, text: str | None, calls: list[ToolCall], usage: dict[str, int],
          finish_reason: str = "STOP") -> dict[str, Any]:
    """A generateContent reply (the sandbox's): one candidate with its text and functionCall parts."""
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    for c in calls:
        parts.append({"functionCall": {"id": c.call_id, "name": c.name, "args": shapes.arguments_object(c.arguments)}})
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
            "usageMetadata": usage, "modelVersion": model, "responseId": response_id}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Google's error object for an HTTP status."""
    return {"error": {"code": status, "message": message, "status": STATUSES.get(status, "UNKNOWN")}}


def error_message(body: Any, text: str) -> str:
    """`{"error": {"code", "message", "status"}}` as `STATUS: message`, else the text (a stream's error may be a
    list of one such object)."""
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        msg = str(err.get("message") or text)
        return f"{err['status']}: {msg}" if err.get("status") else msg
    return text


# ---------------------------------------------------------------- streamed replies

_PIECE = 24


def stream_chunks(whole: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The chunks `streamGenerateContent?alt=sse` sends for one reply: its text in pieces, then its calls, the
    finish reason and the usage with the last chunk."""
    cand = whole["candidates"][0]
    parts = cand["content"]["parts"]
    texts = "".join(p.get("text", "") for p in parts if "text" in p)
    calls = [p for p in parts if "functionCall" in p]
    pieces: list[list[dict[str, Any]]] = [[{"text": texts[i : i + _PIECE]}] for i in range(0, len(texts), _PIECE)]
    if calls or not pieces:
        pieces.append(calls or [{"text": ""}])
    for n, chunk_parts in enumerate(pieces):
        last = n == len(pieces) - 1
        c: dict[str, Any] = {"content": {"role": "model", "parts": chunk_parts}, "index": 0}
        if last:
            c["finishReason"] = cand.get("finishReason", "STOP")
        out: dict[str, Any] = {"candidates": [c], "modelVersion": whole["modelVersion"],
                               "responseId": whole["responseId"]}
        usage = whole["usageMetadata"]
        out["usageMetadata"] = usage if last else {"promptTokenCount": usage.get("promptTokenCount", 0)}
        yield out


def sse_bytes(chunk: dict[str, Any]) -> bytes:
    return b"data: " + msgspec.json.encode(chunk) + b"\r\n\r\n"


def assemble(stream: bytes) -> bytes:
    """The generateContent reply a stream of chunks carries, as one JSON body; ValueError for an error chunk."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    usage: Any = None
    finish: Any = None
    model: Any = None
    response_id: Any = None
    seen = False
    grounding: Any = None  # docs/how-to/hosted.md: the last candidate's groundingMetadata (it rides on the last chunk)
    for line in stream.decode("utf-8", "replace").splitlines():
        if not line.startswith("data:") or not (data := line[5:].strip()):
            continue
        chunk = msgspec.json.decode(data)
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk is not a JSON object")
        if isinstance(chunk.get("error"), dict):
            raise ValueError(f"stream error: {error_message(chunk, '')}")
        seen = True
        model = chunk.get("modelVersion") or model
        response_id = chunk.get("responseId") or response_id
        usage = chunk.get("usageMetadata") or usage
        for cand in chunk.get("candidates") or []:
            if cand.get("index", 0) != 0:
                continue
            finish = cand.get("finishReason") or finish
            grounding = cand.get("groundingMetadata") or grounding
            for p in (cand.get("content") or {}).get("parts") or []:
                if isinstance(p.get("functionCall"), dict):
                    calls.append(p)
                elif isinstance(p.get("text"), str) and not p.get("thought"):
                    texts.append(p["text"])
    if not seen:
        raise ValueError("no data chunks in the event stream")
    parts: list[dict[str, Any]] = ([{"text": "".join(texts)}] if texts else []) + calls
    cand0: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
    if grounding is not None:
        cand0["groundingMetadata"] = grounding
    body = {"candidates": [cand0], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}
    return msgspec.json.encode(body)
