"""Judge every recorded item (docs/concepts/judge.md) with a chat model: the real endpoint or the sandbox judge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from searchtrace.adapters import (
    API_ENDPOINTS,
    BATCH_APIS,
    SANDBOX_KEY,
    ClosableChat,
    JinaFetcher,
    OpenAIChat,
    build_chat,
    build_fetcher,
    default_cache_dir,
    default_endpoint,
    sandbox_endpoint,
)
from searchtrace.adapters.sandbox import in_process
from searchtrace.engine import RPS_RANGE, SECONDS_RANGE, rate_problem
from searchtrace.pipeline._live import live
from searchtrace.pipeline._recording import check_sandbox_url
from searchtrace.replay import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_POLL_S,
    DEFAULT_VERSION,
    JudgeOptions,
    JudgePrompt,
    JudgeStats,
    default_judge_run_id,
    load_judge_prompt_file,
    resolve_prompt,
    run_backfill,
    run_batch_judge,
    run_judge,
)
from searchtrace.store import (
    BadInput,
    EventLog,
    JudgeDefault,
    NewEvent,
    Shipped,
    check_url,
    judge_stream,
    require_database,
)

SANDBOX_JUDGE = "sandbox-judge"
MAX_BATCH = 50_000  # OpenAI's limit of requests per batch file (Anthropic's is 100,000)
DEFAULT_RPS = 5.0  # a conservative real-endpoint rate (entry-tier limits); raise it with --rps


class BatchPlan(msgspec.Struct, frozen=True, kw_only=True):
    """`judge --batch`'s settings: items per batch, seconds between polls, what happens to an item two batches did
    not answer (None: left for a later run)."""

    size: int = DEFAULT_BATCH_SIZE
    poll_s: float = DEFAULT_POLL_S
    fallback: Literal["online"] | None = None


class JudgePlan(msgspec.Struct, frozen=True, kw_only=True):
    """A judge run's settings with every default filled in and checked: what `judge_chat` and `judge` take."""

    model: str
    judge_run_id: str
    prompt_version: str | None  # None: the built-in default (or, resuming a named run, the run's own)
    prompt: JudgePrompt | None  # a prompt file's prompt
    rps: float
    concurrency: int
    timeout_s: float
    max_retries: int
    base_url: str | None = None
    key_env: str | None = None
    sandbox: bool = False
    sandbox_url: str | None = None
    params: dict[str, Any] = {}  # recorded in judge.started: rate, retries, timeout, which endpoint
    api: str = "chat"  # the model API the judge is asked over (docs/how-to/claude-gemini.md)
    batch: BatchPlan | None = None  # judge through the model API's batch endpoint (docs/how-to/batch.md)

    def options(self) -> JudgeOptions:
        """What `judge` opens the run with."""
        return JudgeOptions(model=self.model, judge_run_id=self.judge_run_id, prompt_version=self.prompt_version,
                            prompt=self.prompt, concurrency=self.concurrency, params=self.params)



def plan_judge(
    db: Path, *, model: str | None = None, base_url: str | None = None, key_env: str | None = None,
    prompt_version: str | None = None, prompt_file: Path | None = None, judge_run_id: str | None = None,
    rps: float | None = None, concurrency: int = 8, timeout_s: float = 120.0, max_retries: int = 4,
    sandbox: bool = False, sandbox_url: str | None = None, api: str = "chat", batch: BatchPlan | None = None,
) -> JudgePlan:
    """The judge's defaults: the sandbox judge model and no rate limit on a sandbox, DEFAULT_RPS on a real endpoint,
    the run id `<model>@<prompt version>` (the same command resumes the same run); BadInput for a bad value."""
    if sandbox and sandbox_url:
        raise BadInput("use either --sandbox or --sandbox-url, not both")
    check_sandbox_url(sandbox_url)
    sandboxed = sandbox or bool(sandbox_url)
    if model is None:
        if not sandboxed:
            raise BadInput("--model is required (or use --sandbox)")
        model = SANDBOX_JUDGE
    if rps is None:
        rps = 0.0 if sandboxed else DEFAULT_RPS
    if rps < 0 or concurrency < 1 or timeout_s <= 0 or max_retries < 0:
        raise BadInput("--rps must be >= 0, --concurrency >= 1, --timeout > 0 and --max-retries >= 0")
    if batch is not None:
        if api not in BATCH_APIS:
            raise BadInput(f"--batch: the {api} API has no batch endpoint here; use --api chat, responses or anthropic")
        if batch.size < 1 or batch.size > MAX_BATCH or not 0 <= batch.poll_s <= SECONDS_RANGE[1]:
            raise BadInput(f"--batch-size must be 1 to {MAX_BATCH:,} and --poll-s 0 to {SECONDS_RANGE[1]:g} "
                           f"(got {batch.size}, {batch.poll_s:g})")
    if problem := (rate_problem("--rps", rps, RPS_RANGE, zero_ok=True)
                   or rate_problem("--timeout", timeout_s, SECONDS_RANGE)):
        raise BadInput(problem)
    require_database(db)
    prompt = None
    if prompt_file is not None:
        if prompt_version is not None:
            raise BadInput("use either --prompt-version or --prompt-file, not both")
        prompt = load_judge_prompt_file(prompt_file)
        prompt_version = prompt.version
    params = {"rps": rps, "max_retries": max_retries, "timeout_s": timeout_s,
              "endpoint": "sandbox" if sandbox else (sandbox_url or base_url or "default")}
    if api != "chat":  # a chat judge keeps its judge.started bytes
        params["api"] = api
    # without a judge run id the run id names the prompt; with one, an unnamed prompt resumes the run's own
    return JudgePlan(
        model=model, judge_run_id=judge_run_id or default_judge_run_id(model, prompt_version or DEFAULT_VERSION),
        prompt_version=prompt_version, prompt=prompt, rps=rps, concurrency=concurrency, timeout_s=timeout_s,
        max_retries=max_retries, base_url=base_url, key_env=key_env, sandbox=sandbox, sandbox_url=sandbox_url,
        params=params, api=api, batch=batch,
    )


