"""Deterministic re-execution: the agent loop runs again over the replay transport and is compared step by step.

The agent, its adapters and their parsing are the production code (built from the run's recorded config);
only the network is replaced by `ReplayTransport`. Each model request the replay sends is also checked against
what was sent when recording: the recorded `request_sha256` when present, else the request rebuilt from the
recorded events with the recorded system prompt (`engine._agent.rebuild_messages`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from functools import partial
from typing import Any

import anyio
import msgspec

from searchtrace.adapters import ChatResponse
from searchtrace.engine import (
    CLIENT_LOOPS,
    Recorder,
    RunConfig,
    Trajectory,
    endpoint_factory,
    fold,
    get_prompt,
    make_agents,
    rebuild_messages,
    request_sha256,
    run_started,
    worker_pool,
)
from searchtrace.replay._diff import Divergence, first_divergence, request_diff
from searchtrace.replay._reexec import ReplayMiss, ReplayTransport, Tape
from searchtrace.store import BadInput, EventLog, Payload, TrajectoryStarted


class Recorded(msgspec.Struct, kw_only=True):
    """One recorded trajectory: its stream's payloads in order."""

    trajectory_id: str
    stream_id: str
    run_id: str
    provider: str
    qid: str
    question: str
    gold_answer: str
    payloads: list[Payload]
    attempt: int = 1  # every attempt replays, superseded ones too (each under its own trajectory id)
    supersedes: str | None = None


class Outcome(msgspec.Struct, kw_only=True):
    trajectory_id: str
    ok: bool
    steps: int
    divergence: str | None = None  # rendered, readable
    miss: str | None = None
    skipped: str | None = None  # why it could not be replayed (not a divergence)


class ReplayReport(msgspec.Struct, kw_only=True):
    trajectories: int
    matched: int
    diverged: int
    skipped: int
    outcomes: list[Outcome]
    requests_served: int

    @property
    def ok(self) -> bool:
        return self.diverged == 0


def _messages_blob(messages: list[dict[str, Any]]) -> bytes:
    return msgspec.json.encode({"messages": messages}, order="sorted")


def load_recorded(log: EventLog, trajectory_ids: Sequence[str] | None = None) -> list[Recorded]:
    """The recorded trajectories (all, or the named ones; an unknown id is bad input)."""
    heads: list[tuple[str, str, TrajectoryStarted]] = []
    for ev in log.read(types=["trajectory.started"]):
        assert isinstance(ev.payload, TrajectoryStarted)
        heads.append((ev.stream_id, ev.run_id, ev.payload))
    if trajectory_ids:
        known = {p.trajectory_id for _, _, p in heads}
        unknown = [t for t in trajectory_ids if t not in known]
        if unknown:
            raise BadInput(f"--trajectory {unknown[0]!r}: no such trajectory in {log.path}")
        wanted = set(trajectory_ids)
        heads = [h for h in heads if h[2].trajectory_id in wanted]
    out = []
    for stream_id, run_id, head in heads:
        payloads = [ev.payload for ev in log.read(stream_id=stream_id)]
        out.append(
            Recorded(
                trajectory_id=head.trajectory_id,
                stream_id=stream_id,
                run_id=run_id,
                provider=head.provider,
                qid=head.qid,
                question=head.question,
                gold_answer=head.gold_answer,
                payloads=payloads,
                attempt=head.attempt,
                supersedes=head.supersedes,
            )
        )
    return out


def client_loop(config: dict[str, Any]) -> str | None:
    """The command that recorded a client's own agent loop (`proxy`, `collect`), by its run config; else None."""
    return next((k for k in CLIENT_LOOPS if k in config), None)


def run_config(log: EventLog, run_id: str) -> dict[str, Any] | None:
    """The recorded config of a run, or None (imported traces have no agent config to re-run)."""
    started = run_started(log, run_id)
    return dict(started.config) if started is not None else None


def replay_config(config: dict[str, Any], prompt_version: str | None) -> RunConfig:
    """The recorded RunConfig made safe to replay: no limits, no retries, no fetch cache, no key needed."""
    fields = set(RunConfig.__struct_fields__)  # `to_event` adds derived keys (prompt, identity_sha256, ...)
    body = {k: v for k, v in config.items() if k in fields}
    try:
        cfg = msgspec.convert(body, RunConfig)
    except msgspec.ValidationError as exc:
        raise BadInput(f"run {config.get('run_id')!r}: recorded config does not fit this version ({exc})") from None
    if prompt_version:
        cfg.agent.prompt_version = prompt_version
    cfg.sandbox = True  # only effect here: adapters fall back to a dummy key (the transport never goes live)
    cfg.fetch.cache_dir = ""
    for ep in (cfg.agent, cfg.fetch, *cfg.providers.values()):
        ep.rps = 0.0
        ep.max_retries = 0
    return cfg


