"""A recorded run: `run.started` (config, never keys), `dataset.question`s, the fan-out, `run.finished`; resumable.

Resume: the run id is the config's `run_id` or derived from its identity hash, trajectory ids derive from
(run_id, provider, qid, epoch, attempt), and each trajectory is one atomic append. Running the same config against the
same store again therefore records exactly the (question, provider) cells that are not final yet, and a final
cell causes no call at all. A cell is final when its latest attempt finished `answered` or `max_iterations`, or
finished `error` as attempt `limits.max_attempts`. A latest attempt that finished `error` earlier is recorded
again as attempt n+1 (trajectory id `<run_id>:<provider>:<qid>#<n+1>`, its `trajectory.started` naming the
errored one in `supersedes`); nothing is updated or deleted, the analytics read only the latest attempt.
`run.finished` is appended once every cell is final.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import structlog

from searchtrace.adapters import (
    HOSTED_LAYERS,
    SANDBOX_KEY,
    ChatModel,
    Endpoint,
    Fetcher,
    MissingKey,
    SearchProvider,
    build_chat,
    build_fetcher,
    build_search,
    read_key,
)
from searchtrace.engine._agent import Agent, Stats, Trajectory
from searchtrace.engine._config import SANDBOX_DATASET, EndpointCfg, RunConfig
from searchtrace.engine._fanout import Runner, bad_input_alone, fan_out
from searchtrace.engine._hosted_agent import HostedAgent
from searchtrace.engine._prompts import Prompt, get_prompt
from searchtrace.engine._sample import (
    STRATA,
    answer_aliases,
    format_of,
    map_columns,
    prepare,
    read_questions,
    sample,
)
from searchtrace.engine._trajectory import Attempts
from searchtrace.store import (
    BadInput,
    DatasetQuestion,
    EventLog,
    NewEvent,
    RunFinished,
    RunStarted,
    open_writer,
    shown,
    stable_event_id,
)

log = structlog.get_logger("searchtrace.record")


class Question(msgspec.Struct, frozen=True, kw_only=True):
    qid: str
    question: str
    answer: str  # the gold answer: the first of `aliases`
    strata: dict[str, str] = {}
    aliases: list[str] = []  # docs/how-to/compare.md: every accepted answer when there are several (else empty)

    def dataset_event(self) -> DatasetQuestion:
        """Its `dataset.question` payload (the aliases only when there are several: one-answer events keep their bytes)."""
        return DatasetQuestion(qid=self.qid, question=self.question, gold_answer=self.answer, strata=dict(self.strata),
                               gold_aliases=list(self.aliases) if len(self.aliases) > 1 else msgspec.UNSET)


class Endpoints(msgspec.Struct, kw_only=True):
    """The live adapters of a run: one chat model, one fetch backend, one search adapter per provider name."""

    chat: ChatModel
    fetch: Fetcher
    search: dict[str, SearchProvider]
    hosted: dict[str, HostedAgent] = {}  # docs/how-to/hosted.md: the run's hosted search layers, by provider name


class RunSummary(msgspec.Struct, kw_only=True):
    run_id: str
    trajectories: int
    already: int
    recorded: int
    reasons: dict[str, int]
    failed: int
    model_calls: int
    search_calls: int
    fetch_calls: int
    retries: int
    input_tokens: int
    output_tokens: int
    elapsed_s: float
    finished: bool
    retried: int = 0  # cells whose latest attempt had ended in `error`, recorded again by this invocation
    errored_final: int = 0  # cells whose every attempt (limits.max_attempts) ended in `error`: final, not retried
    superseded: int = 0  # errored attempts in the store replaced by a later attempt of the same cell
    to_retry: int = 0  # cells whose latest attempt ended in `error`: the next `record` records them again
    error_kinds: dict[str, int] = {}  # why this invocation's trajectories ended in `error` (dns, timeout, http_error...)


def code_version() -> str:
    try:
        return version("searchtrace")
    except PackageNotFoundError:
        return "unknown"


def run_stream(run_id: str) -> str:
    return f"run:{run_id}"


CLIENT_LOOPS = ("proxy", "collect", "mcp")
"""run.started config keys of the commands that record a client's own agent loop (`searchtrace proxy`, `collect`,
`mcp`): there is no agent loop of ours to re-run, and another command's run is not theirs to continue."""


