"""`searchtrace bench <name>`: each module here holds one benchmark's click `command`, measured as ratios."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    import searchtrace.benchmarks._chaos as chaos
    import searchtrace.benchmarks._coverage as coverage
    import searchtrace.benchmarks._fanout as fanout
    import searchtrace.benchmarks._http as http
    import searchtrace.benchmarks._ingest as ingest
    import searchtrace.benchmarks._judge as judge
    import searchtrace.benchmarks._live as live
    import searchtrace.benchmarks._merge as merge
    import searchtrace.benchmarks._otel as otel
    import searchtrace.benchmarks._proxy as proxy
    import searchtrace.benchmarks._replay as replay
    import searchtrace.benchmarks._scale as scale
    import searchtrace.benchmarks._ship as ship
    import searchtrace.benchmarks._view as view


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {

}
# modules exported whole, as namespaces (`blobs.get(...)`)
_MODULES: dict[str, str] = {
    "chaos": "searchtrace.benchmarks._chaos",
    "coverage": "searchtrace.benchmarks._coverage",
    "fanout": "searchtrace.benchmarks._fanout",
    "http": "searchtrace.benchmarks._http",
    "ingest": "searchtrace.benchmarks._ingest",
    "judge": "searchtrace.benchmarks._judge",
    "live": "searchtrace.benchmarks._live",
    "otel": "searchtrace.benchmarks._otel",
    "merge": "searchtrace.benchmarks._merge",
    "proxy": "searchtrace.benchmarks._proxy",
    "replay": "searchtrace.benchmarks._replay",
    "scale": "searchtrace.benchmarks._scale",
    "ship": "searchtrace.benchmarks._ship",
    "view": "searchtrace.benchmarks._view",
}

__all__ = [
    "COMMANDS",
    "chaos",
    "coverage",
    "fanout",
    "http",
    "ingest",
    "judge",
    "live",
    "otel",
    "merge",
    "proxy",
    "replay",
    "scale",
    "ship",
    "view",
]


# `searchtrace bench <name>` -> the click command that runs it, loaded only when that benchmark is asked for
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
}


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _MODULES)
