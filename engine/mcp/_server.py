"""searchtrace as an MCP search server (docs/how-to/mcp.md): `search_web`, `fetch_page` and `final_answer` over one
provider, each call recorded into its trajectory exactly as our agent loop records it.

The tools are the agent loop's own (engine._tools: schemas, validation, the <document> blocks the client gets back,
doc_ids per trajectory), and each performed call goes through the same recording functions (engine._agent). The
trajectories, their append queue, restart and close are the recording proxy's (engine.proxy._recorder). A client's
model turns are not visible to an MCP server: every result returned in a tool result counts as shown.

This module imports the `mcp` SDK (the `mcp` extra); only `searchtrace mcp` loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
import msgspec
import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.requests import Request

import searchtrace.engine.proxy as routes
from searchtrace.adapters import Fetcher, FetchResponse, SearchProvider, SearchResponse
from searchtrace.engine._agent import final_answer, key_rejected, record_fetch, record_search
from searchtrace.engine._record import code_version
from searchtrace.engine._tools import (
    FETCH_PAGE,
    SEARCH_WEB,
    TOOL_SCHEMAS,
    FetchPlan,
    Refusal,
    SearchPlan,
    plan,
    refusal_content,
)
from searchtrace.engine._trajectory import trajectory_id
from searchtrace.engine.mcp._select import QUESTION_ARG, Selection, one_trajectory, selection
from searchtrace.engine.proxy import ProxyRecorder, Traj

FINAL_ANSWER = "final_answer"
NAME = "searchtrace"
_encode = msgspec.json.Encoder(order="sorted")
log = structlog.get_logger("searchtrace.mcp")


def tools(*, by_question: bool) -> list[types.Tool]:
    """The agent loop's two tools and `final_answer`; with `by_question` each also takes the question's text
    (a stdio server without --qid learns its trajectory from the first call that names its question)."""
    out = []
    for schema in TOOL_SCHEMAS:
        fn = schema["function"]
        out.append(types.Tool(name=fn["name"], description=fn["description"],
                              input_schema=_with_question(fn["parameters"], by_question)))
    final = {"type": "object", "additionalProperties": False, "required": ["answer"],
             "properties": {"answer": {"type": "string", "description": "The short final answer."}}}
    out.append(types.Tool(name=FINAL_ANSWER, input_schema=_with_question(final, by_question),
                          description="Give the final answer to the question, grounded in the documents retrieved. "
                                      "Call it once, at the end."))
    return out


def _with_question(parameters: Mapping[str, Any], by_question: bool) -> dict[str, Any]:
    schema = dict(parameters)
    if by_question:
        schema["properties"] = {**schema["properties"], QUESTION_ARG: {
            "type": "string", "description": "The question being answered, word for word (needed on the first call)."}}
    return schema


def _result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class McpTools:
    """The tools of one served run: which trajectory a call belongs to, then the call performed and recorded."""

    def __init__(self, recorder: ProxyRecorder, provider: str, search: SearchProvider, fetch: Fetcher, *,
                 qid: str | None = None) -> None:
        """`qid`: the one trajectory a stdio server serves (None: chosen by the first `question` argument)."""
        self.recorder = recorder
        self.provider = provider
        self.search = search
        self.fetch = fetch
        self.qid = qid
        self.chosen: Traj | None = None  # a stdio server's trajectory, once its first call named it

    def server(self, *, by_question: bool) -> Server[Any]:
        """The SDK's low-level server with our tool list and call handler."""
        listed = tools(by_question=by_question)

        async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                             ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=listed)

        async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
            request = ctx.request if isinstance(ctx.request, Request) else None
            return await self.call(params.name, dict(params.arguments or {}), request)

        return Server(NAME, version=code_version(), on_list_tools=list_tools, on_call_tool=call_tool,
                      instructions="Web search whose every call is recorded by searchtrace. Search with search_web, "
                                   "read a result's page with fetch_page(doc_id), and finish with final_answer.")

    # -- which trajectory ---------------------------------------------------------------------------------------

    def unknown(self, provider: str, qid: str) -> str | None:
        """Why (provider, qid) names no trajectory of this run (one line), None when it does."""
        if provider != self.provider:
            return f"unknown provider {provider!r}: this server searches with {self.provider!r}"
        if qid not in self.recorder.questions:
            return f"unknown qid {qid!r}: not in the question file of run {self.recorder.run_id!r}"
        return None

    def _trajectory(self, arguments: Mapping[str, Any], request: Request | None) -> tuple[Traj | None, str]:
        if request is not None:  # HTTP: the path or the header (checked by the app before the SDK saw it)
            sel = selection(request)
            if isinstance(sel, tuple):
                return None, sel[1]
            t, why = self.recorder.lookup(sel.provider, sel.qid, sel.epoch)
            return t, why or ""
        if self.chosen is None:
            self.chosen, why = one_trajectory(self.recorder, self.provider, self.qid, arguments)
            return self.chosen, why
        return self.chosen, ""

    async def left(self, sel: Selection) -> None:
        """A client ended its HTTP session (DELETE): the trajectory it named, once its calls in flight are recorded,
        finishes `abandoned` unless a final answer finished it already."""
        t = self.recorder.trajs.get(trajectory_id(self.recorder.run_id, sel.provider, sel.qid, epoch=sel.epoch))
        if t is None or not t.open:
            return
        t.closing = True
        await self.recorder.settle(t)
        if not t.finished:
            t.b.finish("abandoned")
            self.recorder.emit(t)

    # -- calls --------------------------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any], request: Request | None = None) -> types.CallToolResult:
        """One tools/call: performed and recorded like the agent loop's; a call naming no trajectory records nothing."""
        t, why = self._trajectory(arguments, request)
        if t is None:
            return _result(f"Error: {why}", error=True)
        if not t.open:
            return _result(f"Error: trajectory {t.trajectory_id!r} is finished (its final answer was given); "
                           "nothing more is recorded", error=True)
        arguments.pop(QUESTION_ARG, None)
        arguments, secrets = routes.tool_arguments(arguments)  # a key sent as an argument is never stored
        if name == FINAL_ANSWER:
            return await self._final(t, arguments)
        iteration = t.b.iteration
        todo = plan(t.b.docs, "", name, _encode.encode(arguments).decode())
        if isinstance(todo, Refusal):  # a bad call: recorded as the agent loop records it, the client gets the error
            if name not in (SEARCH_WEB, FETCH_PAGE):
                todo = Refusal(todo.call_id, name, todo.arguments,
                               f"unknown tool {name!r} (tools: {SEARCH_WEB}, {FETCH_PAGE}, {FINAL_ANSWER})")
            t.b.refused(call_id=f"r{t.b.built}", iteration=iteration, name=name, arguments=todo.arguments,
                        reason=todo.reason)
            self.recorder.emit(t, secrets)
            return _result(refusal_content(todo.reason), error=True)
        outcome: SearchResponse | FetchResponse
        self.recorder.begin(t, chat=False)
        try:
            # numbered when recorded (calls of one trajectory may overlap), as the builder numbers them
            if isinstance(todo, SearchPlan):
                outcome = await self.search.search(todo.query, trace_id=t.trajectory_id)
                text = record_search(t.b, SearchPlan(f"s{t.b.searches + 1}", todo.query), iteration, outcome,
                                     self.search)
            else:
                assert isinstance(todo, FetchPlan)
                outcome = await self.fetch.fetch(todo.doc.url, trace_id=t.trajectory_id)
                text = record_fetch(t.b, FetchPlan(f"f{t.b.fetches + 1}", todo.doc), iteration, outcome)
            self.recorder.emit(t, secrets)
        finally:
            self.recorder.end(t, chat=False)
        if key_rejected(outcome):  # every call would fail alike: the operator is told, the client gets the error
            log.warning("mcp.key_rejected", provider=self.provider, error=outcome.error)
        return _result(text, error=outcome.status != "ok")

    async def _final(self, t: Traj, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """answer.final and trajectory.finished, once the trajectory's calls in flight are recorded; acknowledged
        once committed."""
        answer = arguments.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            return _result(f"Error: {FINAL_ANSWER} needs a non-empty string `answer`", error=True)
        t.closing = True  # a call arriving now is refused
        await self.recorder.settle(t)
        await self.recorder.final(t, final_answer(answer) or answer.strip(), iteration=t.b.iteration).wait()
        return _result(f"Recorded the final answer of trajectory {t.trajectory_id}.")


__all__: Sequence[str] = ["FINAL_ANSWER", "McpTools", "tools"]
