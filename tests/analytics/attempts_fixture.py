"""A hand-made store where one (question, provider) cell was recorded twice: attempt 1 ended in `error`, attempt 2
(`supersedes` attempt 1) answered. Every number the tests expect is worked out by hand in the comments below.

Run `r`, questions q1 (gold Paris) and q2 (gold Rome), providers `p` and `o`, judge run `j`:

- `r:p:q1` (attempt 1, errored, superseded): 2 searches, 1 fetch (ok, 40 page tokens), 1000 / 100 tokens;
  one item bad.example/a at rank 1, judged S=true and fetched (would be SMART), audited false.
- `r:p:q1#2` (attempt 2, supersedes `r:p:q1`): 1 search, no fetch, 100 / 10 tokens, final "Paris";
  one item good.example/x at rank 1, judged S=true, not fetched -> MISSED; audited true.
- `r:p:q2`: 1 search, no fetch, 200 / 20 tokens, final "Rome"; one item c.example at rank 2, S=false -> NO-OP;
  audited true.
- `r:o:q1`: 1 search, no fetch, 50 / 5 tokens, final "Lyon"; one item bad.example/a at rank 1, S=false -> NO-OP;
  audited false.

Provider p (latest attempts only): 2 trajectories, searches 2/2 = 1.0, fetches 0/2 = 0.0, input (100+200)/2 = 150,
output (10+20)/2 = 15, page tokens 0, items 2 (valid 2), partition SMART 0 / MISSED 1 / BLIND 0 / NO-OP 1,
surface support rate 1/2, surface-answerable queries 1, gold rank-1 share 1/1, correct 2 of 2 audited, exact match
1.0. Counting the superseded attempt too would give 3 trajectories, searches 4/3, fetches 1/3, input 1300/3,
items 3 with SMART 1, accuracy 2/3. Complementarity o|p over q1: p only (b_only 1); URL sets {bad.example/a}
and {good.example/x}: url_jaccard 0.0 (1/2 with the superseded attempt's URL).
"""

from __future__ import annotations

from pathlib import Path

from searchtrace.store import (
    AnswerFinal,
    AuditAnswer,
    DatasetQuestion,
    EventLog,
    FetchCalled,
    FetchCompleted,
    JudgeItemRef,
    JudgeStarted,
    JudgeVerdict,
    Labels,
    ModelResponded,
    NewEvent,
    Payload,
    RunFinished,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    TrajectoryFinished,
    TrajectoryStarted,
    Usage,
    Verdict,
)

RUN = "r"
JUDGE = "j"
OLD, NEW, P2, O1 = "r:p:q1", "r:p:q1#2", "r:p:q2", "r:o:q1"
PAGE = b"page of bad.example says Paris"


def _search(call_id: str, it: int, url: str, rank: int) -> list[Payload]:
    return [
        SearchCalled(call_id=call_id, iteration=it, query=f"query {call_id}", provider="x"),
        SearchResult(call_id=call_id, doc_id=f"d-{call_id}", rank=rank, title="T", url=url, url_normalized=url,
                     domain=url.split("/")[2], snippet=f"snippet of {url}"),
        SearchCompleted(call_id=call_id, status="ok", n_results=1, latency_ms=10.0),
    ]


def _trajectory(tid: str, provider: str, qid: str, tokens: tuple[int, int], body: list[Payload], final: str | None,
                attempt: int = 1, supersedes: str | None = None) -> list[Payload]:
    usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1])
    out: list[Payload] = [
        TrajectoryStarted(trajectory_id=tid, qid=qid, provider=provider, attempt=attempt, supersedes=supersedes),
        ModelResponded(iteration=1, text=None, usage=usage, latency_ms=100.0),
        *body,
    ]
    if final is not None:
        out.append(AnswerFinal(iteration=1, text=final))
    out.append(TrajectoryFinished(reason="answered" if final is not None else "error", iterations=1, usage=usage))
    return out


def _verdict(tid: str, url: str, s: bool) -> JudgeVerdict:
    labels = Verdict(snippet=Labels(supports_gold=s, contradicts_gold=False, relevant=True), page=None,
                     supports_final_answer=s, rationale="fixture")
    return JudgeVerdict(judge_run_id=JUDGE, item=JudgeItemRef(trajectory_id=tid, url_normalized=url), surface="snippet",
                        valid=True, labels=labels, usage=Usage(input_tokens=7, output_tokens=3))


def build(db: Path) -> None:
    """Writes the store described in the module docstring (the errored attempt first, as `record` would)."""
    with EventLog(db) as log:
        digest = log.put_blob(PAGE)
        fetch: list[Payload] = [
            FetchCalled(call_id="f1", iteration=1, doc_id="d-s1", url="https://bad.example/a"),
            FetchCompleted(call_id="f1", doc_id="d-s1", status="ok", content_digest=digest, n_bytes=len(PAGE),
                           n_tokens=40, cache_hit=False, latency_ms=5.0),
        ]
        streams: list[tuple[str, list[Payload]]] = [
            ("run:r", [RunStarted(run_id=RUN, config={}, code_version="test"),
                       DatasetQuestion(qid="q1", question="Where?", gold_answer="Paris"),
                       DatasetQuestion(qid="q2", question="Which?", gold_answer="Rome")]),
            (f"traj:{OLD}", _trajectory(OLD, "p", "q1", (1000, 100), [
                *_search("s1", 1, "https://bad.example/a", 1), *fetch, *_search("s2", 1, "https://bad.example/a", 1)],
                None)),
            (f"traj:{O1}", _trajectory(O1, "o", "q1", (50, 5), _search("s1", 1, "https://bad.example/a", 1), "Lyon")),
            (f"traj:{P2}", _trajectory(P2, "p", "q2", (200, 20), _search("s1", 1, "https://c.example/", 2), "Rome")),
            (f"traj:{NEW}", _trajectory(NEW, "p", "q1", (100, 10), _search("s1", 1, "https://good.example/x", 1), "Paris",
                                        attempt=2, supersedes=OLD)),
            ("run:r", [RunFinished(counts={"answered": 3, "trajectories": 3, "superseded": 1})]),
            ("judge:j", [JudgeStarted(judge_run_id=JUDGE, model="m", prompt_version="judge/1", prompt_sha256="0"),
                         _verdict(OLD, "https://bad.example/a", True),
                         _verdict(NEW, "https://good.example/x", True),
                         _verdict(P2, "https://c.example/", False),
                         _verdict(O1, "https://bad.example/a", False)]),
            ("audit:test", [AuditAnswer(trajectory_id=t, provider=None, qid=None, semantic_match=m, source="human")
                            for t, m in ((OLD, False), (NEW, True), (P2, True), (O1, False))]),
        ]
        for stream, payloads in streams:
            run = RUN if stream.startswith(("run:", "traj:")) else "other"
            log.append([NewEvent(stream_id=stream, run_id=run, payload=p) for p in payloads])