def dataset_id(path: str) -> str:
    """A question file's id in a run config: its name and the head of its sha256 (`sandbox` for the sandbox's set)."""
    if path == "sandbox":
        return "sandbox"
    return f"{Path(path).name}:{hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]}"


def run_opening(run_id: str, config: dict[str, Any], questions: Iterable[DatasetQuestion], *,
                code: str | None = None) -> list[NewEvent]:
    """The events that open a run: `run.started` (its config, never keys; `code` the version, default this one),
    then its `dataset.question`s, under the ids every path that opens a run gives them (record, proxy, collect, a
    run.jsonl import), so a run opened again adds nothing."""
    stream = run_stream(run_id)
    started = RunStarted(run_id=run_id, config=config, code_version=code_version() if code is None else code)
    return [NewEvent(stream_id=stream, run_id=run_id, payload=started, event_id=stable_event_id("run.started", run_id)),
            *(NewEvent(stream_id=stream, run_id=run_id, payload=q,
                       event_id=stable_event_id("dataset.question", run_id, q.qid)) for q in questions)]


def open_run(log_: EventLog, run_id: str, config: dict[str, Any], questions: Iterable[Question], *,
             by: str) -> list[NewEvent]:
    """The opening events of a run that `by` (one of CLIENT_LOOPS) records, when the run is new; none when `by`
    opened it before (a restart continues it); a run another command recorded is refused."""
    started = run_started(log_, run_id)
    if started is None:
        return run_opening(run_id, config, [q.dataset_event() for q in questions])
    if by not in started.config:
        other = next((k for k in CLIENT_LOOPS if k in started.config), "record")
        raise BadInput(f"run {shown(run_id)} is in {log_.path} recorded by `{other}`; choose another --run-id")
    return []


def load_questions(cfg: RunConfig, rows: Sequence[dict[str, Any]] | None = None) -> list[Question]:
    """The run's questions: the file, or `rows` (the sandbox's own set), sampled per docs/concepts/protocol.md when `sample.n` is set."""
    return question_file(cfg.dataset.path, cfg.sample.n, cfg.sample.seed, rows=rows, columns=cfg.dataset.columns)


def question_file(path: str, n: int | None = None, seed: str = "searchtrace", *,
                  rows: Sequence[dict[str, Any]] | None = None, columns: dict[str, str] | None = None) -> list[Question]:
    """The questions of a file (JSONL / CSV / Parquet), sampled when `n` is set, its columns mapped by `columns`
    (docs/how-to/compare.md). The dataset `sandbox` is the sandbox world's own set: the application layer, which starts the
    sandbox, passes its `rows`."""
    if path == SANDBOX_DATASET and rows is None:
        raise BadInput(f"dataset {shown(path)}: the sandbox world's questions, given only where a command runs the sandbox")
    json_lists = rows is None and format_of(Path(path)) == "csv"  # a CSV cell holds an alias list as a JSON array
    rows, used = map_columns(list(rows) if rows is not None else read_questions(path), columns or {}, path)
    answer_col = used.get("answer", "answer")
    source = path
    have_strata = bool(rows) and all(all(isinstance(r.get(c), str) for c in STRATA) for r in rows)
    strata = STRATA if have_strata else ()
    prepared = prepare(rows, source, strata)
    file_row = {qid: k for k, (qid, _, _) in enumerate(prepared, start=1)}  # an error names the row in the file
    if n is not None:
        if n > len(rows):
            raise BadInput(f"sample.n = {n} is more than the {len(rows)} questions in {source}")
        chosen = sample(rows, n, seed, source=source, strata=strata)
    else:
        chosen = [row for _, _, row in prepared]
    out = []
    for row in chosen:
        where = f"{source}: question {shown(row.get('qid'))} (row {file_row[row['qid']]})"
        if "answer" not in row:
            raise BadInput(f"{where}: no answer column (name it with [dataset] columns, e.g. answer = \"answers\")")
        aliases = answer_aliases(row["answer"], where, column=answer_col, json_lists=json_lists)
        out.append(
            Question(
                qid=str(row["qid"]),
                question=str(row["question"]),
                answer=aliases[0],
                strata={c: str(row[c]) for c in STRATA if isinstance(row.get(c), str)},
                aliases=aliases if len(aliases) > 1 else [],
            )
        )
    return out


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """The latest recorded attempt of one (question, provider) cell."""

    trajectory_id: str
    attempt: int
    supersedes: str | None
    reason: str | None  # None: started but not finished (cannot happen: a trajectory is one atomic append)


