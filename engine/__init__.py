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
    "Agent": "engine.agent",
    "Trajectory": "engine.agent",
    "Recorder": "engine.agent",
    "Stats": "engine.agent",
    "rebuild_messages": "engine.agent",
    "final_answer": "engine.agent",
    "trajectory_id": "engine.agent",
    "RunConfig": "engine.config",
    "load_config": "engine.config",
    "parse_config": "engine.config",
    "point_at_sandbox": "engine.config",
    "sandbox_config": "engine.config",
    "record_run": "engine.record",
    "endpoint_factory": "engine.record",
    "load_questions": "engine.record",
    "RunSummary": "engine.record",
    "fan_out": "engine.fanout",
    "get_prompt": "engine.prompts",
    "TOOL_SCHEMAS": "engine.tools",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
