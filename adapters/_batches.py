"""Model batches (docs/how-to/batch.md): OpenAI's Files + Batch APIs and Anthropic's Message Batches, over a chat
adapter's endpoint, key and HTTP client.

Each item's body is the adapter's own request body of one completion (`OpenAIChat.request`), and each answered
item is read by the adapter's own reply reader (`OpenAIChat.response`): a batch item and an online call are the
same request and the same reply. OpenAI: the items as a JSONL file (`POST files`, purpose `batch`), then `POST
batches` {input_file_id, endpoint, completion_window "24h"}; the output and error files read by custom_id.
Anthropic: `POST v1/messages/batches` {requests: [{custom_id, params}]}; the results (JSONL, any order) read from
`v1/messages/batches/{id}/results` on the same endpoint (the key is never sent to another host).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any, Literal

import msgspec

from searchtrace.adapters._errors import ChatError
from searchtrace.adapters._http import Reply
from searchtrace.adapters._keys import json_headers
from searchtrace.adapters._openai_chat import OpenAIChat, api_headers
from searchtrace.adapters._types import ChatResponse
from searchtrace.store import one_line

Outcome = Literal["succeeded", "errored", "expired", "canceled"]
BATCH_APIS = ("chat", "responses", "anthropic")
_OPENAI_URLS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
_OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
RESULTS_CAP = 1 << 30  # an output file: up to 50,000 replies


class Submitted(msgspec.Struct, frozen=True, kw_only=True):
    """A created batch: its id and the sha256 of the request file (OpenAI) or request body (Anthropic) it was made of."""

    batch_id: str
    request_sha256: str


class Polled(msgspec.Struct, frozen=True, kw_only=True):
    """A batch's status as the API names it, and whether it has ended (its results can be read)."""

    status: str
    ended: bool


class ItemResult(msgspec.Struct, kw_only=True):
    """One item of an ended batch: its outcome, its reply read as an online one (succeeded), else why not."""

    custom_id: str
    outcome: Outcome
    response: ChatResponse | None = None
    error: str | None = None


