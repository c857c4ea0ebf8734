"""The benchmarks `searchtrace bench` runs, each a module's click `command`, loaded only when asked for."""

from __future__ import annotations

# `searchtrace bench <name>` -> the click command that runs it
COMMANDS: dict[str, str] = {
    "ingest": "searchtrace.benchmarks._ingest:command",
    "replay": "searchtrace.benchmarks._replay:command",
    "fanout": "searchtrace.benchmarks._fanout:command",
    "judge": "searchtrace.benchmarks._judge:command",
    "http": "searchtrace.benchmarks._http:command",
    "chaos": "searchtrace.benchmarks._chaos:command",
    "view": "searchtrace.benchmarks._view:command",
    "proxy": "searchtrace.benchmarks._proxy:command",
    "live": "searchtrace.benchmarks._live:command",
    "coverage": "searchtrace.benchmarks._coverage:command",
    "otel": "searchtrace.benchmarks._otel:command",
    "ship": "searchtrace.benchmarks._ship:command",
    "merge": "searchtrace.benchmarks._merge:command",
    "scale": "searchtrace.benchmarks._scale:command",
    "startup": "searchtrace.benchmarks._startup:command",
}
