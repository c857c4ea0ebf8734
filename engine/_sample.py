"""Question sampling (docs/concepts/protocol.md): proportional stratified sample by largest remainder, independent of row order."""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.store import BadInput, shown

STRATA: tuple[str, str, str] = ("freshness", "search_results", "topic")  # the dataset fields sampling (and record) stratify by
StratumKey = tuple[str, ...]
Row = dict[str, Any]

_PARQUET_MAGIC = b"PAR1"
# Where a question's id comes from: the first of these columns the file has; a file with none keys rows by hash.
ID_COLUMNS: tuple[str, ...] = ("qid", "id", "question_id")
# docs/how-to/compare.md: the roles `[dataset] columns` may map to a file's columns, and the columns each role is read from when
# it is not mapped (the first one the file has): Hugging Face sets such as SimpleQA and BrowseComp say `problem`.
COLUMN_ROLES: dict[str, tuple[str, ...]] = {
    "qid": ID_COLUMNS,
    "question": ("question", "problem"),
    "answer": ("answer", "gold_answer", "answers"),
}
# The largest cell a question file may hold per role (characters): an id, a question with its context, one answer.
MAX_CHARS: dict[str, int] = {"qid": 1_024, "question": 1_048_576, "answer": 65_536, "stratum": 1_024}


