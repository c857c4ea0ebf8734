"""The engine: the agent loop, the fan-out over (question, provider), run configs, recording and the CLI.

Public surface (imported lazily so `import engine` stays cheap for the command line):
- `Agent`, `Trajectory`, `Recorder`, `Stats`, `rebuild_messages`, `final_answer`, `trajectory_id` (engine.agent)
- `RunConfig`, `load_config`, `parse_config`, `point_at_sandbox`, `sandbox_config` (engine.config)
- `record_run`, `endpoint_factory`, `load_questions`, `RunSummary` (engine.record)
- `fan_out` (engine.fanout); `get_prompt`, `TOOL_SCHEMAS` (engine.prompts, engine.tools)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Agent": "searchtrace.engine.agent",
    "Trajectory": "searchtrace.engine.agent",
    "Recorder": "searchtrace.engine.agent",
    "Stats": "searchtrace.engine.agent",
    "rebuild_messages": "searchtrace.engine.agent",
    "final_answer": "searchtrace.engine.agent",
    "trajectory_id": "searchtrace.engine.agent",
    "RunConfig": "searchtrace.engine.config",
    "load_config": "searchtrace.engine.config",
    "parse_config": "searchtrace.engine.config",
    "point_at_sandbox": "searchtrace.engine.config",
    "sandbox_config": "searchtrace.engine.config",
    "record_run": "searchtrace.engine.record",
    "endpoint_factory": "searchtrace.engine.record",
    "load_questions": "searchtrace.engine.record",
    "RunSummary": "searchtrace.engine.record",
    "fan_out": "searchtrace.engine.fanout",
    "get_prompt": "searchtrace.engine.prompts",
    "TOOL_SCHEMAS": "searchtrace.engine.tools",
    "read_questions": "searchtrace.engine.sample",
    "sample": "searchtrace.engine.sample",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
