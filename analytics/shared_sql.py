"""SQL fragments shared by the metrics and the user views: one trajectory per stream, its audit, its answer."""

from __future__ import annotations

# An audit whose source starts with 'llm' or 'grader' is a proposal (an LLM grader, `searchtrace grade`); any other
# source (an imported or human audit) always wins over it. Within the same rank the latest audit wins.
PROPOSAL_PREFIXES = ("llm", "grader")


def is_proposal(source: str) -> bool:
    """The same rule as AUDIT_RANK, for code that ranks audits in Python (export)."""
    return source.startswith(PROPOSAL_PREFIXES)


AUDIT_RANK = (
    "(CASE WHEN a.source LIKE 'llm%' OR a.source LIKE 'grader%' THEN 0 ELSE 1 END) * 1000000000000 + a.position"
)


def not_superseded(p: str, alias: str) -> str:
    """SQL condition: the trajectory.started row `alias` is the latest attempt of its cell (no later one supersedes it).

    A cell whose trajectory ended in `error` is recorded again by the next `record` (engine/record.py); the new
    trajectory.started names the errored one in `supersedes`. Events are never updated or deleted, so every
    reader that counts trajectories filters with this.
    """
    return (
        f"NOT EXISTS (SELECT 1 FROM {p}trajectories sup WHERE sup.supersedes = {alias}.trajectory_id "
        f"AND sup.position > {alias}.position)"
    )


def superseded_ids(p: str) -> str:
    """SELECT of the trajectory ids that a later attempt of the same cell supersedes (for rows keyed by trajectory_id)."""
    return (
        f"SELECT s.trajectory_id FROM {p}trajectories s "
        f"JOIN {p}trajectories sup ON sup.supersedes = s.trajectory_id AND sup.position > s.position"
    )


def trajectories_cte(p: str) -> str:
    """`tr`: one row per current trajectory stream (its first trajectory.started, not superseded), gold answer
    falling back to the dataset."""
    return f"""
tr AS (
  SELECT t.stream_id, t.trajectory_id, t.provider, t.qid, t.epoch, t.position, t.attempt, t.supersedes,
         coalesce(nullif(t.question, ''), q.question, '') AS question,
         coalesce(nullif(t.gold_answer, ''), q.gold_answer, '') AS gold_answer
  FROM (SELECT * FROM {p}trajectories QUALIFY row_number() OVER (PARTITION BY stream_id ORDER BY position) = 1) t
  LEFT JOIN (SELECT qid, arg_max(question, position) AS question, arg_max(gold_answer, position) AS gold_answer
             FROM {p}questions GROUP BY qid) q ON q.qid = t.qid
  WHERE {not_superseded(p, "t")}
)"""


def audit_cte(p: str) -> str:
    """`aud`: the deciding audit.answer of each trajectory (by trajectory_id, else by provider and qid). Needs `tr`."""
    return f"""
aud_match AS (
  SELECT t.stream_id, a.semantic_match, a.source, {AUDIT_RANK} AS k
  FROM tr t JOIN {p}audits a ON a.trajectory_id = t.trajectory_id
  UNION ALL
  SELECT t.stream_id, a.semantic_match, a.source, {AUDIT_RANK} AS k
  FROM tr t JOIN {p}audits a ON a.trajectory_id IS NULL AND a.provider = t.provider AND a.qid = t.qid
),
aud AS (
  SELECT stream_id, arg_max(semantic_match, k) AS semantic_match, arg_max(source, k) AS audit_source
  FROM aud_match GROUP BY stream_id
)"""


def answers_cte(p: str) -> str:
    """`fa`: the last answer.final text of each stream (no row when the trajectory gave none)."""
    return f"""
fa AS (SELECT stream_id, arg_max(text, position) AS final_answer FROM {p}answers GROUP BY stream_id)"""