# -- reading -------------------------------------------------------------------
def read_questions(path: str | Path) -> list[Row]:
    """Rows of a JSONL, CSV or Parquet question file, in file order (format from the suffix, else sniffed)."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{p}: no such question file")
    fmt = format_of(p)
    if fmt == "parquet":
        return _read_parquet(p)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadInput(f"{p}: line {line}: not valid UTF-8") from None
    return _read_csv(p, text) if fmt == "csv" else _read_jsonl(p, text)


def format_of(p: Path) -> str:
    """The format of a question file: from its suffix, else sniffed from its first bytes."""
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    with p.open("rb") as fh:
        head = fh.read(4)
    if head == _PARQUET_MAGIC:
        return "parquet"
    return "jsonl" if head.lstrip()[:1] == b"{" else "csv"


def _read_parquet(p: Path) -> list[Row]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(p)
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"{p}: cannot read as Parquet ({first})") from None
    rows: list[Row] = table.to_pylist()
    return rows


def _read_jsonl(p: Path, text: str) -> list[Row]:
    rows: list[Row] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            raise BadInput(f"{p}: line {lineno}: not valid JSON ({exc})") from None
        except RecursionError:
            raise BadInput(f"{p}: line {lineno}: JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise BadInput(f"{p}: line {lineno}: expected a JSON object, found {type(obj).__name__}")
        rows.append(obj)
    return rows


def _read_csv(p: Path, text: str) -> list[Row]:
    delimiter = "\t" if p.suffix.lower() == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        if len(set(header)) != len(header):
            raise BadInput(f"{p}: line 1: duplicate column names in the header")
        rows: list[Row] = []
        for record in reader:
            if not record or record == [""]:
                continue
            if len(record) != len(header):
                raise BadInput(
                    f"{p}: line {reader.line_num}: expected {len(header)} fields, found {len(record)}"
                )
            rows.append(dict(zip(header, record, strict=True)))
    except csv.Error as exc:
        raise BadInput(f"{p}: line {reader.line_num}: malformed CSV ({exc})") from None
    return rows


# -- columns and answers (docs/how-to/compare.md) ----------------------------------------------
def columns_problem(columns: dict[str, str]) -> str | None:
    """Why a column mapping is unusable (None when it is fine): each key a role, each value a column name."""
    for role, col in columns.items():
        if role not in COLUMN_ROLES:
            return f"unknown role {role!r} (roles: {', '.join(COLUMN_ROLES)})"
        if not isinstance(col, str) or not col.strip():
            return f"{role}: the column name must be a non-empty string"
    return None


def parse_columns(text: str, where: str) -> dict[str, str]:
    """`qid=id,question=problem,answer=answers` (the command line's form of `[dataset] columns`)."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        role, eq, col = part.partition("=")
        if not part or not eq:
            raise BadInput(f"{where}: expected role=column pairs separated by commas, got {shown(part)}")
        if role.strip() in out:
            raise BadInput(f"{where}: role {shown(role.strip())} is named twice ({shown(out[role.strip()])} and "
                           f"{shown(col.strip())}); name each role once")
        out[role.strip()] = col.strip()
    if (problem := columns_problem(out)) is not None:
        raise BadInput(f"{where}: {problem}")
    return out


def map_columns(rows: Sequence[Row], columns: dict[str, str], source: str) -> tuple[list[Row], dict[str, str]]:
    """Rows whose `qid`, `question` and `answer` come from the mapped columns, or else from the first column the
    file has of each role's defaults (COLUMN_ROLES), and which column each role came from; a mapped column the file
    does not have is bad input."""
    present: dict[str, None] = {}
    for row in rows:
        present.update(dict.fromkeys(row))
    copies: dict[str, str] = {}
    used: dict[str, str] = {}
    for role, defaults in COLUMN_ROLES.items():
        col = columns.get(role)
        if col is not None:
            if col not in present:
                have = ", ".join(present) or "none"
                raise BadInput(f"{source}: dataset.columns.{role} = {shown(col)}: no such column (the file has {have})"[:300])
        elif role != "qid":  # an unmapped qid stays where `prepare` finds it (id_column), named in its errors
            col = next((c for c in defaults if c in present), None)
        if col is not None:
            used[role] = col
            if col != role:
                copies[role] = col
    if not copies:
        return list(rows), used
    return [{**row, **{role: row.get(col) for role, col in copies.items()}} for row in rows], used


def answer_aliases(value: object, where: str, *, column: str = "answer", json_lists: bool = False) -> list[str]:
    """Every accepted answer of a row: a string, a number, or a list of them (a Parquet list column, a JSON array;
    in a CSV cell, with `json_lists`, a JSON array of strings); the first is the gold answer, duplicates dropped."""
    if json_lists and isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]"):
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError:
            pass
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items:
        raise BadInput(f"{where}: column {shown(column)} is an empty list (give at least one answer)")
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            text = item
        elif isinstance(item, int) and not isinstance(item, bool):
            text = str(item)
        elif isinstance(item, float) and math.isfinite(item):
            text = str(int(item)) if item.is_integer() else repr(item)
        else:
            inside = " in a list" if isinstance(value, list | tuple) else ""
            raise BadInput(f"{where}: column {shown(column)} must be a string, a number or a list of them, "
                           f"found {_kind(item)}{inside}")
        if not text.strip():  # an empty gold answer is contained in every answer: every one would grade correct
            raise BadInput(f"{where}: column {shown(column)} holds an empty answer {shown(text)} (give the gold answer)")
        _bounded(text, "answer", where, column)
        out.append(text)
    return list(dict.fromkeys(out))


# -- qids and strata -----------------------------------------------------------
def question_qid(question: str) -> str:
    """The qid of a row that has none: the first 16 hex digits of sha256(question)."""
    return hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


def order_key(seed: str, qid: str) -> str:
    """Order inside a stratum: lowercase hex sha256 of seed + qid."""
    return hashlib.sha256((seed + qid).encode("utf-8")).hexdigest()


