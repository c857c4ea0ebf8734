"""Which trajectory an MCP call belongs to: the one of a stdio session (--qid, or the question a call names), or the
one an HTTP request's path or header names (docs/how-to/mcp.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from starlette.requests import Request

import searchtrace.engine.proxy as routes
from searchtrace.engine.proxy import ProxyRecorder, Traj

QUESTION_ARG = "question"


class Selection(msgspec.Struct, frozen=True):
    """The trajectory an HTTP request names: provider, qid and epoch (path `/t/<provider>/<qid>/mcp` or header)."""

    provider: str
    qid: str
    epoch: int = 1


def one_trajectory(recorder: ProxyRecorder, provider: str, qid: str | None, arguments: Mapping[str, Any]
                   ) -> tuple[Traj | None, str]:
    """The one trajectory a stdio session records: question `qid` (--qid), else the question whose text the call's
    `question` argument gives word for word; or why the call names none (one line)."""
    if qid is None:
        text = arguments.get(QUESTION_ARG)
        if not isinstance(text, str) or not text.strip():
            return None, (f"name the question first: pass `{QUESTION_ARG}` (its text, word for word) with this call, "
                          "or start the server with --qid")
        qid = next((q.qid for q in recorder.questions.values() if q.question.strip() == text.strip()), None)
        if qid is None:
            return None, f"no question of run {recorder.run_id!r} reads {text.strip()[:120]!r}"
    t, why = recorder.lookup(provider, qid, 1)
    return t, why or ""


def selection(request: Request | Mapping[str, Any]) -> Selection | tuple[int, str]:
    """The trajectory an HTTP request names, or why it names none (HTTP status, one line). `request`: a Request or
    an ASGI scope."""
    scope = request.scope if isinstance(request, Request) else request
    raw = scope.get("raw_path") or scope.get("path", "").encode()
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    chosen = routes.choose_trajectory(raw.decode("latin-1"), headers)
    if isinstance(chosen, str):
        return 400, chosen
    if chosen is None or chosen.rest != "mcp":
        return 404, ("no trajectory named: use http://127.0.0.1:PORT/t/<provider>/<qid>/mcp, or /mcp with header "
                "X-Searchtrace-Trajectory: <provider>/<qid>")
    return Selection(chosen.provider, chosen.qid, chosen.epoch)
