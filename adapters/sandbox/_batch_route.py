"""Model batches, keyless: OpenAI's Files and Batch APIs and Anthropic's Message Batches, over the same models.

OpenAI (under R/openai): `POST /v1/files` (multipart, purpose `batch`), `GET /v1/files/{id}` and `…/content`,
`POST /v1/batches` {input_file_id, endpoint, completion_window "24h"}, `GET /v1/batches/{id}`, `POST …/cancel`; the
output file holds one line per answered custom_id, the error file one per errored, expired or cancelled one.
Anthropic (under R/anthropic): `POST /v1/messages/batches` {requests: [{custom_id, params}]}, `GET …/{id}`,
`GET …/{id}/results` (the batch's `results_url`, JSONL), `POST …/{id}/cancel`.

Each item is answered at creation by the route its endpoint names (chat completions, Responses or Messages: the
same reply as online), and shown once the sandbox's batch delay (`create_app(batch_delay_s=)`, `sandbox serve
--batch-delay`) has passed. An item's fault is drawn on route `batch` with its custom_id as the request key and the
number of times that custom_id was submitted as the attempt (`!fault:errored` / `!fault:expired` in its last
message, or a FaultPlan's `errored` / `expired` rates); a batch with an expired item ends `expired` (OpenAI).
Results come in an order of their own (shuffled by the batch id), never the request order.
`Sandbox.batch_creates` counts the batches created.
"""

from __future__ import annotations

import email.parser
import email.policy
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

import searchtrace.adapters._anthropic_messages as anthropic_wire
from searchtrace.adapters.sandbox._anthropic_route import messages
from searchtrace.adapters.sandbox._chat_route import chat_completions
from searchtrace.adapters.sandbox._faults import BATCH_KINDS
from searchtrace.adapters.sandbox._reading import message_text
from searchtrace.adapters.sandbox._responses import json_response
from searchtrace.adapters.sandbox._responses_route import responses
from searchtrace.adapters.sandbox._state import Sandbox, json_body, sandbox_of
from searchtrace.adapters.sandbox._wire import digest

MAX_ITEMS = 100_000
_ROUTES: dict[str, Callable[[Request], Awaitable[Response]]] = {
    "/v1/chat/completions": chat_completions, "/v1/responses": responses}
_EXPIRED = "This request could not be executed before the completion window expired."


class Item(msgspec.Struct, kw_only=True):
    """One answered item of a batch: its custom_id, outcome (succeeded, errored, expired, canceled) and reply."""

    custom_id: str
    outcome: str
    status: int = 200
    body: Any = None


class Batch(msgspec.Struct, kw_only=True):
    """A batch as the sandbox keeps it: its items answered at creation, shown once `ready_at` has passed."""

    id: str
    kind: str  # "openai" or "anthropic"
    created_at: int
    ready_at: float  # time.monotonic() from which it has ended
    items: list[Item]
    endpoint: str = ""
    input_file_id: str = ""
    cancelled: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None


class Batches:
    """The batches and files of one sandbox (kept in memory for the life of the server)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, str, bytes]] = {}  # id -> (filename, purpose, bytes)
        self.batches: dict[str, Batch] = {}
        self.creates = 0


def _state(sb: Sandbox) -> Batches:
    if sb.batches is None:
        sb.batches = Batches()
    assert isinstance(sb.batches, Batches)
    return sb.batches


def openai_error(status: int, message: str, param: str | None = None) -> Response:
    return json_response({"error": {"message": message, "type": "invalid_request_error", "param": param,
                                    "code": None}}, status)


def anthropic_error(status: int, message: str) -> Response:
    return json_response(anthropic_wire.error_body(status, message), status)


async def _answer(request: Request, route: Callable[[Request], Awaitable[Response]], body: Any) -> tuple[int, Any]:
    """One item answered by its online route, as if it came alone with the batch request's key."""
    data = msgspec.json.encode(body)
    keys = [(k.encode(), v.encode()) for k, v in request.headers.items() if k in ("authorization", "x-api-key")]
    scope = {"type": "http", "method": "POST", "path": "/", "raw_path": b"/", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), *keys], "app": request.app}
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": data, "more_body": False}

    reply = await route(Request(scope, receive))
    raw = getattr(reply, "body", b"")
    try:
        return reply.status_code, msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return reply.status_code, {"error": {"message": bytes(raw).decode("utf-8", "replace")[:200]}}