class RunState(msgspec.Struct, kw_only=True):
    started: RunStarted | None
    latest: dict[tuple[str, str, int], Attempt]  # (provider, qid, epoch) -> its latest attempt
    superseded: int  # attempts replaced by a later one (each ended in `error`)
    has_finished: bool


_STATE_SQL = """
SELECT stream_id, type, j[1], j[2], j[3], j[4], j[5], j[6], j[7]
FROM (SELECT stream_id, type, position,
             json_extract_string(payload, ['$.trajectory_id', '$.provider', '$.qid', '$.attempt', '$.supersedes',
                                           '$.reason', '$.epoch']) AS j
      FROM events WHERE run_id = ? AND type IN ('trajectory.started', 'trajectory.finished', 'run.finished'))
ORDER BY position
"""


def run_started(log_: EventLog, run_id: str) -> RunStarted | None:
    """The run.started of a run, or None (not recorded yet, or imported traces)."""
    for ev in log_.read(stream_id=run_stream(run_id), types=["run.started"]):
        assert isinstance(ev.payload, RunStarted)
        return ev.payload
    return None


def _run_state(log_: EventLog, run_id: str) -> RunState:
    """The run.started of this run (or None), the latest attempt of every recorded cell, and whether run.finished is in."""
    prev = run_started(log_, run_id)
    cur = log_.cursor()
    try:
        rows = cur.execute(_STATE_SQL, [run_id]).fetchall()
    finally:
        cur.close()
    heads: dict[str, tuple[str, str, int, str, int, str | None]] = {}
    reasons: dict[str, str] = {}
    attempts = Attempts()  # the one rule of which attempt is a cell's latest (analytics read the same)
    has_finished = False
    for stream, typ, tid, provider, qid, attempt, supersedes, reason, epoch in rows:
        if typ == "trajectory.started":
            heads.setdefault(stream, (str(provider), str(qid), int(epoch or 1), str(tid), int(attempt or 1), supersedes))
            attempts.add(str(tid), supersedes)
        elif typ == "trajectory.finished":
            reasons.setdefault(stream, str(reason))
        else:
            has_finished = True
    latest: dict[tuple[str, str, int], Attempt] = {}
    for stream, (provider, qid, epoch, tid, attempt, supersedes) in heads.items():  # position order: later win ties
        if not attempts.is_latest(tid):
            continue
        have = latest.get((provider, qid, epoch))
        if have is None or attempt >= have.attempt:  # a cell has one latest attempt; should two claim it, the higher
            latest[(provider, qid, epoch)] = Attempt(trajectory_id=tid, attempt=attempt, supersedes=supersedes,
                                                     reason=reasons.get(stream))
    superseded = sum(not attempts.is_latest(h[3]) for h in heads.values())
    return RunState(started=prev, latest=latest, superseded=superseded, has_finished=has_finished)