def judge_chat(
    *, model: str, base_url: str | None = None, key_env: str | None = None, rps: float, concurrency: int,
    timeout_s: float, max_retries: int, sandbox: bool = False, sandbox_url: str | None = None, api: str = "chat",
) -> ClosableChat:
    """The judge's chat adapter over `api` (chat, responses, anthropic, gemini): the production one, in-process for
    `sandbox`, or at `sandbox_url`."""
    limits: dict[str, Any] = {"rps": rps, "concurrency": concurrency, "timeout_s": timeout_s, "max_retries": max_retries}
    endpoint = API_ENDPOINTS.get(api, "openai")
    if sandbox or sandbox_url:
        box = in_process() if sandbox else None
        root = box.root if box is not None else str(sandbox_url)
        return build_chat(model, sandbox_endpoint(endpoint, root, **limits),
                          transport=box.transport if box is not None else None, key_fallback=SANDBOX_KEY, api=api)
    return build_chat(model, default_endpoint(endpoint, base_url=base_url, key_env=key_env, **limits), api=api)


def backfill_fetcher(*, sandbox: bool, sandbox_url: str | None) -> JinaFetcher:
    """The fetch backend `judge --backfill-pages` reads pages through (docs/how-to/hosted.md): the sandbox's (in
    process, or at `sandbox_url`) or the configured one, with the shared page cache."""
    cache = default_cache_dir()
    if sandbox or sandbox_url:
        box = in_process() if sandbox else None
        endpoint = sandbox_endpoint("jina", box.root if box is not None else str(sandbox_url))
        return build_fetcher("jina", endpoint, cache_dir=cache / "sandbox", key_fallback=SANDBOX_KEY,
                             transport=box.transport if box is not None else None)
    return build_fetcher("jina", default_endpoint("jina"), cache_dir=cache)


async def judge(
    db: Path, chat: ClosableChat, options: JudgeOptions, *, progress: Callable[[JudgeStats], None] | None = None,
    ship_to: str | None = None, on_shipped: Callable[[Shipped], None] | None = None, batch: BatchPlan | None = None,
    backfill: JinaFetcher | None = None,
) -> JudgeStats:
    """Opens the store, judges what this judge run has no verdict for yet (then, with a `backfill` fetcher, the pages
    of the items whose text the caller never received), then closes the chat, the fetcher and the store.

    `ship_to`: a PostgreSQL log the store's committed events are shipped to every second and at the end (docs/how-to/scale.md)."""
    if ship_to is not None:
        check_url(ship_to)
    log = await anyio.to_thread.run_sync(lambda: EventLog(db))
    try:
        with live(log, ship_to, on_shipped):
            if batch is not None:
                assert isinstance(chat, OpenAIChat)  # every judge_chat is
                return await run_batch_judge(log, options, chat=chat, progress=progress, batch_size=batch.size,
                                             poll_s=batch.poll_s, fallback=batch.fallback)
            stats = await run_judge(log, options, chat=chat, progress=progress)
            if backfill is not None and stats.stopped is None:
                used = options.prompt or resolve_prompt(log, options.prompt_version, stats.judge_run_id)
                await run_backfill(log, judge_run_id=stats.judge_run_id, prompt=used, chat=chat, fetcher=backfill,
                                   concurrency=options.concurrency, progress=progress, stats=stats)
            return stats
    finally:
        await chat.aclose()
        if backfill is not None:
            await backfill.aclose()
        await anyio.to_thread.run_sync(log.close)


def make_default(db: Path, judge_run_id: str) -> bool:
    """`judge --default`: record that `judge_run_id` is the judge run report, view and export use when none is named
    (docs/how-to/judge-runs.md); False when `judge --default` already made it so (nothing recorded). BadInput for a
    judge run the store does not hold."""
    from searchtrace.analytics import MADE_DEFAULT, choose_judge_run, sources

    require_database(db)
    with EventLog(db) as log:
        cur = log.cursor()
        try:
            with sources.reading(cur, writable=True):
                now = choose_judge_run(cur, None)
                if (now.judge_run_id, now.how) == (judge_run_id, MADE_DEFAULT):
                    return False
                choose_judge_run(cur, judge_run_id)  # BadInput when the store has no such judge run
        finally:
            cur.close()
        log.append([NewEvent(stream_id=judge_stream(judge_run_id), run_id=judge_run_id,
                             payload=JudgeDefault(judge_run_id=judge_run_id))])
    return True
