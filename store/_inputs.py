"""File inputs read with a byte bound (docs/reliability.md): a regular file or a pipe, never a device or a folder,
and never more than its kind's limit, so an endless input (/dev/zero, a FIFO fed forever) is refused after at most
that many bytes instead of being read until memory or the disk runs out."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from searchtrace.store._errors import BadInput

MIB = 1 << 20
# The most bytes each kind of input may hold; an input that goes on is refused once it passes its limit.
LIMITS: dict[str, int] = {
    "import": 64 * 1024 * MIB,  # trajectory, judgment and run lines (streamed from a private copy)
    "otel": 1024 * MIB,  # an OTLP trace file (decoded whole)
    "audit": 1024 * MIB,  # an audit TSV (streamed from a private copy)
    "text": 64 * MIB,  # a config, prices, prompt or metric file
}
_CHUNK = MIB


def _limit_text(limit: int) -> str:
    return f"{limit // MIB:,} MiB" if limit >= MIB else f"{limit:,} bytes"


def _tail(action: str) -> str:
    return f"; {action}" if action else ""


def check_input(path: Path, what: str = "the input", action: str = "") -> None:
    """BadInput unless `path` is a regular file or a pipe (process substitution, FIFO); `action` ends the line."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what} ({exc.strerror}){_tail(action)}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "a device or socket"
        raise BadInput(f"{path}: {kind}, not a file or a pipe{_tail(action)}")


def _too_long(path: Path, kind: str, action: str) -> BadInput:
    return BadInput(f"{path}: more than {_limit_text(LIMITS[kind])}, the most a {kind} input may hold (an endless "
                    f"input?){_tail(action)}")


def read_bounded(path: Path, kind: str, what: str = "the input", action: str = "") -> bytes:
    """The whole input, refused (one line) when it is not a file or a pipe or holds more than LIMITS[kind] bytes."""
    check_input(path, what, action)
    limit = LIMITS[kind]
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what} ({exc.strerror}){_tail(action)}") from None
    if len(data) > limit:
        raise _too_long(path, kind, action)
    return data


def copy_bounded(path: Path, copy: Path, kind: str, what: str = "the input", action: str = "") -> None:
    """Read `path` once into the private file `copy`, refused (one line) past LIMITS[kind] bytes."""
    check_input(path, what, action)
    limit, done = LIMITS[kind], 0
    try:
        with path.open("rb") as src, copy.open("wb") as dst:
            while chunk := src.read(min(_CHUNK, limit + 1 - done)):
                done += len(chunk)
                if done > limit:
                    raise _too_long(path, kind, action)
                dst.write(chunk)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read {what} ({exc.strerror}){_tail(action)}") from None
