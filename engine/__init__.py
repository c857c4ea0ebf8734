"""The engine: the agent loop, the fan-out over (question, provider), run configs, recording and the CLI.

Public surface (imported lazily so importing any engine module stays cheap for the command line):
- `Agent`, `Trajectory`, `Recorder`, `Stats`, `rebuild_messages`, `final_answer`, `trajectory_id` (engine.agent)
- `RunConfig`, `load_config`, `parse_config`, `point_at_sandbox`, `sandbox_config` (engine.config)
- `record_run`, `endpoint_factory`, `load_questions`, `RunSummary` (engine.record)
- `fan_out` (engine.fanout); `get_prompt`, `TOOL_SCHEMAS` (engine.prompts, engine.tools)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.engine.agent import (
        Agent,
        Recorder,
        Stats,
        Trajectory,
        final_answer,
        rebuild_messages,
        trajectory_id,
    )
    from searchtrace.engine.config import (
        RunConfig,
        load_config,
        parse_config,
        point_at_sandbox,
        sandbox_config,
    )
    from searchtrace.engine.fanout import fan_out
    from searchtrace.engine.prompts import get_prompt
    from searchtrace.engine.record import RunSummary, endpoint_factory, load_questions, record_run
    from searchtrace.engine.sample import read_questions, sample
    from searchtrace.engine.tools import TOOL_SCHEMAS


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

__all__ = [
    "Agent",
    "Recorder",
    "RunConfig",
    "RunSummary",
    "Stats",
    "TOOL_SCHEMAS",
    "Trajectory",
    "endpoint_factory",
    "fan_out",
    "final_answer",
    "get_prompt",
    "load_config",
    "load_questions",
    "parse_config",
    "point_at_sandbox",
    "read_questions",
    "rebuild_messages",
    "record_run",
    "sample",
    "sandbox_config",
    "trajectory_id",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'searchtrace.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
