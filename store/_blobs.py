"""Content-addressed blobs: sha256 of the raw bytes, stored zstd-free (zlib) so DuckDB needs no extension."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import duckdb

from searchtrace.store._arrow import binaries, ints, strings
from searchtrace.store._cursor import Cursor
from searchtrace.store._errors import StoreError

CODEC = "zlib"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def insert(con: duckdb.DuckDBPyConnection, items: Sequence[bytes], digests: Sequence[str],
           known: AbstractSet[str]) -> None:
    """Insert inside the caller's transaction; content already stored is skipped. `digests`: the items' (`digest`,
    taken once by the caller); `known`: the stored digests, as the writer keeps them (a lookup in the table would
    join all of it on every commit)."""
    import pyarrow as pa  # here, not at import: `digest` is needed by processes that never insert a blob

    rows: dict[str, bytes] = {}
    for d, b in zip(digests, items, strict=True):
        if d not in known:
            rows.setdefault(d, b)
    if rows:
        data = pa.table(
            {
                "sha256": strings(list(rows)),
                "bytes": binaries([zlib.compress(b, 6) for b in rows.values()]),
                "codec": strings([CODEC] * len(rows)),
                "n_bytes": ints([len(b) for b in rows.values()], pa.int64(), "q"),
            }
        )
        con.register("__blob_rows", data)
        try:
            con.execute("INSERT INTO blobs SELECT * FROM __blob_rows")
        finally:
            con.unregister("__blob_rows")


def get(con: Cursor, sha256: str) -> bytes:
    row = con.execute("SELECT bytes, codec FROM blobs WHERE sha256 = ? LIMIT 1", [sha256]).fetchone()
    if row is None:
        raise KeyError(f"blob {sha256} is not in the store")
    return _checked(sha256, bytes(row[0]), row[1])


def _checked(sha256: str, raw: bytes, codec: str) -> bytes:
    try:
        data = zlib.decompress(raw) if codec == CODEC else raw
    except zlib.error:
        data = None
    if data is None or digest(data) != sha256:  # never hand on bytes other than the ones that were stored
        raise StoreError(f"blob {sha256[:16]}: its bytes do not match its digest; `searchtrace verify` tells more")
    return data


def get_many(con: Cursor, digests: Sequence[str]) -> dict[str, bytes]:
    """The content of every digest that is stored, in one scan (a digest not stored is left out), each checked
    against its digest like `get`."""
    if not digests:
        return {}
    rows = con.execute(
        "SELECT sha256, bytes, codec FROM blobs WHERE sha256 IN (SELECT unnest(?::VARCHAR[]))", [list(set(digests))]
    ).fetchall()
    return {d: _checked(d, bytes(raw), codec) for d, raw, codec in rows}


def exists(con: Cursor, sha256: str) -> bool:
    return con.execute("SELECT 1 FROM blobs WHERE sha256 = ? LIMIT 1", [sha256]).fetchone() is not None
