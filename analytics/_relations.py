"""Typed relations extracted from the events table: one row per event of one type, the basis of every metric.

Each relation is a SELECT over `events` with the JSON payload parsed once per row into typed columns.
The same SQL defines the raw views (`ev_<name>`, always current, slow JSON) and the projection tables
(`proj_<name>`, the same columns materialised and caught up incrementally, fast typed columns).
Every relation row depends on its own event only, so appending the rows of new events is exact.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

import msgspec

from searchtrace.store import (
    AnswerFinal,
    AuditAnswer,
    DatasetQuestion,
    FetchCalled,
    FetchCompleted,
    JudgeDefault,
    JudgeStarted,
    JudgeVerdict,
    ModelResponded,
    RunStarted,
    SearchCalled,
    SearchCompleted,
    SearchResult,
    ToolRefused,
    TrajectoryFinished,
    TrajectoryStarted,
)


def _typed(expr: str, typ: str) -> str:
    """A stored value as its column type; one the type cannot hold reads as NULL, so no stored value breaks a reader."""
    if typ == "DOUBLE":  # not inf/nan either: sums and the report's JSON stay finite
        return f"CASE WHEN isfinite(TRY_CAST({expr} AS DOUBLE)) THEN TRY_CAST({expr} AS DOUBLE) END"
    return f"TRY_CAST({expr} AS {typ})"


_PATH = re.compile(r"\$(?:\.\w+)+")  # a JSON path into the payload, in a column's path or inside its SQL expression
_HOLDS: dict[str, tuple[type[msgspec.inspect.Type], ...]] = {  # what a column of each SQL type may read
    "INTEGER": (msgspec.inspect.IntType,),
    "BIGINT": (msgspec.inspect.IntType,),
    "DOUBLE": (msgspec.inspect.FloatType, msgspec.inspect.IntType),
    "BOOLEAN": (msgspec.inspect.BoolType,),
}
_FREE = (msgspec.inspect.DictType, msgspec.inspect.AnyType)  # JSON objects of any shape: the path beyond is not checked


@functools.cache
def _info(payload: type[msgspec.Struct]) -> msgspec.inspect.Type:
    return msgspec.inspect.type_info(payload)


def path_error(payload: type[msgspec.Struct], path: str, typ: str) -> str | None:
    """Why the JSON `path` does not name a field of `payload` (each step a field of the Struct, Struct field or
    optional Struct it reaches) whose type a `typ` column can hold; None when it does."""
    t: msgspec.inspect.Type = _info(payload)
    steps = path.split(".")[1:]
    for i, step in enumerate(steps):
        if isinstance(t, _FREE):
            return None
        structs = [u for u in (t.types if isinstance(t, msgspec.inspect.UnionType) else (t,))
                   if isinstance(u, msgspec.inspect.StructType)]
        field = next((f for s in structs for f in s.fields if f.encode_name == step), None)
        if field is None:
            return f"{payload.__name__} has no field {'.'.join(steps[:i + 1])!r} (path {path})"
        t = field.type
    leaves = [u for u in (t.types if isinstance(t, msgspec.inspect.UnionType) else (t,))
              if not isinstance(u, msgspec.inspect.NoneType)]
    want = _HOLDS.get(typ)
    if want and not all(isinstance(u, (*want, *_FREE)) for u in leaves):
        return f"{payload.__name__} field {path} is {t}, which a {typ} column cannot hold"
    return None


@dataclass(frozen=True)
class Relation:
    """One event type's typed columns: (name, SQL type or PRESENT, JSON path or SQL expression over `payload` /
    `run_id` / `recorded_at`)."""

    name: str
    payload: type[msgspec.Struct]  # the event's payload Struct: its tag is the event type, its fields the paths
    columns: tuple[tuple[str, str, str], ...]

    def __post_init__(self) -> None:
        """Every JSON path names a field of the payload Struct (checked at import: a misspelled path reads NULL)."""
        for _, typ, expr in self.columns:
            for path in _PATH.findall(expr):
                if err := path_error(self.payload, path, typ if expr == path else "VARCHAR"):
                    raise TypeError(f"relation {self.name}: {err}")

    @property
    def event_type(self) -> str:
        return str(self.payload.__struct_config__.tag)

    def select_sql(self, where: str = "") -> str:
        """SELECT position, stream_id, typed columns FROM events of this type (plus an optional extra filter)."""
        paths = [c[2] for c in self.columns if c[2].startswith("$")]
        exprs = []
        idx = 0
        for col, typ, path in self.columns:
            if path.startswith("$"):
                idx += 1
                if typ == "PRESENT":  # a JSON value that is there and not null (e.g. labels.page)
                    exprs.append(f"(j[{idx}] IS NOT NULL) AS {col}")
                else:
                    exprs.append(f"{_typed(f'j[{idx}]', typ)} AS {col}")
            else:
                exprs.append(f"{_typed(path, typ)} AS {col}")
        plist = ", ".join(f"'{p}'" for p in paths)
        extra = f" AND ({where})" if where else ""
        return (
            f"SELECT position, stream_id, {', '.join(exprs)} FROM ("
            f"SELECT position, stream_id, run_id, recorded_at, payload, json_extract_string(payload, [{plist}]) AS j "
            f"FROM events WHERE type = '{self.event_type}'{extra})"
        )


RELATIONS: tuple[Relation, ...] = (
    Relation(
        "trajectories",
        TrajectoryStarted,
        (
            ("trajectory_id", "VARCHAR", "$.trajectory_id"),
            ("qid", "VARCHAR", "$.qid"),
            ("provider", "VARCHAR", "$.provider"),
            ("question", "VARCHAR", "$.question"),
            ("gold_answer", "VARCHAR", "$.gold_answer"),
            # attempt n of the (question, provider) cell (1 when the event predates attempts); `supersedes` names the
            # errored attempt this one replaces (analytics read only attempts that no later trajectory.started supersedes)
            ("attempt", "INTEGER", "coalesce(TRY_CAST(json_extract_string(payload, '$.attempt') AS INTEGER), 1)"),
            ("supersedes", "VARCHAR", "$.supersedes"),
            # docs/concepts/statistics.md: epoch e of the (provider, qid) cell; 1 when absent (events before epochs, and epoch 1 itself)
            ("epoch", "INTEGER", "coalesce(TRY_CAST(json_extract_string(payload, '$.epoch') AS INTEGER), 1)"),
            ("run_id", "VARCHAR", "run_id"),  # the run that recorded it (`import` for imported traces)
        ),
    ),
    Relation(
        "run_configs",
        RunStarted,
        (
            # docs/how-to/compare.md: what a run compares by, from its recorded config (NULL where the run does not name it:
            # a proxied or imported run has no agent model or prompt of ours)
            ("model", "VARCHAR", "$.config.agent.model"),
            ("prompt_sha256", "VARCHAR", "$.config.prompt.sha256"),
            ("config", "VARCHAR", "$.config"),  # the whole config as JSON text (`report --by config:<key>`)
            ("run_id", "VARCHAR", "run_id"),
        ),
    ),
    Relation(
        "questions",
        DatasetQuestion,
        (
            ("qid", "VARCHAR", "$.qid"),
            ("question", "VARCHAR", "$.question"),
            ("gold_answer", "VARCHAR", "$.gold_answer"),
            ("gold_aliases", "VARCHAR", "$.gold_aliases"),  # docs/how-to/compare.md: JSON array of every accepted answer, or NULL
            ("recorded_us", "BIGINT", "epoch_us(recorded_at)"),  # docs/how-to/scale.md: the order of facts from several writers
        ),
    ),
    Relation(
        "model_responses",
        ModelResponded,
        (
            ("iteration", "INTEGER", "$.iteration"),
            ("input_tokens", "BIGINT", "$.usage.input_tokens"),
            ("output_tokens", "BIGINT", "$.usage.output_tokens"),
            ("reasoning_tokens", "BIGINT", "$.usage.reasoning_tokens"),
            ("cached_tokens", "BIGINT", "$.usage.cached_tokens"),
            ("latency_ms", "DOUBLE", "$.latency_ms"),
            ("provider_ms", "DOUBLE", "$.provider_ms"),  # docs/reference/prices.md: final attempt on the wire; NULL when not recorded
            ("queue_ms", "DOUBLE", "$.queue_ms"),  # docs/reference/prices.md: waits for our own limits, all attempts
            ("finish_reason", "VARCHAR", "$.finish_reason"),
            # docs/how-to/claude-gemini.md: the model that answered and the API it was asked over (NULL: recorded before)
            ("model", "VARCHAR", "$.model"),
            ("api", "VARCHAR", "$.api"),
        ),
    ),
    Relation(
        "search_calls",
        SearchCalled,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("iteration", "INTEGER", "$.iteration"),
            ("query", "VARCHAR", "$.query"),
            ("provider", "VARCHAR", "$.provider"),
        ),
    ),
    Relation(
        "search_completions",
        SearchCompleted,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("status", "VARCHAR", "$.status"),
            ("n_results", "INTEGER", "$.n_results"),
            ("latency_ms", "DOUBLE", "$.latency_ms"),
            ("provider_ms", "DOUBLE", "$.provider_ms"),  # docs/reference/prices.md: final attempt on the wire; NULL when not recorded
            ("queue_ms", "DOUBLE", "$.queue_ms"),  # docs/reference/prices.md: waits for our own limits, all attempts
        ),
    ),
    Relation(
        "search_results",
        SearchResult,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("doc_id", "VARCHAR", "$.doc_id"),
            ("rank", "INTEGER", "$.rank"),
            ("title", "VARCHAR", "$.title"),
            ("url", "VARCHAR", "$.url"),
            ("url_normalized", "VARCHAR", "$.url_normalized"),
            ("domain", "VARCHAR", "$.domain"),
            ("snippet", "VARCHAR", "$.snippet"),
            ("metadata", "VARCHAR", "$.metadata"),
            ("surface_chars", "INTEGER", "$.surface_chars"),  # null before docs/how-to/providers.md and on imports: length(snippet)
            ("surface", "VARCHAR", "$.surface"),  # docs/how-to/hosted.md: JSON list of the fields received; NULL: url, title, snippet
            ("model_saw_more", "BOOLEAN", "$.model_saw_more"),  # docs/how-to/hosted.md: NULL on search-API results
        ),
    ),
    Relation(
        "fetch_calls",
        FetchCalled,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("iteration", "INTEGER", "$.iteration"),
            ("doc_id", "VARCHAR", "$.doc_id"),
            ("url", "VARCHAR", "$.url"),
        ),
    ),
    Relation(
        "fetch_completions",
        FetchCompleted,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("doc_id", "VARCHAR", "$.doc_id"),
            ("status", "VARCHAR", "$.status"),
            ("content_digest", "VARCHAR", "$.content_digest"),
            ("n_bytes", "BIGINT", "$.n_bytes"),
            ("n_tokens", "BIGINT", "$.n_tokens"),
            ("cache_hit", "BOOLEAN", "$.cache_hit"),
            ("latency_ms", "DOUBLE", "$.latency_ms"),
            ("provider_ms", "DOUBLE", "$.provider_ms"),  # docs/reference/prices.md: final attempt on the wire; NULL when not recorded
            ("queue_ms", "DOUBLE", "$.queue_ms"),  # docs/reference/prices.md: waits for our own limits, all attempts
        ),
    ),
    Relation(
        "tool_refusals",
        ToolRefused,
        (
            ("call_id", "VARCHAR", "$.call_id"),
            ("iteration", "INTEGER", "$.iteration"),
            ("name", "VARCHAR", "$.name"),
            ("reason", "VARCHAR", "$.reason"),
        ),
    ),
    Relation(
        "answers",
        AnswerFinal,
        (
            ("iteration", "INTEGER", "$.iteration"),
            ("text", "VARCHAR", "$.text"),
            ("citations", "VARCHAR", "$.citations"),  # docs/how-to/hosted.md: JSON list of cited sources; NULL when none
        ),
    ),
    Relation(
        "finishes",
        TrajectoryFinished,
        (
            ("reason", "VARCHAR", "$.reason"),
            ("iterations", "INTEGER", "$.iterations"),
        ),
    ),
    Relation(
        "judge_runs",
        JudgeStarted,
        (
            ("judge_run_id", "VARCHAR", "$.judge_run_id"),
            ("model", "VARCHAR", "$.model"),
            ("prompt_version", "VARCHAR", "$.prompt_version"),
            ("prompt_sha256", "VARCHAR", "$.prompt_sha256"),
            ("schema_version", "INTEGER", "$.schema_version"),
            ("recorded_us", "BIGINT", "epoch_us(recorded_at)"),  # docs/how-to/scale.md: the order of facts from several writers
        ),
    ),
    Relation(
        "judge_defaults",
        JudgeDefault,
        (
            ("judge_run_id", "VARCHAR", "$.judge_run_id"),
            ("recorded_us", "BIGINT", "epoch_us(recorded_at)"),  # docs/how-to/scale.md: the order of facts from several writers
        ),
    ),
    Relation(
        "verdicts",
        JudgeVerdict,
        (
            ("judge_run_id", "VARCHAR", "$.judge_run_id"),
            ("trajectory_id", "VARCHAR", "$.item.trajectory_id"),
            ("url_normalized", "VARCHAR", "$.item.url_normalized"),
            ("surface", "VARCHAR", "$.surface"),
            ("valid", "BOOLEAN", "$.valid"),
            ("snippet_supports_gold", "BOOLEAN", "$.labels.snippet.supports_gold"),
            ("snippet_contradicts_gold", "BOOLEAN", "$.labels.snippet.contradicts_gold"),
            ("snippet_relevant", "BOOLEAN", "$.labels.snippet.relevant"),
            ("has_page", "PRESENT", "$.labels.page"),
            ("page_supports_gold", "BOOLEAN", "$.labels.page.supports_gold"),
            ("page_contradicts_gold", "BOOLEAN", "$.labels.page.contradicts_gold"),
            ("page_relevant", "BOOLEAN", "$.labels.page.relevant"),
            ("supports_final_answer", "BOOLEAN", "$.labels.supports_final_answer"),
            ("invalid_reason", "VARCHAR", "$.invalid_reason"),
            ("input_tokens", "BIGINT", "$.usage.input_tokens"),
            ("output_tokens", "BIGINT", "$.usage.output_tokens"),
            ("cached_tokens", "BIGINT", "$.usage.cached_tokens"),  # docs/concepts/statistics.md: priced at the model's cached_input
            ("latency_ms", "DOUBLE", "$.latency_ms"),
            ("provider_ms", "DOUBLE", "$.provider_ms"),  # docs/reference/prices.md: final attempt on the wire; NULL when not recorded
            ("queue_ms", "DOUBLE", "$.queue_ms"),  # docs/reference/prices.md: waits for our own limits, all attempts
            ("recorded_us", "BIGINT", "epoch_us(recorded_at)"),  # docs/how-to/scale.md: the order of facts from several writers
            ("batch_id", "VARCHAR", "$.batch_id"),  # docs/how-to/batch.md: the model batch it came from; NULL online
        ),
    ),
    Relation(
        "audits",
        AuditAnswer,
        (
            ("trajectory_id", "VARCHAR", "$.trajectory_id"),
            ("provider", "VARCHAR", "$.provider"),
            ("qid", "VARCHAR", "$.qid"),
            ("semantic_match", "BOOLEAN", "$.semantic_match"),
            ("source", "VARCHAR", "$.source"),
            # docs/concepts/statistics.md: the epoch a (provider, qid) row names; NULL on rows naming a trajectory or a whole cell
            ("epoch", "INTEGER", "$.epoch"),
            ("recorded_us", "BIGINT", "epoch_us(recorded_at)"),  # docs/how-to/scale.md: the order of facts from several writers
        ),
    ),
)


def version() -> str:
    """Digest of every relation's SQL: a projection built by another version is rebuilt from position 0."""
    text = "\n".join(r.select_sql() for r in RELATIONS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