Shard = tuple[int, int]  # (i, n): shard i of n, 0 <= i < n


def shard_of(provider: str, qid: str, epoch: int, n: int) -> int:
    """docs/how-to/scale.md: the shard of a cell among n, a stable hash of (provider, qid, epoch) (the same on every machine)."""
    digest = hashlib.sha256(f"{provider}\x1f{qid}\x1f{epoch}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def next_attempt(latest: Attempt | None, max_attempts: int) -> tuple[int, str | None] | None:
    """(attempt, supersedes) to record for a cell, or None when the cell is final."""
    if latest is None:
        return 1, None
    if latest.reason is None:  # a stream without its end: retried under the same id (the append then says so)
        return latest.attempt, latest.supersedes
    if latest.reason == "error" and latest.attempt < max_attempts:
        return latest.attempt + 1, latest.trajectory_id
    return None


def _plan(cfg: RunConfig, questions: list[Question], state: RunState, shard: Shard | None = None) -> list[Trajectory]:
    """The trajectories to record now: every cell (of `shard`, when given) that is not final, in
    epoch-then-question-then-provider order."""
    run_id, jobs = cfg.effective_run_id(), []
    for e in range(1, cfg.run.epochs + 1):
        for q in questions:
            for p in sorted(cfg.providers):
                if shard is not None and shard_of(p, q.qid, e, shard[1]) != shard[0]:
                    continue
                nxt = next_attempt(state.latest.get((p, q.qid, e)), cfg.limits.max_attempts)
                if nxt is not None:
                    jobs.append(Trajectory(run_id=run_id, provider=p, qid=q.qid, question=q.question,
                                           gold_answer=q.answer, attempt=nxt[0], supersedes=nxt[1], epoch=e))
    return jobs


def _finish_counts(state: RunState) -> dict[str, int]:
    """run.finished counts: finish reasons of the latest attempt per cell, cells, and superseded attempts."""
    counts: dict[str, int] = {}
    for a in state.latest.values():
        if a.reason is not None:
            counts[a.reason] = counts.get(a.reason, 0) + 1
    counts["trajectories"] = sum(counts.values())
    counts["superseded"] = state.superseded
    return counts


class ShardPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What a `record` of one shard (or of the whole run) would do on a store now."""

    cells: int  # the cells of the shard
    to_record: int  # of them not final in this store


class _Planned(msgspec.Struct, frozen=True, kw_only=True):
    state: RunState  # the run as the store holds it now
    jobs: list[Trajectory]
    cells: int  # of the shard (of the run without one)


def _planned(cfg: RunConfig, log_: EventLog, questions: list[Question], shard: Shard | None) -> _Planned:
    """The one plan of `record_run` and `plan_cells`; BadInput when the store holds the run under another protocol."""
    run_id = cfg.effective_run_id()
    state = _run_state(log_, run_id)
    if state.started is not None and state.started.config.get("identity_sha256") != cfg.identity_sha256():
        raise BadInput(f"run {shown(run_id)} is already in {log_.path} with a different protocol (model, prompt, providers, "
                       "params, dataset or sample); set another run_id to record a new run")
    names, epochs = sorted(cfg.providers), cfg.run.epochs
    cells = len(questions) * len(names) * epochs if shard is None else sum(
        shard_of(p, q.qid, e, shard[1]) == shard[0] for e in range(1, epochs + 1) for q in questions for p in names)
    return _Planned(state=state, jobs=_plan(cfg, questions, state, shard), cells=cells)


def plan_cells(cfg: RunConfig, log_: EventLog, questions: list[Question], shard: Shard | None = None) -> ShardPlan:
    """The plan `record_run` would make on this store, without recording (a coordinator plans its shards with it);
    BadInput when the store holds the run under another protocol."""
    planned = _planned(cfg, log_, questions, shard)
    return ShardPlan(cells=planned.cells, to_record=len(planned.jobs))


AdapterFactory = Callable[[RunConfig, AsyncExitStack], Awaitable[Endpoints]]


async def record_run(
    cfg: RunConfig,
    log_: EventLog,
    make_endpoints: AdapterFactory,
    *,
    stats: Stats | None = None,
    on_progress: Callable[[], None] | None = None,
    questions: list[Question] | None = None,
    shard: Shard | None = None,
) -> RunSummary:
    """Records every trajectory of the run that the store does not hold yet; returns the counters.

    With `shard` (i, n) only the cells of shard i (`shard_of`): the store is then one segment of the run (docs/how-to/scale.md),
    merged with the others later, and it never appends `run.finished` (the coordinator's: a `record` without a
    shard on the merged store, which finds every cell recorded, appends it)."""
    t0 = time.perf_counter()
    run_id = cfg.effective_run_id()
    prompt = get_prompt(cfg.agent.prompt_version)
    if questions is None:
        questions = await anyio.to_thread.run_sync(load_questions, cfg)
    planned = await anyio.to_thread.run_sync(_planned, cfg, log_, questions, shard)
    state, jobs, cells, max_attempts = planned.state, planned.jobs, planned.cells, cfg.limits.max_attempts
    prev = state.started
    retried = sum((a := state.latest.get((j.provider, j.qid, j.epoch))) is not None and a.reason == "error" for j in jobs)
    stats = stats or Stats()
    already = cells - len(jobs)
    stats.total = len(jobs)
    log.info("run planned", run_id=run_id, trajectories=cells, already=already, to_record=len(jobs),
             retried=retried)
    if on_progress is not None:
        on_progress()
    with bad_input_alone():  # a rejected key: one BadInput, not the task groups' exception group
        async with AsyncExitStack() as stack:
            eps = await make_endpoints(cfg, stack) if jobs else None  # a missing key fails here, before any write
            writer = await stack.enter_async_context(open_writer(log_))
            if prev is None:
                await writer.append(_run_head(cfg, run_id, questions), expected={run_stream(run_id): -1},
                                    blobs=[prompt.blob] if prompt.blob is not None else [])
            if eps is not None:
                await fan_out(jobs, make_agents(cfg, eps, prompt, stats=stats), writer,
                              max_concurrent=min(cfg.limits.max_trajectories, len(jobs)), on_progress=on_progress)
            after = await anyio.to_thread.run_sync(_run_state, log_, run_id)
            complete = not _plan(cfg, questions, after, shard)
            if complete and not after.has_finished and shard is None:
                ev = NewEvent(
                    stream_id=run_stream(run_id),
                    run_id=run_id,
                    payload=RunFinished(counts=_finish_counts(after)),
                    event_id=stable_event_id("run.finished", run_id),
                )
                await writer.append([ev])
    log.info("run stopped" if not complete else "run finished", run_id=run_id, recorded=stats.done, reasons=stats.reasons)
    return RunSummary(
        run_id=run_id,
        trajectories=cells,
        already=already,
        recorded=stats.done,
        reasons=dict(stats.reasons),
        error_kinds=dict(stats.error_kinds),
        failed=stats.failed,
        model_calls=stats.model_calls,
        search_calls=stats.search_calls,
        fetch_calls=stats.fetch_calls,
        retries=stats.retries,
        input_tokens=stats.input_tokens,
        output_tokens=stats.output_tokens,
        elapsed_s=time.perf_counter() - t0,
        finished=complete,
        retried=retried,
        errored_final=sum(a.reason == "error" and a.attempt >= max_attempts for a in after.latest.values()),
        to_retry=sum(a.reason == "error" and a.attempt < max_attempts for a in after.latest.values()),
        superseded=after.superseded,
    )


def make_agents(
    cfg: RunConfig, eps: Endpoints, prompt: Prompt, *, chat: ChatModel | None = None, stats: Stats | None = None
) -> dict[str, Runner]:
    """One Agent per provider name, sharing the chat model (`chat`, else the endpoints'), fetch backend and stats;
    each hosted search layer its HostedAgent, sharing the stats."""
    agents: dict[str, Runner] = {
        name: Agent(chat=chat or eps.chat, search=search, fetch=eps.fetch, prompt=prompt,
                    max_iterations=cfg.limits.max_iterations, stats=stats)
        for name, search in eps.search.items()
    }
    for name, h in eps.hosted.items():
        if stats is not None:
            h.stats = stats
        agents[name] = h
    return agents


def _run_head(cfg: RunConfig, run_id: str, questions: list[Question]) -> list[NewEvent]:
    return run_opening(run_id, cfg.to_event(), [q.dataset_event() for q in questions])


def preflight(cfg: RunConfig) -> None:
    """Fails on a missing key (one line naming the variable) before the store is opened; keys never leave here."""
    if cfg.sandbox:
        return
    missing: list[str] = []  # every missing key at once, not one per attempt
    for who, env in [("agent model", cfg.agent.key_env), *((f"provider {n}", p.key_env) for n, p in cfg.providers.items())]:
        try:
            read_key(who, env or None)
        except MissingKey:
            missing.append(f"{env} ({who})" if env else who)
    if missing:
        raise BadInput(f"no API key; set the environment variable{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(dict.fromkeys(missing))}")


def _endpoint(e: EndpointCfg) -> Endpoint:
    """The adapters' Endpoint of a config section (its defaults were filled in on load)."""
    return Endpoint(base_url=e.base_url, key_env=e.key_env or None, rps=e.rps, burst=e.burst,
                    concurrency=e.concurrency, timeout_s=e.timeout_s, max_retries=e.max_retries,
                    max_wait_s=e.max_wait_s, quota=e.quota or None)


def endpoint_factory(transport: httpx.AsyncBaseTransport | None = None) -> AdapterFactory:
    """Builds the production adapters of a config (real HTTP through aiohttp, or `transport`, e.g. ASGI)."""

    async def make(cfg: RunConfig, stack: AsyncExitStack) -> Endpoints:
        fallback = SANDBOX_KEY if cfg.sandbox else None
        chat = build_chat(cfg.agent.model, _endpoint(cfg.agent), params=dict(cfg.agent.params), transport=transport,
                          key_fallback=fallback, api=cfg.agent.api)
        stack.push_async_callback(chat.aclose)
        f = cfg.fetch
        cache = (Path(f.cache_dir) / "sandbox" if cfg.sandbox else Path(f.cache_dir)) if f.cache_dir else None
        fetch = build_fetcher(f.backend, _endpoint(f), cache_dir=cache, read_cap=f.max_bytes, transport=transport,
                              key_fallback=fallback)
        stack.push_async_callback(fetch.aclose)
        search: dict[str, SearchProvider] = {}
        hosted: dict[str, HostedAgent] = {}
        for name, p in cfg.providers.items():
            if p.kind in HOSTED_LAYERS:  # asked over its model API (docs/how-to/hosted.md)
                client = httpx.AsyncClient(transport=transport, timeout=p.timeout_s)
                stack.push_async_callback(client.aclose)
                model = cfg.agent.model if isinstance(p.model, msgspec.UnsetType) else p.model
                hosted[name] = HostedAgent(layer=p.kind, model=model, base_url=p.base_url, client=client,
                                           key=read_key(f"provider {name}", p.key_env or None, fallback=fallback))
                continue
            adapter = build_search(p.kind, _endpoint(p), params=dict(p.params), transport=transport, key_fallback=fallback)
            adapter.name = name  # the provider name of this run (a kind may appear under several names)
            stack.push_async_callback(adapter.aclose)
            search[name] = adapter
        return Endpoints(chat=chat, fetch=fetch, search=search, hosted=hosted)

    return make