class CapturingChat:
    """Passes calls through and keeps every request's messages, per trace id, in order."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "")
        self.requests: dict[str, list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]]] = defaultdict(list)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        trace_id: str | None = None,
    ) -> ChatResponse:
        snapshot = msgspec.json.decode(msgspec.json.encode(messages))
        self.requests[trace_id or ""].append((snapshot, tools))
        reply: ChatResponse = await self.inner.complete(messages, tools=tools, response_format=response_format,
                                                       trace_id=trace_id)
        return reply


def recorded_prompt(config: dict[str, Any], version: str, get_blob: Callable[[str], bytes]) -> Any:
    """The agent prompt the run was recorded with: a prompt file's words from their blob, else this code's text
    when it is still the exact text recorded (None otherwise)."""
    from searchtrace.engine import from_blob, from_prompt_file, get_prompt, is_file_version

    rec = config.get("prompt") or {}
    version = rec.get("version", version)
    if is_file_version(version) and rec.get("sha256"):
        blob = _blob_or_none(get_blob, str(rec["sha256"]))
        if blob is not None:
            return from_prompt_file(from_blob(blob, f"run {config.get('run_id')!r}"))
    try:
        p = get_prompt(version)
    except BadInput:
        return None
    return p if p.sha256 == rec.get("sha256") else None


def _request_divergence(
    rec: Recorded,
    sent: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]],
    config: dict[str, Any],
    get_blob: Callable[[str], bytes],
) -> Divergence | None:
    """The first model request of the replay that differs from the one sent when recording."""
    f = fold(rec.payloads)
    step_of = {id(p): i for i, p in enumerate(f.events)}  # a step's index among the compared ones (_diff)
    replies = [(step_of[id(t)], t) for t in f.turns]
    version = (config.get("agent") or {}).get("prompt_version", "")
    prompt = recorded_prompt(config, version, get_blob)
    prompt_text = prompt.text if prompt is not None else None
    rebuilt = rebuild_messages(rec.payloads, prompt.text, get_blob, prompt.user_template) if prompt is not None else None
    for n, (msgs, tools) in enumerate(sent):
        if n >= len(replies):
            return None  # more requests than recorded replies: the transport reports the miss
        step, reply = replies[n]
        if reply.request_sha256 is not None:
            if request_sha256(msgs, tools) == reply.request_sha256:
                continue
            expected = _blob_or_none(get_blob, reply.request_sha256)
            if expected is None and rebuilt is not None and n < len(rebuilt):
                expected = _messages_blob(rebuilt[n])
            detail = request_diff(expected, _messages_blob(msgs)) if expected else ""
            if not detail and prompt_text is None:
                detail = "the system prompt text of this version changed since recording"
            why = f"request_sha256 recorded {reply.request_sha256[:16]}…, replayed {request_sha256(msgs, tools)[:16]}…"
        elif rebuilt is not None:
            if n < len(rebuilt) and rebuilt[n] == msgs:
                continue
            detail = request_diff(_messages_blob(rebuilt[n]) if n < len(rebuilt) else b"[]", _messages_blob(msgs))
            why = "messages differ from the ones rebuilt from the recorded events"
        else:
            rp = config.get("prompt") or {}
            why = (
                f"the system prompt {rp.get('version')!r} changed since recording "
                f"(sha256 recorded {str(rp.get('sha256'))[:16]}…, this code has another text)"
            )
            detail = "replayed system prompt:\n" + "\n".join("    " + ln for ln in str(msgs[0].get("content", "")).splitlines()[:8])
        return Divergence(
            trajectory_id=rec.trajectory_id,
            step=step + 1,
            type="model request",
            iteration=reply.iteration,
            fields=[],
            detail=f"the model request differs from the recorded one: {why}" + (f"\n{detail}" if detail else ""),
        )
    return None


def _blob_or_none(get_blob: Callable[[str], bytes], digest: str) -> bytes | None:
    try:
        return get_blob(digest)
    except KeyError:
        return None


async def replay_trajectories(
    log: EventLog,
    recorded: Sequence[Recorded],
    *,
    prompt_version: str | None = None,
    concurrency: int = 8,
) -> ReplayReport:
    """Re-runs each trajectory's agent loop from its events and reports the first divergent step of each."""
    tapes = {r.trajectory_id: Tape.from_payloads(r.trajectory_id, r.payloads) for r in recorded}
    transport = ReplayTransport(tapes, log.get_blob)
    configs = {run_id: await anyio.to_thread.run_sync(run_config, log, run_id) for run_id in {r.run_id for r in recorded}}
    outcomes: list[Outcome] = []
    async with AsyncExitStack() as stack:
        agents: dict[tuple[str, str], tuple[Any, CapturingChat]] = {}
        for run_id, config in configs.items():
            if config is None or client_loop(config):
                continue
            cfg = replay_config(config, prompt_version)
            if not prompt_version:  # a prompt file's words come from the store, not from the file
                recorded_prompt(config, cfg.agent.prompt_version, log.get_blob)
            eps = await endpoint_factory(transport)(cfg, stack)
            chat = CapturingChat(eps.chat)
            for name, agent in make_agents(cfg, eps, get_prompt(cfg.agent.prompt_version), chat=chat).items():
                agents[(run_id, name)] = (agent, chat)

        async def one(rec: Recorded) -> None:
            key = (rec.run_id, rec.provider)
            config = configs[rec.run_id]
            if config is None:
                why = f"run {rec.run_id!r} has no run.started (imported traces carry no agent config to re-run)"
                outcomes.append(Outcome(trajectory_id=rec.trajectory_id, ok=True, steps=0, skipped=why))
                return
            if (by := client_loop(config)) is not None:
                why = f"run {rec.run_id!r} was recorded through `searchtrace {by}`: the agent loop is the client's own, not re-executable"
                outcomes.append(Outcome(trajectory_id=rec.trajectory_id, ok=True, steps=0, skipped=why))
                return
            if key not in agents:
                outcomes.append(Outcome(trajectory_id=rec.trajectory_id, ok=False, steps=0,
                                        divergence=f"trajectory {rec.trajectory_id}: provider {rec.provider!r} is not in its run's config"))
                return
            agent, chat = agents[key]
            traj = Trajectory(run_id=rec.run_id, provider=rec.provider, qid=rec.qid, question=rec.question,
                              gold_answer=rec.gold_answer, attempt=rec.attempt, supersedes=rec.supersedes)
            out = Recorder(traj)
            miss: str | None = None
            try:
                await agent.run(traj, out)
            except Exception as exc:  # a replay that crashes is a divergence to report, not a crash of the command
                miss = _failure_text(exc)
            outcomes.append(_judge(rec, out, chat, config, log, miss))

        await worker_pool(recorded, one, max(1, min(concurrency, len(recorded))))
    order = {r.trajectory_id: i for i, r in enumerate(recorded)}
    outcomes.sort(key=lambda o: order[o.trajectory_id])
    bad = sum(not o.ok for o in outcomes)
    skipped = sum(o.skipped is not None for o in outcomes)
    return ReplayReport(
        trajectories=len(outcomes), matched=len(outcomes) - bad - skipped, diverged=bad, skipped=skipped, outcomes=outcomes,
        requests_served=transport.requests,
    )


