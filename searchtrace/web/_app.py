"""`searchtrace view`: the evidence explorer, a Starlette app with the JSON API of docs/how-to/explorer.md and its pages.

Every page is one static document (`static/index.html`) whose script draws the views from the JSON API; every
script, style and font is served here, nothing from elsewhere. Page content from the store is only ever set as
text (never parsed as HTML), and a strict Content-Security-Policy forbids inline scripts and foreign sources.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import duckdb
import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import searchtrace.web._data as data
from searchtrace.adapters import LocalGuard, MiB
from searchtrace.analytics import (
    DEFAULT_BOOTSTRAP,
    ApiError,
    ChooseRun,
    ComparePage,
    QuestionPage,
    Report,
    ReportNotes,
    TrajectoryListPage,
    TrajectoryPage,
    Vocabulary,
    extras_from_db,
    render,
)
from searchtrace.store import BadInput, Cursor, ReadsBusy, StoreError, read_again
from searchtrace.web._source import Source

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'"
)
MAX_BODY = 1 * MiB  # a POST /api/sql body
STATIC = {"app.js": "text/javascript", "app.css": "text/css", "index.html": "text/html"}


def _bytes(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    return str(value)


_encoder = msgspec.json.Encoder(enc_hook=_bytes)
VOCABULARY = _encoder.encode(Vocabulary())  # the partition's names, meanings and colours: the page's one copy


def json_response(body: msgspec.Struct | Sequence[msgspec.Struct], status: int = 200) -> Response:
    """A Struct of analytics' read model (or a list of them) as the JSON the page reads."""
    return Response(_encoder.encode(body), status_code=status, media_type="application/json")


def _warm(source: Source, index: data.TrajectoryIndex) -> None:
    """Build the list index for the default judge run (errors surface on the first request instead)."""
    try:
        with source.cursor() as cur:
            index.rows(cur, index.resolve(cur, None))
    except (BadInput, StoreError, duckdb.Error):
        pass


def _static(name: str) -> bytes:
    return resources.files("searchtrace.web").joinpath("static").joinpath(name).read_bytes()


