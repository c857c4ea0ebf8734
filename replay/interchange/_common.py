"""What every importer shares: error text naming file/line/field, line reading, ids, and the keys already stored."""

from __future__ import annotations

import hashlib
import re
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from searchtrace.replay.interchange._formats import JudgmentLine
from searchtrace.store import BadInput, EventLog, NewEvent, Payload, copy_bounded, shown

RUN_ID = "import"
DATASET_STREAM = "dataset:imported"
AUDIT_STREAM = "audit:imported"
AUDIT_SOURCE = "imported"
CHUNK = 50_000  # events per append transaction for big files (the file is fully validated before the first)
_sorted = msgspec.json.Encoder(order="sorted")

_NAMESPACE = uuid.NAMESPACE_URL.bytes + b"searchtrace:"
_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_SET = (0x8000 << 48) | (5 << 76)
_UUID_NEW = object.__new__
_SETATTR = object.__setattr__
_UNKNOWN = uuid.SafeUUID.unknown


def uuid_of_int(i: int) -> uuid.UUID:
    """uuid.UUID(int=i) without the argument checks of UUID.__init__ (i is a checked 128-bit value)."""
    u = _UUID_NEW(uuid.UUID)
    _SETATTR(u, "int", i)
    _SETATTR(u, "is_safe", _UNKNOWN)
    return u


def _uuid5(h: Any) -> uuid.UUID:
    return uuid_of_int((int.from_bytes(h.digest()[:16]) & _CLEAR) | _SET)


def event_id(*parts: str) -> uuid.UUID:
    """store.stable_event_id (uuid5 of the joined parts), bit for bit, at a third of its cost."""
    return _uuid5(hashlib.sha1(_NAMESPACE + "\x1f".join(parts).encode()))


def event_ids(*prefix: str, n: int) -> list[uuid.UUID]:
    """event_id(*prefix, str(k)) for k in range(n), hashing the shared prefix once."""
    base = hashlib.sha1(_NAMESPACE + "\x1f".join(prefix).encode() + b"\x1f")
    out = []
    for k in range(n):
        h = base.copy()
        h.update(str(k).encode())
        out.append(_uuid5(h))
    return out


def digest(obj: Any) -> str:
    """Content digest of a msgspec-encodable value (keys sorted, so spelling order does not matter)."""
    return hashlib.sha256(_sorted.encode(obj)).hexdigest()[:32]


def key_digest(*parts: str) -> bytes:
    """16-byte digest of a composite key (small in memory for hundreds of thousands of verdicts)."""
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=16).digest()


Raw = Callable[[str], bytes] | None  # a raw body by its digest (None: no --blobs folder)
_DIGEST = re.compile(r"[0-9a-f]{64}")


def blob_folder(folder: Path | None) -> Raw:
    """The reader of the files `export --blobs DIR` wrote: each named by the sha256 of its bytes (checked)."""
    if folder is None:
        return None
    if not folder.is_dir():
        raise BadInput(f"{folder}: --blobs names no folder")

    def read(d: str) -> bytes:
        if not _DIGEST.fullmatch(d):
            raise BadInput(f"{shown(d)} is not a sha256 digest")
        try:
            data = (folder / d).read_bytes()
        except OSError as exc:
            raise BadInput(f"{folder / d}: cannot read the raw body ({exc.strerror})") from None
        if hashlib.sha256(data).hexdigest() != d:
            raise BadInput(f"{folder / d}: its bytes do not have the digest it is named by")
        return data

    return read


def fail(path: Path, line: int, field_: str, message: str) -> BadInput:
    return BadInput(f"{path}: line {line}: field {field_}: {message}")


