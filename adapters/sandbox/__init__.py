"""The sandbox world of SPEC §11 and §14: an offline internet speaking the real providers' wire formats.

Routes under one root R (`http://sandbox` in-process, `http://127.0.0.1:PORT` served; `base_urls(R)`), each
provider under R/<name> with its own paths (app.route_groups); `sandbox serve` also serves each provider at the
root of a port of its own (`create_apps`, `running_all`), so official clients' absolute paths work:
  GET  R/brave/res/v1/web/search   Brave web search (X-Subscription-Token; missing/`bad…` key -> 422)
  POST R/tavily/search             Tavily search (api_key in body wins over Authorization: Bearer; -> 401)
  POST R/firecrawl/v2/search, /v1/search   Firecrawl search (Bearer; -> 401; v1 rejects unknown keys with 400)
  POST R/exa/search, R/perplexity/search, R/serper/search, R/parallel/v1/search, R/youcom/v1/search,
       R/linkup/v1/search, R/jina_search/ ; GET R/serpapi/search.json   the SPEC §14 providers
  GET  R/jina/{url} (or POST R/jina/ {"url"})   Jina Reader: text, or the JSON envelope with Accept: application/json
  POST R/openai/v1/chat/completions  models sandbox-agent, sandbox-judge, sandbox-judge-sloppy (Bearer; -> 401);
       `stream: true` answers with server-sent chunks ending in a usage chunk
Personas: see personas.py (brave snippet-rich, tavily answer page at rank 1, firecrawl sparse, exa highlights,
perplexity long excerpts, serpapi/serper SERP snippets with answer boxes, parallel excerpts, youcom snippets,
linkup page extracts, jina_search descriptions or whole pages).
Faults: `!fault:<kind>[x<N>]` in a query, a fetched URL (e.g. https://faults.sandbox.test/p?!fault:oversized or
https://faults.sandbox.test/!fault:timeout/p) or the last chat message; kinds 429 500 503 timeout malformed
truncated slow oversized(jina) 401 quota, and for the judge prose badjson wrongshape pagemismatch; or
`create_app(faults=FaultPlan(seed, rates={kind: p}, routes=...))`. `app.state.counters[(route, trace_id)]`.
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