class ModelBatches:
    """The batch API of one chat adapter's model API (chat or Responses: OpenAI's; anthropic: Message Batches)."""

    def __init__(self, chat: OpenAIChat) -> None:
        if chat.api not in BATCH_APIS:
            raise ValueError(f"the {chat.api} API has no batch endpoint here; use --api chat, responses or anthropic")
        self.chat = chat
        self.kind = "anthropic" if chat.api == "anthropic" else "openai"

    async def _call(self, method: str, path: str, *, json: Any = None, content: bytes | None = None,
                    headers: dict[str, str] | None = None, read_cap: int | None = None) -> Reply:
        chat = self.chat
        hdrs = headers if headers is not None else api_headers(chat.api, chat._key)
        extra: dict[str, Any] = {} if read_cap is None else {"read_cap": read_cap}
        reply = await chat._http.call(method, path, what=f"batch:{chat.model}", headers=hdrs, json=json,
                                      content=content, **extra)
        if reply.outcome != "ok":
            raise chat._error(reply)
        return reply

    async def submit(self, items: list[tuple[str, dict[str, Any]]]) -> Submitted:
        """Creates one batch of (custom_id, request body) items."""
        if self.kind == "anthropic":
            body = {"requests": [{"custom_id": cid, "params": params} for cid, params in items]}
            data = msgspec.json.encode(body)
            reply = await self._call("POST", "v1/messages/batches", content=data)
            return Submitted(batch_id=self._id(reply), request_sha256=hashlib.sha256(data).hexdigest())
        url = _OPENAI_URLS[self.chat.api]
        data = b"".join(msgspec.json.encode({"custom_id": cid, "method": "POST", "url": url, "body": body}) + b"\n"
                        for cid, body in items)
        boundary = uuid.uuid4().hex
        form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"judge.jsonl\"\r\n"
                "Content-Type: application/jsonl\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        headers = {**json_headers(self.chat._key, json_body=False),
                   "Content-Type": f"multipart/form-data; boundary={boundary}"}
        file_id = self._id(await self._call("POST", "files", content=form, headers=headers))
        reply = await self._call("POST", "batches", json={"input_file_id": file_id, "endpoint": url,
                                                          "completion_window": "24h"})
        return Submitted(batch_id=self._id(reply), request_sha256=hashlib.sha256(data).hexdigest())

    def _id(self, reply: Reply) -> str:
        body = reply.json_or_none()
        if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not body["id"]:
            raise ChatError("bad_response", f"{self.chat.model}: a batch reply without an id", reply.retries,
                            http_status=reply.http_status)
        return str(body["id"])

    def _path(self, batch_id: str, tail: str = "") -> str:
        base = "v1/messages/batches" if self.kind == "anthropic" else "batches"
        return f"{base}/{batch_id}{tail}"

    async def _state(self, batch_id: str) -> dict[str, Any]:
        reply = await self._call("GET", self._path(batch_id))
        body = reply.json_or_none()
        if not isinstance(body, dict):
            raise ChatError("bad_response", f"{self.chat.model}: batch {batch_id}: not a JSON object", reply.retries,
                            http_status=reply.http_status)
        return body

    async def poll(self, batch_id: str) -> Polled:
        body = await self._state(batch_id)
        if self.kind == "anthropic":
            status = str(body.get("processing_status"))
            return Polled(status=status, ended=status == "ended")
        status = str(body.get("status"))
        return Polled(status=status, ended=status in _OPENAI_ENDED)

    async def cancel(self, batch_id: str) -> None:
        await self._call("POST", self._path(batch_id, "/cancel"), json={})

    async def results(self, batch_id: str, custom_ids: list[str]) -> list[ItemResult]:
        """Every item of an ended batch, by custom_id; an item its results do not name is `expired`."""
        if self.kind == "anthropic":
            reply = await self._call("GET", self._path(batch_id, "/results"), read_cap=RESULTS_CAP)
            found = [self._anthropic(row) for row in _jsonl(reply.body)]
        else:
            body = await self._state(batch_id)
            found = []
            for key in ("output_file_id", "error_file_id"):
                if isinstance(body.get(key), str) and body[key]:
                    data = await self._call("GET", f"files/{body[key]}/content", read_cap=RESULTS_CAP,
                                            headers=json_headers(self.chat._key, json_body=False))
                    found += [self._openai(row) for row in _jsonl(data.body)]
        by_id = {r.custom_id: r for r in found if r is not None}
        return [by_id.get(cid) or ItemResult(custom_id=cid, outcome="expired", error="not in the batch's results")
                for cid in custom_ids]

    def _read(self, custom_id: str, body: Any) -> ItemResult:
        try:
            return ItemResult(custom_id=custom_id, outcome="succeeded",
                              response=self.chat.response(msgspec.json.encode(body)))
        except ChatError as exc:
            return ItemResult(custom_id=custom_id, outcome="errored", error=one_line(exc.message))

    def _openai(self, row: Any) -> ItemResult | None:
        if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
            return None
        cid, response, error = row["custom_id"], row.get("response"), row.get("error")
        if isinstance(response, dict) and response.get("status_code") == 200:
            return self._read(cid, response.get("body"))
        if isinstance(error, dict):
            code = str(error.get("code") or "")
            outcome: Outcome = ("expired" if code == "batch_expired" else "canceled" if code == "batch_cancelled"
                                else "errored")
            return ItemResult(custom_id=cid, outcome=outcome, error=one_line(f"{code}: {error.get('message', '')}"))
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        message = body.get("error", {}).get("message", "") if isinstance(body, dict) and isinstance(
            body.get("error"), dict) else ""
        return ItemResult(custom_id=cid, outcome="errored", error=one_line(f"HTTP {status}: {message}"))

    def _anthropic(self, row: Any) -> ItemResult | None:
        if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str) or not isinstance(
                row.get("result"), dict):
            return None
        cid, result = row["custom_id"], row["result"]
        kind = result.get("type")
        if kind == "succeeded":
            return self._read(cid, result.get("message"))
        if kind in ("expired", "canceled"):
            return ItemResult(custom_id=cid, outcome=kind, error=str(kind))
        err = result.get("error")
        inner = err.get("error") if isinstance(err, dict) else None
        message = inner.get("message", "") if isinstance(inner, dict) else ""
        return ItemResult(custom_id=cid, outcome="errored", error=one_line(f"errored: {message}"))


def _jsonl(data: bytes) -> list[Any]:
    out = []
    for line in data.splitlines():
        if line.strip():
            try:
                out.append(msgspec.json.decode(line))
            except msgspec.DecodeError:
                continue
    return out