def msgspec_field(exc: msgspec.ValidationError) -> tuple[str, str]:
    """Split msgspec's 'message - at `$.a.b`' into (field path, message)."""
    text = str(exc)
    msg, where = text, ""
    if " - at `$" in text:
        msg, _, at = text.rpartition(" - at `")
        where = at.rstrip("`").removeprefix("$").lstrip(".")
    missing = re.fullmatch(r"Object missing required field `(.+)`", msg)
    if missing:
        where = f"{where}.{missing.group(1)}" if where else missing.group(1)
    return where or "(line)", msg


def decode_line(decoder: Any, path: Path, n: int, raw: bytes) -> Any:
    """Decode one JSONL line, or raise BadInput naming the file, the line and the field."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        f, msg = msgspec_field(exc)
        raise fail(path, n, f, msg) from None
    except msgspec.DecodeError as exc:
        raise fail(path, n, "(line)", f"not valid JSON ({exc})") from None
    except RecursionError:
        raise fail(path, n, "(line)", "JSON nested too deeply") from None


_FROZEN: dict[Path, Path] = {}  # input file as named -> the private copy every pass reads


def _freeze(path: Path, copy: Path) -> None:
    """Read `path` once into `copy`: a regular file or a pipe (process substitution, FIFO), bounded; nothing else."""
    copy_bounded(path, copy, "import", "the input", "nothing was imported")


@contextmanager
def frozen_inputs(paths: Iterable[Path]) -> Iterator[None]:
    """Each input read exactly once, before validation: every later pass reads the same bytes (docs/reference/interchange.md import).

    A pipe can be read only once and a file can grow or change between passes; validating one reading and
    writing another would store unchecked lines. Messages still name the files as given.
    """
    with tempfile.TemporaryDirectory(prefix="searchtrace-import-") as tmp:
        todo = list(dict.fromkeys(paths))
        try:
            for i, p in enumerate(todo):
                _freeze(p, Path(tmp) / f"{i}.in")
                _FROZEN[p] = Path(tmp) / f"{i}.in"
            yield
        finally:
            for p in todo:
                _FROZEN.pop(p, None)


def lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, bytes) of every non-blank line (of the frozen copy during an import)."""
    try:
        fh = _FROZEN.get(path, path).open("rb", buffering=1 << 20)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    with fh:
        for n, raw in enumerate(fh, 1):
            if n == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark
            if raw and not raw.isspace():  # as bool(raw.strip()), without copying the line
                yield n, raw


AuditKey = tuple[str, ...]  # ("trajectory", id) or ("cell", provider, qid, epoch or "")


def audit_key(trajectory_id: str | None, provider: str | None, qid: str | None, epoch: int | None) -> AuditKey:
    """What an imported audit row decides: one trajectory, or a (provider, qid) cell (one epoch of it, when named);
    two rows with the same key are duplicates, in one file or against the store."""
    if trajectory_id is not None:
        return ("trajectory", trajectory_id)
    return ("cell", provider or "", qid or "", "" if epoch is None else str(epoch))


def append_chunked(log: EventLog, groups: Sequence[tuple[list[NewEvent], list[bytes]]]) -> int:
    """Append groups of (events, blobs) in transactions of about CHUNK events, after everything is validated;
    returns the number of new events."""
    written = 0
    batch: list[NewEvent] = []
    kept: list[bytes] = []
    for k, (events, blobs) in enumerate(groups):
        batch += events
        kept += blobs
        if len(batch) >= CHUNK or k == len(groups) - 1:
            written += sum(1 for p in log.append(batch, blobs=kept) if p)
            batch, kept = [], []
    return written


