"""Judge runs, deterministic re-execution, and import/export of recorded traces (public surface, loaded lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    from searchtrace.replay._batch_judge import DEFAULT_BATCH_SIZE, DEFAULT_POLL_S, run_batch_judge
    from searchtrace.replay._diff import Divergence, first_divergence
    from searchtrace.replay._grade import SOURCE, Grade, grade_answers
    from searchtrace.replay._judge import (
        BatchCounts,
        JudgeOptions,
        JudgeStats,
        default_judge_run_id,
        open_judge_run,
        run_judge,
        trace_id_of,
    )
    from searchtrace.replay._judge_prompt import (
        DEFAULT_VERSION,
        JudgePrompt,
        get_judge_prompt,
        load_judge_prompt_file,
        versions,
    )
    from searchtrace.replay._reexec import ReplayMiss, ReplayTransport, Tape
    from searchtrace.replay._rerun import ReplayReport, load_recorded, replay_trajectories
    from searchtrace.replay._verdicts import Parsed, parse_verdict, strip_fence
    from searchtrace.replay.interchange import ImportResult, JudgmentLine, TraceLine, export_all, import_files


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "Divergence": "searchtrace.replay._diff",
    "first_divergence": "searchtrace.replay._diff",
    "Grade": "searchtrace.replay._grade",
    "SOURCE": "searchtrace.replay._grade",
    "grade_answers": "searchtrace.replay._grade",
    "JudgeOptions": "searchtrace.replay._judge",
    "JudgeStats": "searchtrace.replay._judge",
    "BatchCounts": "searchtrace.replay._judge",
    "DEFAULT_BATCH_SIZE": "searchtrace.replay._batch_judge",
    "DEFAULT_POLL_S": "searchtrace.replay._batch_judge",
    "run_batch_judge": "searchtrace.replay._batch_judge",
    "default_judge_run_id": "searchtrace.replay._judge",
    "open_judge_run": "searchtrace.replay._judge",
    "run_judge": "searchtrace.replay._judge",
    "trace_id_of": "searchtrace.replay._judge",
    "DEFAULT_VERSION": "searchtrace.replay._judge_prompt",
    "JudgePrompt": "searchtrace.replay._judge_prompt",
    "get_judge_prompt": "searchtrace.replay._judge_prompt",
    "load_judge_prompt_file": "searchtrace.replay._judge_prompt",
    "versions": "searchtrace.replay._judge_prompt",
    "ReplayMiss": "searchtrace.replay._reexec",
    "ReplayTransport": "searchtrace.replay._reexec",
    "Tape": "searchtrace.replay._reexec",
    "ReplayReport": "searchtrace.replay._rerun",
    "load_recorded": "searchtrace.replay._rerun",
    "replay_trajectories": "searchtrace.replay._rerun",
    "Parsed": "searchtrace.replay._verdicts",
    "parse_verdict": "searchtrace.replay._verdicts",
    "strip_fence": "searchtrace.replay._verdicts",
    "ImportResult": "searchtrace.replay.interchange",
    "JudgmentLine": "searchtrace.replay.interchange",
    "TraceLine": "searchtrace.replay.interchange",
    "export_all": "searchtrace.replay.interchange",
    "import_files": "searchtrace.replay.interchange",
}

__all__ = [
    "DEFAULT_VERSION",
    "Divergence",
    "Grade",
    "ImportResult",
    "JudgePrompt",
    "JudgeOptions",
    "JudgeStats",
    "BatchCounts",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_POLL_S",
    "run_batch_judge",
    "JudgmentLine",
    "Parsed",
    "ReplayMiss",
    "ReplayReport",
    "ReplayTransport",
    "SOURCE",
    "Tape",
    "TraceLine",
    "default_judge_run_id",
    "export_all",
    "first_divergence",
    "get_judge_prompt",
    "grade_answers",
    "import_files",
    "load_judge_prompt_file",
    "load_recorded",
    "open_judge_run",
    "parse_verdict",
    "replay_trajectories",
    "run_judge",
    "strip_fence",
    "trace_id_of",
    "versions",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