def create_app(db: Path, *, warm: bool = False, token: str | None = None) -> Starlette:
    """The app over one store (read through `Source`: the file, or the run that holds it). `warm`: build the
    trajectory list index in the background at once, so the first list page need not wait for it. Every request
    needs `token` (a fresh random one by default, `app.state.token`), in the query or the cookie the first page
    sets, and passes the local-server guard (loopback Host, same origin, JSON POSTs, caps)."""
    token = token or secrets.token_urlsafe(24)
    source = Source(db)
    index = data.TrajectoryIndex()
    item_index = data.ItemIndex()
    reports = data.ReportCache()
    if warm:
        threading.Thread(target=_warm, args=(source, index), name="searchtrace-view-warm", daemon=True).start()
    assets = {name: _static(name) for name in STATIC}

    async def reading(request: Request, fn: Callable[[Cursor], Response]) -> Response:
        """`fn` on one cursor in a worker thread, cancelled (its statement interrupted) when the client goes away
        or the server stops; a poll (header X-Searchtrace-Poll: 1) does not keep the file held (web._source)."""
        hold = request.headers.get("x-searchtrace-poll") != "1"
        gone = threading.Event()
        box: dict[str, Cursor] = {}

        def once() -> Response:
            with source.cursor(hold=hold) as cur:
                box["cur"] = cur
                try:
                    return fn(cur)
                finally:
                    box.pop("cur", None)

        task = asyncio.ensure_future(run_in_threadpool(read_again, once, unless=gone.is_set))
        try:
            while not (await asyncio.wait({task}, timeout=0.25))[0]:
                if await request.is_disconnected():
                    break
            else:
                return task.result()
        except asyncio.CancelledError:  # the server stops: the statement must not outlive it
            gone.set()
            if (cur := box.get("cur")) is not None:
                source.interrupt(cur)
            raise
        gone.set()
        while not task.done():  # the client went away: stop its statement (again until it ends)
            if (cur := box.get("cur")) is not None:
                source.interrupt(cur)
            await asyncio.wait({task}, timeout=0.05)
        with contextlib.suppress(Exception):
            task.result()
        return Response(status_code=499)  # nobody reads it

    def api(fn: Callable[[Cursor, Request], msgspec.Struct | Sequence[msgspec.Struct]]) -> Callable[[Request], Awaitable[Response]]:
        """An endpoint with one cursor (web._source), its work in a worker thread, errors as JSON."""

        def answer(cur: Cursor, request: Request) -> Response:
            try:
                return json_response(fn(cur, request))
            except data.NotFound as exc:
                return error(exc, 404)

        async def endpoint(request: Request) -> Response:
            try:
                return await reading(request, lambda cur: answer(cur, request))
            except (BadInput, StoreError, ValueError, duckdb.Error) as exc:
                return failed(exc)
            except Exception as exc:  # a bug: still one JSON line for the page, never a traceback
                return error(exc, 500, f"internal error ({type(exc).__name__}): ")

        return endpoint

    def failed(exc: Exception) -> Response:
        """The status of a read that failed: 503 (retry later) when every read session of the run is taken or
        the database failed, else 400 with the reason."""
        if isinstance(exc, ReadsBusy):
            out = error(exc, 503)
            out.headers["Retry-After"] = "1"
            return out
        if isinstance(exc, duckdb.Error):
            return error(exc, 503, "database: ")
        return error(exc, 400)

    def error(exc: BaseException, status: int, prefix: str = "") -> Response:
        """The one-line JSON error of docs/how-to/compare.md (the first line of the message, bounded)."""
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return json_response(ApiError(error=(prefix + line)[:500]), status)

    def integer(request: Request, name: str, default: int) -> int:
        raw = request.query_params.get(name)
        if not raw:
            return default
        try:
            return int(raw)
        except ValueError:
            raise BadInput(f"{name} is an integer, not {raw[:40]!r}") from None

    def optional(request: Request, name: str) -> int | None:
        return integer(request, name, 0) if request.query_params.get(name) else None

    def flag(request: Request, name: str) -> bool | None:
        raw = request.query_params.get(name)
        if not raw:
            return None
        if raw not in ("true", "false"):
            raise BadInput(f"{name} is true or false, not {raw[:40]!r}")
        return raw == "true"

    def runs_of(request: Request) -> list[str]:
        return [r for r in request.query_params.getlist("run") if r]

    def q(request: Request, name: str) -> str | None:
        return request.query_params.get(name) or None

    def trajectories(cur: Cursor, request: Request) -> TrajectoryListPage:
        f = data.Filters(runs=runs_of(request), provider=q(request, "provider"), epoch=optional(request, "epoch"),
                         correct=q(request, "correct"), partition=q(request, "partition"), q=q(request, "q"),
                         limit=integer(request, "limit", 50), offset=integer(request, "offset", 0))
        run = index.resolve(cur, q(request, "judge_run_id"))
        rows = index.rows(cur, run)
        return data.list_trajectories(rows, f, index.facets, run)

    def trajectory_page(cur: Cursor, request: Request) -> TrajectoryPage:
        return data.trajectory(cur, request.path_params["tid"], index.resolve(cur, q(request, "judge_run_id")))

    def question_page(cur: Cursor, request: Request) -> QuestionPage:
        return data.question(cur, request.path_params["qid"], index.resolve(cur, q(request, "judge_run_id")))

    def built(cur: Cursor, request: Request) -> tuple[Report | ChooseRun, list[str]]:
        bootstrap = integer(request, "bootstrap", DEFAULT_BOOTSTRAP)
        if not 0 <= bootstrap <= 100_000:
            raise BadInput("bootstrap must be 0..100000")
        return reports.built(cur, q(request, "judge_run_id"), runs_of(request), q(request, "by") or "provider", bootstrap)

    def report_of(cur: Cursor, request: Request) -> Report | ChooseRun:
        return built(cur, request)[0]  # byte for byte `report --json`: its notes go to /api/report-notes

    def report_notes(cur: Cursor, request: Request) -> ReportNotes:
        """The lines `report` prints to stderr for the same report (audits not applied, judge coverage, ...)."""
        return ReportNotes(notes=built(cur, request)[1])

    def items(cur: Cursor, request: Request) -> data.ItemsAnswer:
        run = index.resolve(cur, q(request, "judge_run_id"))
        label = q(request, "label")
        if not label:
            raise BadInput("items needs label= (a count of the report: partition, surface_supported_items, …)")
        query = data.ItemQuery(label=label, arm=q(request, "arm"), by=q(request, "by") or "provider",
                               runs=runs_of(request), partition=q(request, "partition"),
                               rank=optional(request, "rank"), shown=flag(request, "shown"),
                               pair=q(request, "pair"), cell=q(request, "cell"),
                               limit=integer(request, "limit", 50), offset=integer(request, "offset", 0))
        return data.items(cur, index.rows(cur, run), item_index, run, query)

    def compare(cur: Cursor, request: Request) -> ComparePage:
        a, b = q(request, "a"), q(request, "b")
        if not a or not b:
            raise BadInput("judge-compare needs two judge runs: ?a=…&b=…")
        return data.judge_compare(cur, a, b, integer(request, "offset", 0), integer(request, "limit", data.COMPARE_ROWS))

    def not_found(request: Request) -> Response:
        if request.url.path == "/api/sql":
            return json_response(ApiError(error='POST /api/sql with a JSON object {"sql": "SELECT …"}'), 405)
        return json_response(ApiError(error=f"no such API route: {request.url.path[:200]}"), 404)

    def report_page(cur: Cursor, request: Request) -> Response:
        body = reports.get(cur, q(request, "judge_run_id"), runs_of(request), q(request, "by") or "provider",
                           DEFAULT_BOOTSTRAP)
        if isinstance(body, ChooseRun):  # several runs, none chosen: the page says so (the view offers the runs)
            return HTMLResponse("<!doctype html><meta charset=utf-8><p>This store holds "
                                f"{len(body.runs)} runs: choose one (or several) above.</p>")
        return HTMLResponse(render(body, extra=extras_from_db(cur, body.judge_run_id, runs_of(request) or None, body.axis)))

    async def report_html(request: Request) -> Response:
        """The static `report --html` page for the chosen judge run (shown in a frame of the report view)."""
        try:
            return await reading(request, lambda cur: report_page(cur, request))
        except (BadInput, StoreError) as exc:
            return failed(exc)

    async def sql(request: Request) -> Response:
        """Rows of a read-only query; a refused or failing query is a 400 whose `error` says why."""
        try:
            body = msgspec.json.decode(await request.body())
            text = body["sql"] if isinstance(body, dict) else None
        except (msgspec.DecodeError, KeyError):
            text = None
        if not isinstance(text, str):
            return json_response(ApiError(error='POST a JSON object {"sql": "SELECT …"}'), 400)

        try:
            return await reading(request, lambda cur: json_response(data.run_sql(cur, text)))
        except ReadsBusy as exc:
            return failed(exc)
        except (BadInput, StoreError) as exc:  # refused or failing: a 400 with the reason, never a 200
            return json_response(ApiError(error=str(exc), columns=[], rows=[]), 400)

    def page(request: Request) -> Response:
        """The app's one page; the printed URL's token goes out of the address bar: its cookie is set (the guard
        sets it on this answer) and the browser is sent on to the same page without it."""
        if "token" in request.query_params:
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            return RedirectResponse("/" + (f"?{urlencode(rest)}" if rest else ""), status_code=303,
                                    headers={"Cache-Control": "no-store"})
        return Response(assets["index.html"], media_type="text/html; charset=utf-8")

    def vocabulary(request: Request) -> Response:
        """The partition's names, meanings and colours (the page loads them once; it keeps no copy)."""
        return Response(VOCABULARY, media_type="application/json")

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets or name == "index.html":
            return Response(b"not found", status_code=404)
        return Response(assets[name], media_type=f"{STATIC[name]}; charset=utf-8")

    routes = [
        Route("/", page),
        Route("/static/{name}", asset),
        Route("/report.html", report_html),
        Route("/api/runs", api(lambda cur, _: data.runs(cur))),
        Route("/api/judge-runs", api(lambda cur, _: data.judge_run_list(cur))),
        Route("/api/trajectories", api(trajectories)),
        Route("/api/trajectories/{tid:path}", api(trajectory_page)),
        Route("/api/questions/{qid:path}", api(question_page)),
        Route("/api/report", api(report_of)),
        Route("/api/report-notes", api(report_notes)),
        Route("/api/report-links", api(lambda cur, _: data.link_labels())),
        Route("/api/items", api(items)),
        Route("/api/judge-compare", api(compare)),
        Route("/api/sql", sql, methods=["POST"]),
        Route("/api/vocabulary", vocabulary),
        Route("/api/{rest:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ]
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            source.close()

    app = Starlette(routes=routes, lifespan=lifespan, middleware=[
        Middleware(SecurityHeaders), Middleware(LocalGuard, max_body=MAX_BODY, token=token, cookie="searchtrace-view")])
    app.state.source = source  # closed by the lifespan; callers without one (in-process clients) close it themselves
    app.state.token = token
    return app


class SecurityHeaders:
    """Adds the Content-Security-Policy (no inline script, nothing from elsewhere) to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"content-security-policy", CSP.encode()),
                                      (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
            await send(message)

        await self.app(scope, receive, send_with_headers)