@dataclass
class Known:
    """Keys already in the database (or in an earlier file of the same call) that a file must agree with."""

    # trajectory_id -> event_id of its stored trajectory.started, or (file, line) where this call read it
    traj_ids: dict[str, str | tuple[Path, int]] = field(default_factory=dict)
    # (run_id, provider, qid, epoch) -> trajectory_id
    traj_keys: dict[tuple[str, str, str, int], str] = field(default_factory=dict)
    judge_runs: set[str] = field(default_factory=set)
    verdicts: dict[bytes, bytes] = field(default_factory=dict)  # key_digest(run, tid, url) -> event_id bytes
    verdict_runs_loaded: set[str] = field(default_factory=set)
    audits: dict[AuditKey, str] = field(default_factory=dict)  # audit_key of an imported audit row -> event_id
    # A stored trajectory's payloads in stream order (recorded ones have no content-derived ids, so an export of
    # them is compared by content: the payloads its line gives); set by the importer, None where nothing is stored.
    stored_payloads: Callable[[str], list[Payload] | None] = field(default=lambda _tid: None)
    same_as_stored: set[str] = field(default_factory=set)  # trajectory ids whose lines repeat the store: not appended
    # likewise a stored verdict as its judgment line, by (judge_run_id, trajectory_id, url), and the repeated keys
    stored_judgment: Callable[[str, str, str], JudgmentLine | None] = field(default=lambda _r, _t, _u: None)
    same_verdicts: set[bytes] = field(default_factory=set)
    raw: Raw = None  # the raw bodies of `import --blobs DIR`, by digest
    runs: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)  # run_id -> stored (config, code)

    @classmethod
    def load(cls, log: EventLog) -> Known:
        k = cls()
        if log.head == 0:
            return k
        cur = log.cursor()
        try:
            for eid, tid, run, prov, qid, epoch in cur.execute(
                "SELECT CAST(event_id AS VARCHAR), payload->>'$.trajectory_id', run_id, payload->>'$.provider', "
                "payload->>'$.qid', coalesce(TRY_CAST(payload->>'$.epoch' AS INTEGER), 1) FROM events "
                "WHERE type = 'trajectory.started' ORDER BY position"
            ).fetchall():
                k.traj_ids.setdefault(tid, eid)
                k.traj_keys.setdefault((run, prov, qid, int(epoch)), tid)
            for run, config, code in cur.execute(
                "SELECT run_id, payload->'$.config', payload->>'$.code_version' FROM events "
                "WHERE type = 'run.started' AND stream_id = 'run:' || run_id ORDER BY position"
            ).fetchall():
                k.runs.setdefault(run, (msgspec.json.decode(config), code))
            sql = "SELECT payload->>'$.judge_run_id' FROM events WHERE type = 'judge.started'"
            k.judge_runs = {r[0] for r in cur.execute(sql).fetchall()}
            for eid, tid, prov, qid, epoch in cur.execute(
                "SELECT CAST(event_id AS VARCHAR), payload->>'$.trajectory_id', payload->>'$.provider', "
                "payload->>'$.qid', TRY_CAST(payload->>'$.epoch' AS INTEGER) FROM events "
                "WHERE type = 'audit.answer' AND payload->>'$.source' = ? ORDER BY position",
                [AUDIT_SOURCE],
            ).fetchall():
                k.audits.setdefault(audit_key(tid, prov, qid, epoch), eid)
        finally:
            cur.close()
        return k

    def load_verdicts(self, log: EventLog, runs: Iterable[str]) -> None:
        """Stored verdict keys of these judge runs (loaded once per run, only when a file names the run)."""
        todo = sorted(set(runs) - self.verdict_runs_loaded)
        self.verdict_runs_loaded.update(todo)
        if not todo or log.head == 0:
            return
        cur = log.cursor()
        try:
            cur.execute(
                "SELECT event_id, payload->>'$.judge_run_id', payload->>'$.item.trajectory_id', "
                "payload->>'$.item.url_normalized' FROM events WHERE type = 'judge.verdict' "
                "AND payload->>'$.judge_run_id' IN (SELECT unnest(?::VARCHAR[])) ORDER BY position",
                [todo],
            )
            while rows := cur.fetchmany(50_000):
                for eid, run, tid, url in rows:
                    self.verdicts.setdefault(key_digest(run, tid, url), eid.bytes)
        finally:
            cur.close()
