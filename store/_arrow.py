"""Arrow columns built from their buffers, never with `pa.array` or `pa.scalar`: those import pandas wherever it
is installed (0.2-0.7 CPU-s per process), and pyarrow itself loads only in a process that inserts."""

from __future__ import annotations

import array
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


def ints(values: Sequence[int] | array.array[int], kind: pa.DataType, code: str) -> pa.Array:
    """Fixed-width integers (`code`: the array module's type code of `kind`'s width)."""
    import pyarrow as pa

    buf = values if isinstance(values, array.array) else array.array(code, values)
    return pa.Array.from_buffers(kind, len(buf), [None, pa.py_buffer(buf)])


def _varwidth(kind: pa.DataType, parts: Sequence[bytes], lengths: Iterable[int] | None = None) -> pa.Array:
    import pyarrow as pa

    offsets = array.array("q", (0,))
    offsets.extend(accumulate(map(len, parts) if lengths is None else lengths))
    return pa.Array.from_buffers(kind, len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(parts))])


def strings(values: Sequence[str]) -> pa.Array:
    """UTF-8 strings: ids, types and hashes are ASCII, encoded in one call (their lengths are their byte lengths)."""
    import pyarrow as pa

    joined = "".join(values)
    if joined.isascii():
        return _varwidth(pa.large_string(), [joined.encode("ascii")], map(len, values))
    return _varwidth(pa.large_string(), [v.encode() for v in values])


def json_strings(payloads: Sequence[bytes]) -> pa.Array:
    """msgspec output is valid UTF-8 JSON by construction: one buffer, stored as-is, not re-validated."""
    import pyarrow as pa

    return pa.ExtensionArray.from_storage(pa.json_(pa.large_string()), _varwidth(pa.large_string(), payloads))


def binaries(values: Sequence[bytes]) -> pa.Array:
    import pyarrow as pa

    return _varwidth(pa.large_binary(), values)


def uuids(raw: bytes, n: int) -> pa.Array:
    """`n` UUIDs from their 16-byte forms, concatenated."""
    import pyarrow as pa

    return pa.ExtensionArray.from_storage(pa.uuid(), pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(raw)]))