def _fault(sb: Sandbox, custom_id: str, text: str) -> str | None:
    """An item's fault: drawn per custom_id and per submission of it (a resubmission draws afresh)."""
    kind = sb.fault("batch", custom_id, text)
    return kind if kind in BATCH_KINDS else None


def _last_text(body: Any) -> str:
    """The text a marker is looked for in: the item's last message (chat, Messages) or input (Responses)."""
    if not isinstance(body, dict):
        return ""
    turns = body.get("messages") if isinstance(body.get("messages"), list) else body.get("input")
    if isinstance(turns, list) and turns and isinstance(turns[-1], dict):
        return message_text(turns[-1].get("content"))
    return turns if isinstance(turns, str) else ""


async def _items(request: Request, sb: Sandbox, requests: list[tuple[str, Any]],
                 route: Callable[[Request], Awaitable[Response]]) -> list[Item]:
    out = []
    for custom_id, body in requests:
        kind = _fault(sb, custom_id, _last_text(body))
        if kind is not None:
            out.append(Item(custom_id=custom_id, outcome=kind, status=500 if kind == "errored" else 0))
            continue
        status, reply = await _answer(request, route, body)
        out.append(Item(custom_id=custom_id, outcome="succeeded" if status == 200 else "errored", status=status,
                        body=reply))
    return out


def _new(sb: Sandbox, kind: str, key: str, items: list[Item], **extra: Any) -> Batch:
    state = _state(sb)
    state.creates += 1
    prefix = "batch_" if kind == "openai" else "msgbatch_"
    batch = Batch(id=prefix + digest(key, str(state.creates), n=24), kind=kind, created_at=int(time.time()),
                  ready_at=time.monotonic() + sb.batch_delay_s, items=items, **extra)
    state.batches[batch.id] = batch
    return batch


def _ended(batch: Batch) -> bool:
    return batch.cancelled or time.monotonic() >= batch.ready_at


def _shown(batch: Batch) -> list[Item]:
    """The items as the batch's results show them: cancelled ones canceled, in an order of the batch's own."""
    items = [Item(custom_id=i.custom_id, outcome="canceled") if batch.cancelled else i for i in batch.items]
    random.Random(batch.id).shuffle(items)
    return items


# --- OpenAI ----------------------------------------------------------------------------------------------------


def _file_object(file_id: str, name: str, purpose: str, data: bytes) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()), "filename": name,
            "purpose": purpose, "status": "processed", "expires_at": None, "status_details": None}


def _multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a multipart/form-data body: field name -> (filename, bytes)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + data)
    parts: dict[str, tuple[str | None, bytes]] = {}
    if not msg.is_multipart():
        return parts
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = (part.get_filename(), payload)
    return parts


async def upload_file(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("batch", request)
    kind = request.headers.get("content-type", "")
    if not kind.startswith("multipart/form-data"):
        return openai_error(415, "Files are uploaded as multipart/form-data")
    parts = _multipart(kind, await request.body())
    purpose = parts.get("purpose", (None, b""))[1].decode("utf-8", "replace")
    if "file" not in parts:
        return openai_error(400, "Missing required parameter: 'file'.", "file")
    if purpose not in ("batch", "user_data", "assistants", "fine-tune", "vision"):
        return openai_error(400, f"Invalid value for 'purpose': {purpose!r}.", "purpose")
    state = _state(sb)
    name, data = parts["file"]
    file_id = "file-" + digest(data.decode("utf-8", "replace"), str(len(state.files)), n=24)
    state.files[file_id] = (name or "upload.jsonl", purpose, data)
    return json_response(_file_object(file_id, name or "upload.jsonl", purpose, data))


def _file(request: Request) -> tuple[str, tuple[str, str, bytes]] | Response:
    file_id = request.path_params["file_id"]
    found = _state(sandbox_of(request)).files.get(file_id)
    if found is None:
        return openai_error(404, f"No such File object: {file_id}", "id")
    return file_id, found


async def get_file(request: Request) -> Response:
    found = _file(request)
    if isinstance(found, Response):
        return found
    file_id, (name, purpose, data) = found
    return json_response(_file_object(file_id, name, purpose, data))


async def file_content(request: Request) -> Response:
    found = _file(request)
    if isinstance(found, Response):
        return found
    return Response(found[1][2], media_type="application/octet-stream")


def _lines(data: bytes) -> list[dict[str, Any]] | str:
    """The input file's request lines, or why it is refused."""
    out = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return f"line {n} is not JSON"
        if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str) or not isinstance(row.get("body"), dict):
            return f"line {n} needs custom_id, method, url and body"
        out.append(row)
    return out


