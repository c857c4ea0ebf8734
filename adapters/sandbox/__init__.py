"""The sandbox world of docs/concepts/sandbox.md and §14: an offline internet speaking the real providers' wire formats.

Routes under one root R (`http://sandbox` in-process, `http://127.0.0.1:PORT` served; `base_urls(R)`), each
endpoint under R/<its sandbox path> with its own paths (app.route_groups); `sandbox serve` also serves each at the
root of a port of its own (`create_apps`, `running_all`), so official clients' absolute paths work:
  R/<provider>/...   each search provider's routes, persona and faults, declared in adapters/providers/<name>.py
                     (e.g. GET R/brave/res/v1/web/search; a missing or `bad…` key is refused the provider's way)
  GET  R/jina/{url} (or POST R/jina/ {"url"})   Jina Reader: text, or the JSON envelope with Accept: application/json
  POST R/openai/v1/chat/completions  models sandbox-agent, sandbox-judge, sandbox-judge-sloppy (Bearer; -> 401);
       `stream: true` answers with server-sent chunks ending in a usage chunk
  POST R/openai/v1/responses  the same models over OpenAI's Responses API (function calls, previous_response_id,
       `stream: true` as typed events)
Faults: `!fault:<kind>[x<N>]` in a query, a fetched URL (e.g. https://faults.sandbox.test/p?!fault:oversized or
https://faults.sandbox.test/!fault:timeout/p) or the last chat message; kinds 429 500 503 timeout malformed
truncated slow oversized(jina) 401 quota, and for the judge prose badjson wrongshape pagemismatch; or
`create_app(faults=FaultPlan(seed, rates={kind: p}, routes=...))` (faults.routes() names them);
`app.state.counters[(route, trace_id)]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.adapters.sandbox._app import base_urls, create_app, create_apps
    from searchtrace.adapters.sandbox._corpus import (
        Corpus,
        Page,
        Question,
        build_corpus,
        question_rows,
        write_questions_jsonl,
    )
    from searchtrace.adapters.sandbox._faults import KINDS as FAULT_KINDS
    from searchtrace.adapters.sandbox._faults import FaultPlan, parse_rates, routes
    from searchtrace.adapters.sandbox._inproc import ROOT, InProcess, in_process
    from searchtrace.adapters.sandbox._serve import (
        EXAMPLES,
        Served,
        env_exports,
        free_port,
        own_root_url,
        running,
        running_all,
        serve,
        wait_listening,
    )
    from searchtrace.adapters.sandbox._world import World, default_world


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "base_urls": "searchtrace.adapters.sandbox._app",
    "create_app": "searchtrace.adapters.sandbox._app",
    "create_apps": "searchtrace.adapters.sandbox._app",
    "Corpus": "searchtrace.adapters.sandbox._corpus",
    "Page": "searchtrace.adapters.sandbox._corpus",
    "Question": "searchtrace.adapters.sandbox._corpus",
    "build_corpus": "searchtrace.adapters.sandbox._corpus",
    "question_rows": "searchtrace.adapters.sandbox._corpus",
    "write_questions_jsonl": "searchtrace.adapters.sandbox._corpus",
    "FAULT_KINDS": "searchtrace.adapters.sandbox._faults:KINDS",
    "FaultPlan": "searchtrace.adapters.sandbox._faults",
    "parse_rates": "searchtrace.adapters.sandbox._faults",
    "routes": "searchtrace.adapters.sandbox._faults",
    "InProcess": "searchtrace.adapters.sandbox._inproc",
    "ROOT": "searchtrace.adapters.sandbox._inproc",
    "in_process": "searchtrace.adapters.sandbox._inproc",
    "EXAMPLES": "searchtrace.adapters.sandbox._serve",
    "Served": "searchtrace.adapters.sandbox._serve",
    "env_exports": "searchtrace.adapters.sandbox._serve",
    "free_port": "searchtrace.adapters.sandbox._serve",
    "own_root_url": "searchtrace.adapters.sandbox._serve",
    "running": "searchtrace.adapters.sandbox._serve",
    "running_all": "searchtrace.adapters.sandbox._serve",
    "serve": "searchtrace.adapters.sandbox._serve",
    "wait_listening": "searchtrace.adapters.sandbox._serve",
    "World": "searchtrace.adapters.sandbox._world",
    "default_world": "searchtrace.adapters.sandbox._world",
}

__all__ = [
    "Corpus",
    "EXAMPLES",
    "FAULT_KINDS",
    "FaultPlan",
    "InProcess",
    "Page",
    "Question",
    "ROOT",
    "Served",
    "World",
    "base_urls",
    "build_corpus",
    "create_app",
    "create_apps",
    "default_world",
    "env_exports",
    "free_port",
    "in_process",
    "own_root_url",
    "parse_rates",
    "question_rows",
    "routes",
    "running",
    "running_all",
    "serve",
    "wait_listening",
    "write_questions_jsonl",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
