"""Step-by-step comparison of a recorded trajectory with its replay: the first divergent step, readably."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from searchtrace.engine import fold
from searchtrace.store import ModelResponded, Payload, type_of

# Wire facts that legitimately differ between a recording and its replay (timing, retries, cache, byte counts).
VOLATILE = frozenset({"latency_ms", "provider_ms", "queue_ms", "cache_hit", "wait_s", "n_bytes", "raw_digest"})
# Ids a producer may mint afresh; compared by order of first appearance, not by value.
MINTED = frozenset({"trajectory_id", "run_id"})
_MAX_VALUE = 240


class Divergence(msgspec.Struct, kw_only=True):
    """The first step where a replay differs from its recording."""

    trajectory_id: str
    step: int  # 1-based index among compared steps (call.retried excluded)
    type: str
    iteration: int | None
    fields: list[tuple[str, Any, Any]]  # (path, recorded, replayed)
    detail: str = ""  # e.g. a unified diff of the model request

    def render(self) -> str:
        where = f"iteration {self.iteration}, " if self.iteration is not None else ""
        lines = [f"trajectory {self.trajectory_id}: first divergent step {self.step} ({where}{self.type})"]
        for path, rec, rep in self.fields:
            lines.append(f"  {path}: recorded {_show(rec)}; replayed {_show(rep)}")
        if self.detail:
            lines.extend("  " + ln for ln in self.detail.rstrip("\n").splitlines())
        return "\n".join(lines)


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(no such step)"
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


_ABSENT: Any = object()


def _canon(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in VOLATILE:
                continue
            if k in MINTED and isinstance(v, str):
                v = ids.setdefault(v, f"<{k}#{len(ids) + 1}>")
            if k == "error" and isinstance(v, str):
                v = "<error>"  # whether a call failed counts; its text carries retry counts a replay cannot repeat
            out[k] = _canon(v, ids)
        return out
    if isinstance(value, list):
        return [_canon(v, ids) for v in value]
    return value


def _field_diffs(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in sorted(set(a) | set(b)):
            out.extend(_field_diffs(a.get(k, _ABSENT), b.get(k, _ABSENT), f"{path}.{k}" if path else k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(_field_diffs(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [(path or "(step)", a, b)]


def request_diff(recorded: bytes | None, replayed: bytes | None) -> str:
    """A unified diff of two model requests (stored as JSON blobs), one message per block."""
    if recorded is None or replayed is None:
        return ""

    def lines(raw: bytes) -> list[str]:
        try:
            body = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return raw.decode("utf-8", "replace").splitlines()
        msgs = body.get("messages", body) if isinstance(body, dict) else body
        out: list[str] = []
        for i, m in enumerate(msgs if isinstance(msgs, list) else [msgs]):
            role = m.get("role", "?") if isinstance(m, dict) else "?"
            content = m.get("content") if isinstance(m, dict) else m
            out.append(f"[{i}] {role}:")
            out.extend(f"    {ln}" for ln in str(content).splitlines() or [""])
        return out

    diff = difflib.unified_diff(lines(recorded), lines(replayed), "recorded request", "replayed request", n=1, lineterm="")
    return "\n".join(list(diff)[:60])


def first_divergence(
    trajectory_id: str,
    recorded: Sequence[Payload],
    replayed: Sequence[Payload],
    get_request: Callable[[str], bytes | None] | None = None,
) -> Divergence | None:
    """None when every step matches; else the first step that differs (or is missing on one side)."""
    a, b = fold(recorded).events, fold(replayed).events  # retries aside: a replay answers every request at once
    ids_a: dict[str, str] = {}
    ids_b: dict[str, str] = {}
    iteration: int | None = None  # the turn a step belongs to (results and completions carry no iteration)
    for i in range(max(len(a), len(b))):
        pa = a[i] if i < len(a) else None
        pb = b[i] if i < len(b) else None
        iteration = getattr(pa if pa is not None else pb, "iteration", iteration)
        ca = _canon(msgspec.to_builtins(pa), ids_a) if pa is not None else _ABSENT
        cb = _canon(msgspec.to_builtins(pb), ids_b) if pb is not None else _ABSENT
        if isinstance(ca, dict) and isinstance(cb, dict) and None in (ca.get("request_sha256"), cb.get("request_sha256")):
            ca.pop("request_sha256", None)  # recorded without a fingerprint: nothing to compare
            cb.pop("request_sha256", None)
        if ca == cb:
            continue
        ref = pa if pa is not None else pb
        assert ref is not None
        if ca is _ABSENT or cb is _ABSENT:
            fields: list[tuple[str, Any, Any]] = [("(step)", ca, cb)]
        elif ca.get("type") != cb.get("type"):
            fields = [("type", ca.get("type"), cb.get("type"))]
        else:
            fields = _field_diffs(ca, cb)
        detail = ""
        if isinstance(pa, ModelResponded) and isinstance(pb, ModelResponded) and pa.request_sha256 != pb.request_sha256:
            detail = "the model request differs from the recorded one"
            if get_request is not None and pa.request_sha256 and pb.request_sha256:
                diff = request_diff(get_request(pa.request_sha256), get_request(pb.request_sha256))
                detail += (":\n" + diff) if diff else ""
        return Divergence(
            trajectory_id=trajectory_id,
            step=i + 1,
            type=type_of(ref),
            iteration=iteration,
            fields=fields,
            detail=detail,
        )
    return None


__all__ = ["VOLATILE", "Divergence", "first_divergence", "request_diff"]