def _failure_text(exc: BaseException) -> str:
    """A ReplayMiss wherever it is (task groups wrap errors in groups), else what the agent raised."""
    if isinstance(exc, ReplayMiss):
        return str(exc)
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if isinstance(inner, ReplayMiss | BaseExceptionGroup):
                return _failure_text(inner)
        exc = exc.exceptions[0]
    return f"the replayed agent raised {type(exc).__name__}: {exc}"


def _judge(rec: Recorded, out: Any, chat: CapturingChat, config: dict[str, Any], log: EventLog, miss: str | None) -> Outcome:
    def get_blob(d: str) -> bytes:
        return out.blobs[d] if d in out.blobs else log.get_blob(d)

    sent = chat.requests.get(rec.trajectory_id, [])
    events = first_divergence(rec.trajectory_id, rec.payloads, out.payloads, partial(_blob_or_none, get_blob))
    request = _request_divergence(rec, sent, config, get_blob)
    first = min((d for d in (request, events) if d is not None), key=lambda d: d.step, default=None)
    text = first.render() if first is not None else None
    if miss is not None:
        text = (text + "\n  " if text else f"trajectory {rec.trajectory_id}: ") + miss
    return Outcome(trajectory_id=rec.trajectory_id, ok=text is None, steps=len(fold(rec.payloads).events), divergence=text, miss=miss)


__all__ = ["Outcome", "Recorded", "ReplayReport", "load_recorded", "replay_trajectories", "request_sha256"]
