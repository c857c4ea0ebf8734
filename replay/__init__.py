"""Judge runs, deterministic re-execution, and import/export of recorded traces (public surface, loaded lazily)."""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module that defines it; imported on first use so `import replay` stays cheap
_EXPORTS: dict[str, str] = {
    # judge runs (SPEC §4)
    "run_judge": "searchtrace.replay.judge",
    "JudgeStats": "searchtrace.replay.judge",
    "default_judge_run_id": "searchtrace.replay.judge",
    "trace_id_of": "searchtrace.replay.judge",
    "JudgePrompt": "searchtrace.replay.judge_prompt",
    "get_judge_prompt": "searchtrace.replay.judge_prompt",
    "Parsed": "searchtrace.replay.verdicts",
    "parse_verdict": "searchtrace.replay.verdicts",
    "strip_fence": "searchtrace.replay.verdicts",
    # re-execution
    "ReplayTransport": "searchtrace.replay.reexec",
    "ReplayMiss": "searchtrace.replay.reexec",
    "Tape": "searchtrace.replay.reexec",
    "Divergence": "searchtrace.replay.diff",
    "first_divergence": "searchtrace.replay.diff",
    "ReplayReport": "searchtrace.replay.rerun",
    "load_recorded": "searchtrace.replay.rerun",
    "replay_trajectories": "searchtrace.replay.rerun",
    # interchange (SPEC §9)
    "import_files": "searchtrace.replay.interchange",
    "ImportResult": "searchtrace.replay.interchange",
    "export_all": "searchtrace.replay.interchange",
    "TraceLine": "searchtrace.replay.interchange",
    "JudgmentLine": "searchtrace.replay.interchange",
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
