"""The report's `judge_batches` (docs/how-to/batch.md): what the chosen judge run's model batches did, from its events.

Over the whole judge run (every invocation of `judge --batch`, every item it judged): `batches` submitted and how
many are still `live` (no `judge.batch.finished` yet); `items` sent in at least one batch, `submitted` item sends
(an item resubmitted counts twice) and `resubmitted` second sends; the outcomes the ended batches reported
(`succeeded`, `errored`, `expired`, `canceled`); of the items, `online` judged online after their batches did not
answer them (`--batch-fallback online`), `left` without a verdict although every batch holding them has ended,
and `pending` without a verdict in a batch still live. None when the judge run submitted no batch.
"""

from __future__ import annotations

from searchtrace.analytics._model import JudgeBatches
from searchtrace.store import Cursor, JudgeBatchFinished, JudgeBatchSubmitted, decode_payload

_SQL = ("SELECT payload FROM events WHERE type IN ('judge.batch.submitted', 'judge.batch.finished') "
        "AND json_extract_string(payload, '$.judge_run_id') = ? ORDER BY position")
_VERDICTS_SQL = ("SELECT DISTINCT json_extract_string(payload, '$.item.trajectory_id'), "
                 "json_extract_string(payload, '$.item.url_normalized'), json_extract_string(payload, '$.batch_id') "
                 "FROM events WHERE type = 'judge.verdict' AND json_extract_string(payload, '$.judge_run_id') = ?")


def judge_batches(con: Cursor, judge_run_id: str | None) -> JudgeBatches | None:
    """The judge run's batch counts (module docstring); None without a judge run or without a batch."""
    if judge_run_id is None:
        return None
    sent: dict[tuple[str, str], int] = {}  # item -> batches it was in
    holding: dict[str, list[tuple[str, str]]] = {}  # batch id -> its items
    out = JudgeBatches()
    ended: set[str] = set()
    for (payload,) in con.execute(_SQL, [judge_run_id]).fetchall():
        p = decode_payload(payload)
        if isinstance(p, JudgeBatchSubmitted):
            keys = [(r.trajectory_id, r.url_normalized) for r in p.items]
            holding[p.batch_id] = keys
            for k in keys:
                sent[k] = sent.get(k, 0) + 1
        elif isinstance(p, JudgeBatchFinished):
            ended.add(p.batch_id)
            out.succeeded += p.succeeded
            out.errored += p.errored
            out.expired += p.expired
            out.canceled += p.canceled
    if not holding:
        return None
    by_batch: set[tuple[str, str]] = set()  # items a batch answered
    judged: set[tuple[str, str]] = set()
    for traj, url, batch_id in con.execute(_VERDICTS_SQL, [judge_run_id]).fetchall():
        judged.add((traj, url))
        if batch_id is not None:
            by_batch.add((traj, url))
    waiting = {k for b, keys in holding.items() if b not in ended for k in keys}
    out.batches, out.live = len(holding), len(holding.keys() - ended)
    out.items, out.submitted = len(sent), sum(sent.values())
    out.resubmitted = out.submitted - len(sent)
    out.online = len((judged - by_batch) & sent.keys())
    out.pending = len(waiting - judged)
    out.left = len(sent.keys() - judged - waiting)
    return out