async def create_openai_batch(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("batch", request)
    body = await json_body(request)
    if body is None:
        return openai_error(400, "We could not parse the JSON body of your request.")
    endpoint, window, file_id = body.get("endpoint"), body.get("completion_window"), body.get("input_file_id")
    if endpoint not in _ROUTES:
        return openai_error(400, f"Invalid value for 'endpoint': {endpoint!r}.", "endpoint")
    if window != "24h":
        return openai_error(400, "Invalid value for 'completion_window': only '24h' is supported.", "completion_window")
    found = _state(sb).files.get(str(file_id))
    if found is None or found[1] != "batch":
        return openai_error(400, f"Invalid 'input_file_id': {file_id!r}.", "input_file_id")
    rows = _lines(found[2])
    if isinstance(rows, str):
        return openai_error(400, f"The input file is invalid: {rows}", "input_file_id")
    ids = [r["custom_id"] for r in rows]
    if len(set(ids)) != len(ids) or not ids or len(ids) > MAX_ITEMS:
        return openai_error(400, "The input file needs 1 to 50,000 lines with unique custom_id values.",
                            "input_file_id")
    if any(r.get("url") != endpoint or r.get("method", "POST") != "POST" for r in rows):
        return openai_error(400, f"Every line's url must be the batch's endpoint {endpoint}.", "input_file_id")
    items = await _items(request, sb, [(r["custom_id"], r["body"]) for r in rows], _ROUTES[endpoint])
    batch = _new(sb, "openai", str(file_id), items, endpoint=endpoint, input_file_id=str(file_id))
    return json_response(_openai_batch(sb, batch))


def _output_line(batch: Batch, item: Item) -> dict[str, Any]:
    rid = "req_" + digest(batch.id, item.custom_id, n=16)
    if item.outcome == "succeeded":
        return {"id": "batch_req_" + digest(batch.id, item.custom_id, n=16), "custom_id": item.custom_id,
                "response": {"status_code": 200, "request_id": rid, "body": item.body}, "error": None}
    if item.outcome == "errored":
        body = item.body or {"error": {"message": "The server had an error processing your request.",
                                       "type": "server_error", "param": None, "code": None}}
        return {"id": "batch_req_" + digest(batch.id, item.custom_id, n=16), "custom_id": item.custom_id,
                "response": {"status_code": item.status, "request_id": rid, "body": body}, "error": None}
    code, message = (("batch_expired", _EXPIRED) if item.outcome == "expired"
                     else ("batch_cancelled", "This request was cancelled."))
    return {"id": "batch_req_" + digest(batch.id, item.custom_id, n=16), "custom_id": item.custom_id,
            "response": None, "error": {"code": code, "message": message}}


def _openai_files(sb: Sandbox, batch: Batch) -> None:
    """The output and error files of an ended batch (written once)."""
    if batch.output_file_id is not None or batch.error_file_id is not None:
        return
    state = _state(sb)
    shown = _shown(batch)
    for outcome_ok in (True, False):
        lines = [_output_line(batch, i) for i in shown if (i.outcome == "succeeded") == outcome_ok]
        if not lines:
            continue
        data = b"".join(msgspec.json.encode(x) + b"\n" for x in lines)
        file_id = "file-" + digest(batch.id, "output" if outcome_ok else "errors", n=24)
        state.files[file_id] = (f"{batch.id}_{'output' if outcome_ok else 'error'}.jsonl",
                                "batch_output", data)
        if outcome_ok:
            batch.output_file_id = file_id
        else:
            batch.error_file_id = file_id


def _openai_batch(sb: Sandbox, batch: Batch) -> dict[str, Any]:
    ended = _ended(batch)
    shown = _shown(batch) if ended else []
    done = sum(i.outcome == "succeeded" for i in shown)
    status = "in_progress"
    if ended:
        _openai_files(sb, batch)
        expired = any(i.outcome == "expired" for i in shown)
        status = "cancelled" if batch.cancelled else "expired" if expired else "completed"
    now = int(time.time())
    return {"id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": None,
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": batch.created_at, "in_progress_at": batch.created_at, "expires_at": batch.created_at + 86400,
            "finalizing_at": None, "completed_at": now if status == "completed" else None, "failed_at": None,
            "expired_at": now if status == "expired" else None, "cancelling_at": None,
            "cancelled_at": now if status == "cancelled" else None,
            "request_counts": {"total": len(batch.items), "completed": done,
                               "failed": len(shown) - done},
            "metadata": None}


def _batch(request: Request) -> Batch | None:
    return _state(sandbox_of(request)).batches.get(request.path_params["batch_id"])


async def get_openai_batch(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("batch", request)
    batch = _batch(request)
    if batch is None or batch.kind != "openai":
        return openai_error(404, f"No batch found with id '{request.path_params['batch_id']}'.")
    return json_response(_openai_batch(sb, batch))


async def cancel_openai_batch(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("batch", request)
    batch = _batch(request)
    if batch is None or batch.kind != "openai":
        return openai_error(404, f"No batch found with id '{request.path_params['batch_id']}'.")
    if not _ended(batch):
        batch.cancelled = True
    return json_response(_openai_batch(sb, batch))


# --- Anthropic -------------------------------------------------------------------------------------------------


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _anthropic_batch(request: Request, batch: Batch, here: str) -> dict[str, Any]:
    ended = _ended(batch)
    shown = _shown(batch) if ended else []
    counts = {k: sum(i.outcome == k for i in shown) for k in ("succeeded", "errored", "canceled", "expired")}
    return {"id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else len(batch.items), **counts},
            "created_at": _iso(batch.created_at), "expires_at": _iso(batch.created_at + 86400),
            "ended_at": _iso(time.time()) if ended else None, "archived_at": None,
            "cancel_initiated_at": _iso(time.time()) if batch.cancelled else None,
            "results_url": f"{here}/{batch.id}/results" if ended else None}


def _batches_url(request: Request) -> str:
    """This server's URL of the batches collection (the one app's, under /anthropic, or a port's own)."""
    url = str(request.url).split("?", 1)[0].rstrip("/")
    return url[: url.rindex("/v1/messages/batches")] + "/v1/messages/batches"


async def create_anthropic_batch(request: Request) -> Response:
    sb = sandbox_of(request)
    sb.count("batch", request)
    body = await json_body(request)
    reqs = body.get("requests") if body is not None else None
    if not isinstance(reqs, list) or not reqs or len(reqs) > MAX_ITEMS:
        return anthropic_error(400, "requests: a list of 1 to 100,000 requests is required")
    if not all(isinstance(r, dict) and isinstance(r.get("custom_id"), str) and isinstance(r.get("params"), dict)
               for r in reqs):
        return anthropic_error(400, "requests: every request needs custom_id and params")
    ids = [r["custom_id"] for r in reqs]
    if len(set(ids)) != len(ids):
        return anthropic_error(400, "requests: custom_id values must be unique within a batch")
    if any(r["params"].get("stream") is True for r in reqs):
        return anthropic_error(400, "requests: stream is not supported in a batch")
    items = await _items(request, sb, [(r["custom_id"], r["params"]) for r in reqs], messages)
    batch = _new(sb, "anthropic", ids[0], items)
    return json_response(_anthropic_batch(request, batch, _batches_url(request)))


def _anthropic_found(request: Request) -> Batch | Response:
    sandbox_of(request).count("batch", request)
    batch = _batch(request)
    if batch is None or batch.kind != "anthropic":
        return anthropic_error(404, f"message_batch_id: {request.path_params['batch_id']} was not found")
    return batch


async def get_anthropic_batch(request: Request) -> Response:
    batch = _anthropic_found(request)
    if isinstance(batch, Response):
        return batch
    return json_response(_anthropic_batch(request, batch, _batches_url(request)))


async def cancel_anthropic_batch(request: Request) -> Response:
    batch = _anthropic_found(request)
    if isinstance(batch, Response):
        return batch
    if not _ended(batch):
        batch.cancelled = True
    return json_response(_anthropic_batch(request, batch, _batches_url(request)))


def _anthropic_result(item: Item) -> dict[str, Any]:
    if item.outcome == "succeeded":
        return {"type": "succeeded", "message": item.body}
    if item.outcome == "errored":
        body = item.body if isinstance(item.body, dict) and item.body.get("type") == "error" else \
            anthropic_wire.error_body(500, "Internal server error")
        return {"type": "errored", "error": body}
    return {"type": item.outcome}


async def anthropic_results(request: Request) -> Response:
    batch = _anthropic_found(request)
    if isinstance(batch, Response):
        return batch
    if not _ended(batch):
        return anthropic_error(400, f"Batch {batch.id} has not ended; its results are not available yet")
    data = b"".join(msgspec.json.encode({"custom_id": i.custom_id, "result": _anthropic_result(i)}) + b"\n"
                    for i in _shown(batch))
    return Response(data, media_type="application/binary")
