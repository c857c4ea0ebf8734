"""Judge runs, deterministic re-execution, and import/export of recorded traces (public surface, loaded lazily)."""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module that defines it; imported on first use so `import replay` stays cheap
_EXPORTS: dict[str, str] = {
    # judge runs (SPEC §4)
    "run_judge": "replay.judge",
    "JudgeStats": "replay.judge",
    "default_judge_run_id": "replay.judge",
    "trace_id_of": "replay.judge",
    "JudgePrompt": "replay.judge_prompt",
    "get_judge_prompt": "replay.judge_prompt",
    "Parsed": "replay.verdicts",
    "parse_verdict": "replay.verdicts",
    "strip_fence": "replay.verdicts",
    # re-execution
    "ReplayTransport": "replay.reexec",
    "ReplayMiss": "replay.reexec",
    "Tape": "replay.reexec",
    "Divergence": "replay.diff",
    "first_divergence": "replay.diff",
    "ReplayReport": "replay.rerun",
    "load_recorded": "replay.rerun",
    "replay_trajectories": "replay.rerun",
    # interchange (SPEC §9)
    "import_files": "replay.importer",
    "ImportResult": "replay.importer",
    "export_all": "replay.export",
    "TraceLine": "replay.interchange",
    "JudgmentLine": "replay.interchange",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
