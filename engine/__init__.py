"""The engine: the agent loop, the fan-out over (question, provider), run configs, recording and the CLI.

Public surface (imported lazily so importing any engine module stays cheap for the command line):
- `Agent`, `Trajectory`, `Recorder`, `Stats`, `final_answer` (engine._agent); `rebuild_messages` (engine._transcript)
- `Builder`, `fold`, `Folded`, `trajectory_id`, `request_sha256`, `Attempts` (the latest attempt of a cell): a
  trajectory's one home (engine._trajectory)
- `RunConfig`, `load_config`, `parse_config`, `point_at_sandbox`, `sandbox_config` (engine._config)
- `record_run`, `endpoint_factory`, `load_questions`, `RunSummary`, `shard_of`, `plan_cells` (engine._record)
- `fan_out` (engine._fanout); `get_prompt`, `TOOL_SCHEMAS` (engine._prompts, engine._tools)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchtrace._lazy import lazy_exports

if TYPE_CHECKING:  # the lazy exports below, typed for mypy
    import searchtrace.engine._prompt_file as prompt_file
    from searchtrace.engine._agent import (
        Agent,
        Recorder,
        Stats,
        Trajectory,
        final_answer,
    )
    from searchtrace.engine._config import (
        EXAMPLE_CONFIG,
        MAX_EPOCHS,
        PAPER_KINDS,
        PROVIDER_KINDS,
        RPS_RANGE,
        SANDBOX_AGENT,
        SANDBOX_DATASET,
        SECONDS_RANGE,
        RunConfig,
        epochs_problem,
        load_config,
        parse_config,
        point_at_sandbox,
        rate_problem,
        sandbox_config,
    )
    from searchtrace.engine._documents import document_block
    from searchtrace.engine._fanout import bad_input_alone, fan_out, worker_pool
    from searchtrace.engine._logs import configure_logging
    from searchtrace.engine._prices import (
        ModelPrice,
        Prices,
        fetched_usd,
        load_prices,
        model_usd,
        parse_prices,
        searches_usd,
    )
    from searchtrace.engine._progress import progress_display
    from searchtrace.engine._prompt_file import PromptFile, from_blob, is_file_version
    from searchtrace.engine._prompts import from_prompt_file, get_prompt
    from searchtrace.engine._record import (
        CLIENT_LOOPS,
        AdapterFactory,
        Endpoints,
        Question,
        RunSummary,
        ShardPlan,
        dataset_id,
        endpoint_factory,
        load_questions,
        make_agents,
        open_run,
        plan_cells,
        preflight,
        question_file,
        record_run,
        run_opening,
        run_started,
        run_stream,
        shard_of,
    )
    from searchtrace.engine._sample import STRATA, parse_columns, read_questions, sample, to_jsonl
    from searchtrace.engine._tools import TOOL_SCHEMAS
    from searchtrace.engine._trajectory import (
        Attempts,
        Builder,
        DocConflict,
        Fetch,
        Folded,
        Search,
        Step,
        canonical,
        fold,
        request_sha256,
        trajectory_id,
    )
    from searchtrace.engine._transcript import assistant_message, rebuild_messages


# exported name -> defining module ("module:attr" when exported under another name), imported on first
# use so that importing the package stays cheap (command-line start-up)
_EXPORTS: dict[str, str] = {
    "Agent": "searchtrace.engine._agent",
    "Recorder": "searchtrace.engine._agent",
    "Stats": "searchtrace.engine._agent",
    "Trajectory": "searchtrace.engine._agent",
    "final_answer": "searchtrace.engine._agent",
    "EXAMPLE_CONFIG": "searchtrace.engine._config",
    "MAX_EPOCHS": "searchtrace.engine._config",
    "PAPER_KINDS": "searchtrace.engine._config",
    "PROVIDER_KINDS": "searchtrace.engine._config",
    "RPS_RANGE": "searchtrace.engine._config",
    "RunConfig": "searchtrace.engine._config",
    "SANDBOX_AGENT": "searchtrace.engine._config",
    "SANDBOX_DATASET": "searchtrace.engine._config",
    "SECONDS_RANGE": "searchtrace.engine._config",
    "epochs_problem": "searchtrace.engine._config",
    "load_config": "searchtrace.engine._config",
    "parse_config": "searchtrace.engine._config",
    "point_at_sandbox": "searchtrace.engine._config",
    "rate_problem": "searchtrace.engine._config",
    "sandbox_config": "searchtrace.engine._config",
    "document_block": "searchtrace.engine._documents",
    "bad_input_alone": "searchtrace.engine._fanout",
    "fan_out": "searchtrace.engine._fanout",
    "worker_pool": "searchtrace.engine._fanout",
    "configure_logging": "searchtrace.engine._logs",
    "ModelPrice": "searchtrace.engine._prices",
    "Prices": "searchtrace.engine._prices",
    "load_prices": "searchtrace.engine._prices",
    "model_usd": "searchtrace.engine._prices",
    "searches_usd": "searchtrace.engine._prices",
    "fetched_usd": "searchtrace.engine._prices",
    "parse_prices": "searchtrace.engine._prices",
    "progress_display": "searchtrace.engine._progress",
    "PromptFile": "searchtrace.engine._prompt_file",
    "from_blob": "searchtrace.engine._prompt_file",
    "is_file_version": "searchtrace.engine._prompt_file",
    "from_prompt_file": "searchtrace.engine._prompts",
    "get_prompt": "searchtrace.engine._prompts",
    "Question": "searchtrace.engine._record",
    "RunSummary": "searchtrace.engine._record",
    "endpoint_factory": "searchtrace.engine._record",
    "load_questions": "searchtrace.engine._record",
    "make_agents": "searchtrace.engine._record",
    "preflight": "searchtrace.engine._record",
    "question_file": "searchtrace.engine._record",
    "record_run": "searchtrace.engine._record",
    "run_started": "searchtrace.engine._record",
    "run_opening": "searchtrace.engine._record",
    "open_run": "searchtrace.engine._record",
    "dataset_id": "searchtrace.engine._record",
    "CLIENT_LOOPS": "searchtrace.engine._record",
    "run_stream": "searchtrace.engine._record",
    "shard_of": "searchtrace.engine._record",
    "AdapterFactory": "searchtrace.engine._record",
    "Endpoints": "searchtrace.engine._record",
    "ShardPlan": "searchtrace.engine._record",
    "plan_cells": "searchtrace.engine._record",
    "STRATA": "searchtrace.engine._sample",
    "read_questions": "searchtrace.engine._sample",
    "parse_columns": "searchtrace.engine._sample",
    "sample": "searchtrace.engine._sample",
    "to_jsonl": "searchtrace.engine._sample",
    "TOOL_SCHEMAS": "searchtrace.engine._tools",
    "Attempts": "searchtrace.engine._trajectory",
    "Builder": "searchtrace.engine._trajectory",
    "DocConflict": "searchtrace.engine._trajectory",
    "Fetch": "searchtrace.engine._trajectory",
    "Folded": "searchtrace.engine._trajectory",
    "Search": "searchtrace.engine._trajectory",
    "Step": "searchtrace.engine._trajectory",
    "canonical": "searchtrace.engine._trajectory",
    "fold": "searchtrace.engine._trajectory",
    "request_sha256": "searchtrace.engine._trajectory",
    "trajectory_id": "searchtrace.engine._trajectory",
    "assistant_message": "searchtrace.engine._transcript",
    "rebuild_messages": "searchtrace.engine._transcript",
}
# modules exported whole, as namespaces (`blobs.get(...)`)
_MODULES: dict[str, str] = {
    "prompt_file": "searchtrace.engine._prompt_file",
}

__all__ = [
    "Agent",
    "Attempts",
    "Builder",
    "DocConflict",
    "Fetch",
    "Folded",
    "Search",
    "Step",
    "canonical",
    "fold",
    "EXAMPLE_CONFIG",
    "MAX_EPOCHS",
    "ModelPrice",
    "PAPER_KINDS",
    "PROVIDER_KINDS",
    "Prices",
    "PromptFile",
    "Question",
    "RPS_RANGE",
    "Recorder",
    "RunConfig",
    "RunSummary",
    "SANDBOX_AGENT",
    "SANDBOX_DATASET",
    "SECONDS_RANGE",
    "STRATA",
    "Stats",
    "TOOL_SCHEMAS",
    "Trajectory",
    "assistant_message",
    "bad_input_alone",
    "configure_logging",
    "document_block",
    "endpoint_factory",
    "epochs_problem",
    "fan_out",
    "final_answer",
    "from_blob",
    "from_prompt_file",
    "get_prompt",
    "is_file_version",
    "load_config",
    "load_prices",
    "load_questions",
    "make_agents",
    "model_usd",
    "searches_usd",
    "fetched_usd",
    "parse_columns",
    "parse_config",
    "parse_prices",
    "point_at_sandbox",
    "preflight",
    "progress_display",
    "prompt_file",
    "question_file",
    "rate_problem",
    "read_questions",
    "rebuild_messages",
    "record_run",
    "request_sha256",
    "run_opening",
    "run_started",
    "run_stream",
    "open_run",
    "dataset_id",
    "CLIENT_LOOPS",
    "sample",
    "sandbox_config",
    "shard_of",
    "AdapterFactory",
    "Endpoints",
    "ShardPlan",
    "plan_cells",
    "to_jsonl",
    "trajectory_id",
    "worker_pool",
]


if not TYPE_CHECKING:  # mypy sees only the names above: an import of a name not exported fails it
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _MODULES)
