"""The sandbox world of SPEC §11 and §14: an offline internet speaking the real providers' wire formats.

Routes under one root R (`http://sandbox` in-process, `http://127.0.0.1:PORT` served; `base_urls(R)`), each
endpoint under R/<its sandbox path> with its own paths (app.route_groups); `sandbox serve` also serves each at the
root of a port of its own (`create_apps`, `running_all`), so official clients' absolute paths work:
  R/<provider>/...   each search provider's routes, persona and faults, declared in adapters/providers/<name>.py
                     (e.g. GET R/brave/res/v1/web/search; a missing or `bad…` key is refused the provider's way)
  GET  R/jina/{url} (or POST R/jina/ {"url"})   Jina Reader: text, or the JSON envelope with Accept: application/json
  POST R/openai/v1/chat/completions  models sandbox-agent, sandbox-judge, sandbox-judge-sloppy (Bearer; -> 401);
       `stream: true` answers with server-sent chunks ending in a usage chunk
Faults: `!fault:<kind>[x<N>]` in a query, a fetched URL (e.g. https://faults.sandbox.test/p?!fault:oversized or
https://faults.sandbox.test/!fault:timeout/p) or the last chat message; kinds 429 500 503 timeout malformed
truncated slow oversized(jina) 401 quota, and for the judge prose badjson wrongshape pagemismatch; or
`create_app(faults=FaultPlan(seed, rates={kind: p}, routes=...))` (faults.routes() names them);
`app.state.counters[(route, trace_id)]`.
"""


from searchtrace.adapters.sandbox.app import create_app, create_apps
from searchtrace.adapters.sandbox.corpus import (
    Corpus,
    Page,
    Question,
    build_corpus,
    question_rows,
    write_questions_jsonl,
)
from searchtrace.adapters.sandbox.faults import KINDS as FAULT_KINDS
from searchtrace.adapters.sandbox.faults import FaultPlan, parse_rates
from searchtrace.adapters.sandbox.inproc import ROOT, InProcess, in_process
from searchtrace.adapters.sandbox.serve import (
    EXAMPLES,
    Served,
    base_urls,
    env_exports,
    free_port,
    own_root_url,
    running,
    running_all,
    serve,
)
from searchtrace.adapters.sandbox.world import World, default_world

__all__ = [
    "EXAMPLES",
    "FAULT_KINDS",
    "Corpus",
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
    "parse_rates",
    "question_rows",
    "own_root_url",
    "running",
    "running_all",
    "serve",
    "write_questions_jsonl",
]
