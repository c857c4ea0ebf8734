"""The sandbox world of docs/concepts/sandbox.md: an offline internet speaking the real providers' wire formats.

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

from searchtrace._lazy import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
