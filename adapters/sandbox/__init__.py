"""The sandbox world of SPEC §11: an offline internet speaking the real providers' wire formats.

Routes under one root R (`http://sandbox` in-process, `http://127.0.0.1:PORT` served; `base_urls(R)`):
  GET  R/brave/res/v1/web/search   Brave web search (X-Subscription-Token; missing/`bad…` key -> 422)
  POST R/tavily/search             Tavily search (api_key in body wins over Authorization: Bearer; -> 401)
  POST R/firecrawl/v2/search, /v1/search   Firecrawl search (Bearer; -> 401; v1 rejects unknown keys with 400)
  GET  R/jina/{url}                Jina Reader: text, or the JSON envelope with Accept: application/json
  POST R/openai/v1/chat/completions  models sandbox-agent, sandbox-judge, sandbox-judge-sloppy (Bearer; -> 401)
Personas: brave snippet-rich, tavily answer page at rank 1 with lead-only snippets, firecrawl sparse snippets.
Faults: `!fault:<kind>[x<N>]` in a query, a fetched URL (e.g. https://faults.sandbox.test/p?!fault:oversized or
https://faults.sandbox.test/!fault:timeout/p) or the last chat message; kinds 429 500 503 timeout malformed
truncated slow oversized(jina) 401, and for the judge prose badjson wrongshape pagemismatch; or
`create_app(faults=FaultPlan(seed, rates={kind: p}, routes=...))`. `app.state.counters[(route, trace_id)]`.
"""

from searchtrace.adapters.sandbox.app import create_app
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
from searchtrace.adapters.sandbox.serve import base_urls, env_exports, free_port, running, serve
from searchtrace.adapters.sandbox.world import World, default_world

__all__ = [
    "FAULT_KINDS",
    "Corpus",
    "FaultPlan",
    "InProcess",
    "Page",
    "Question",
    "ROOT",
    "World",
    "base_urls",
    "build_corpus",
    "create_app",
    "default_world",
    "env_exports",
    "free_port",
    "in_process",
    "parse_rates",
    "question_rows",
    "running",
    "serve",
    "write_questions_jsonl",
]