def prepare(
    rows: Sequence[Row], source: str, strata: Sequence[str] = STRATA
) -> list[tuple[str, StratumKey, Row]]:
    """Validate rows and give each its qid and stratum key; the row gains (or gets filled) a `qid` column."""
    if not rows:
        raise BadInput(f"{source}: no questions in the file")
    columns: set[str] = set()
    for row in rows:
        columns.update(row)
    q_col = next((c for c in COLUMN_ROLES["question"] if c in columns), "question")  # `problem` in SimpleQA files
    for col in (q_col, *strata):
        if col not in columns:
            raise BadInput(f"{source}: missing column {shown(col)} (needed for sampling)")
    id_col = id_column(columns)
    out: list[tuple[str, StratumKey, Row]] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows, start=1):
        where = f"{source}: row {index}"
        question = row.get(q_col)
        if not isinstance(question, str) or not question.strip():
            raise BadInput(f"{where}: column {shown(q_col)} must be a non-empty string, found {_kind(question)}")
        _bounded(question, "question", where, q_col)
        key = tuple(_stratum_value(row.get(col), where, col) for col in strata)
        qid = _qid_of(row.get(id_col) if id_col else None, question, where, id_col or "qid")
        _bounded(qid, "qid", where, id_col or "qid")
        if qid in seen:
            raise BadInput(f"{where}: qid {shown(qid)} already used by row {seen[qid]}")
        seen[qid] = index
        filled = dict(row)
        filled["qid"] = qid
        out.append((qid, key, filled))
    return out


def id_column(columns: Iterable[str]) -> str | None:
    """The column that holds question ids (`qid`, else `id`, else `question_id`), or None: ids from the text."""
    present = set(columns)
    return next((c for c in ID_COLUMNS if c in present), None)


def _qid_of(value: object, question: str, where: str, column: str) -> str:
    if value is None or value == "":
        return question_qid(question)
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise BadInput(f"{where}: column {shown(column)} must be a string, found {_kind(value)}")


def _stratum_value(value: object, where: str, col: str) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{where}: strata column {shown(col)} must be a string, found {_kind(value)}")
    return _bounded(value, "stratum", where, col)


def _bounded(text: str, role: str, where: str, column: str) -> str:
    """The cell, or BadInput when it is longer than its role may be (MAX_CHARS): one value never becomes an event
    of its size."""
    if len(text) > MAX_CHARS[role]:
        raise BadInput(f"{where}: column {shown(column)} holds {len(text):,} characters, more than a {role} may "
                       f"({MAX_CHARS[role]:,})")
    return text


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return type(value).__name__


# -- allocation ----------------------------------------------------------------
def quotas(sizes: dict[StratumKey, int], n: int) -> dict[StratumKey, int]:
    """Hamilton largest remainder in integers: floor of n·size/total, then leftover seats by
    largest remainder, ties by larger stratum, then by ascending stratum key."""
    total = sum(sizes.values())
    if n <= 0 or n > total:
        raise ValueError(f"n must be in 1..{total}, got {n}")
    floors = {key: n * size // total for key, size in sizes.items()}
    remainders = {key: n * size % total for key, size in sizes.items()}
    leftover = n - sum(floors.values())
    order = sorted(sizes, key=lambda k: (-remainders[k], -sizes[k], k))
    for key in order[:leftover]:
        floors[key] += 1
    return floors


def sample(
    rows: Sequence[Row],
    n: int,
    seed: str,
    *,
    source: str = "questions",
    strata: Sequence[str] = STRATA,
) -> list[Row]:
    """The sampled rows (each with its `qid`), by stratum key then by sha256(seed + qid)."""
    prepared = prepare(rows, source, strata)
    if n <= 0:
        raise BadInput(f"--n must be positive, got {n}")
    if n > len(prepared):
        raise BadInput(f"--n {n} is more than the {len(prepared)} questions in {source}")
    groups: dict[StratumKey, list[tuple[str, Row]]] = {}
    for qid, key, row in prepared:
        groups.setdefault(key, []).append((order_key(seed, qid), row))
    seats = quotas({key: len(members) for key, members in groups.items()}, n)
    chosen: list[Row] = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda pair: pair[0])
        chosen.extend(row for _, row in members[: seats[key]])
    return chosen


# -- writing -------------------------------------------------------------------
def _enc_hook(value: object) -> object:
    """Values msgspec does not know (numpy scalars and arrays, arrow leftovers) become plain JSON."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    as_py = getattr(value, "as_py", None)
    if callable(as_py):
        return as_py()
    return str(value)


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def to_jsonl(rows: Iterable[Row]) -> bytes:
    """One JSON object per line, columns in their file order."""
    return b"".join(_encoder.encode(row) + b"\n" for row in rows)
