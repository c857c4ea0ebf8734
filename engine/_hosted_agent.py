"""A hosted search layer as an arm of a run (docs/how-to/hosted.md): a run config names it like a provider, and each of its
trajectories asks the question once with the layer's hosted tool over its model API.

The reply is one model turn (model.responded with the request as evidence); a turn Claude pauses (`pause_turn`) is
sent back as it came and continued, each call its own model.responded (iterations 1, 2, …); its searches, page reads and citations
are recorded through the trajectory builder (search.called, one search.result per source in the order received,
search.completed; fetch events; Gemini's redirects resolved), and its answer is the text after `FINAL ANSWER:`, else
the whole reply. A refused or failed call ends the trajectory with reason `error`, as the agent's chat errors do.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from searchtrace.adapters import (
    HOSTED_API,
    Secret,
    agent_reply,
    api_headers,
    continued,
    hosted_request,
    read_hosted,
    resolved,
    scrub_text,
)
from searchtrace.engine._agent import Recorder, Stats, Trajectory, final_answer
from searchtrace.store import BadInput, Citation, TrajectoryFinished

MAX_PARTS = 10  # model calls of one paused and continued hosted turn before it ends at `max_iterations`


class HostedAgent:
    """Asks one hosted layer (its model, base URL and key) for each trajectory; shared by the layer's trajectories."""

    def __init__(self, *, layer: str, model: str, base_url: str, key: Secret | None, client: httpx.AsyncClient,
                 stats: Stats | None = None) -> None:
        self.layer, self.model, self.base_url, self.key, self.client = layer, model, base_url.rstrip("/"), key, client
        self.api = HOSTED_API[layer]
        self.stats = stats or Stats()

    async def run(self, traj: Trajectory, rec: Recorder) -> TrajectoryFinished:
        rec.start(qid=traj.qid, provider=traj.provider, question=traj.question, gold_answer=traj.gold_answer,
                  attempt=traj.attempt, supersedes=traj.supersedes, epoch=traj.epoch)
        path, body = hosted_request(self.layer, self.model, traj.question)
        messages: list[dict[str, Any]] = [{"role": "user", "content": traj.question}]
        said: list[str] = []
        citations: list[Citation] = []
        for iteration in range(1, MAX_PARTS + 1):
            t0 = time.perf_counter()
            try:
                resp = await self.client.post(self.base_url + path, json=body, headers=api_headers(self.api, self.key))
            except httpx.HTTPError as exc:
                rec.failed(what=f"chat:{self.model}", status="timeout" if isinstance(exc, httpx.TimeoutException)
                           else "http_error", error=type(exc).__name__)
                return rec.finish("error", f"{self.layer} call failed ({type(exc).__name__})")
            latency = (time.perf_counter() - t0) * 1000
            self.stats.model_calls += 1
            if resp.status_code in (401, 403):  # a rejected key fails every trajectory alike: stop the run
                raise BadInput(f"{self.layer}: the API rejected the key (HTTP {resp.status_code})")
            if resp.status_code != 200:
                rec.failed(what=f"chat:{self.model}", status="http_error", http_status=resp.status_code,
                           error=scrub_text(resp.text[:200], self.key))
                return rec.finish("error", f"{self.layer} call failed (HTTP {resp.status_code})")
            text, usage, finish = agent_reply(self.api, resp.content)
            self.stats.input_tokens += usage.input_tokens
            self.stats.output_tokens += usage.output_tokens
            rec.model(iteration=iteration, text=text, usage=usage, latency_ms=latency, finish_reason=finish,
                      raw=resp.content, messages=messages, tools=body.get("tools"), model=self.model, api=self.api)
            said += [text] if text else []
            turn = read_hosted(self.api, resp.content)
            if turn is not None:
                turn = await resolved(turn, self.client)
                rec.hosted(turn, iteration=iteration)
                self.stats.search_calls += len(turn.searches)
                self.stats.fetch_calls += len(turn.fetches)
                citations += turn.citations
            nxt = continued(self.api, body, resp.content, finish)  # a paused turn: sent back as it came
            if nxt is None:
                whole = "".join(said)
                rec.final(final_answer(whole) or whole, iteration, citations=tuple(citations))
                return rec.finish("answered")
            body = nxt
            messages = [*messages, {"role": "assistant", "content": text}]
        return rec.finish("max_iterations")
