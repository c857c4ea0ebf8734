"""The fetch cache on disk: one gzip file per normalised URL, written atomically, so it survives runs.

No key reaches the disk (docs/reliability.md, "Keys in tool arguments and URLs"): a URL's key-named parameters and
password are scrubbed before it names or enters a file, as the recorder scrubs them, so a page fetched with
`?api_key=…` is cached (and found again) under the same URL with the key as `***`; the page text is scrubbed the
same way, as its recorded blob is.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from pathlib import Path

import anyio
import msgspec

from searchtrace.adapters._keys import scrub_named_text

CACHE_DIR_ENV = "SEARCHTRACE_CACHE_DIR"


class CachedPage(msgspec.Struct, kw_only=True):
    """What a later run needs to answer a fetch without the network."""

    url_normalized: str
    content: str
    n_bytes: int
    http_status: int | None = None


def default_cache_dir() -> Path:
    """$SEARCHTRACE_CACHE_DIR, else $XDG_CACHE_HOME/searchtrace/fetch (~/.cache/...)."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "searchtrace" / "fetch"


class FetchCache:
    """Keyed by sha256 of the normalised URL; values are gzip-compressed msgspec JSON."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_for(self, url_normalized: str) -> Path:
        digest = hashlib.sha256(scrub_named_text(url_normalized).encode()).hexdigest()
        return self.root / digest[:2] / f"{digest}.json.gz"

    async def get(self, url_normalized: str) -> CachedPage | None:
        return await anyio.to_thread.run_sync(self._get, url_normalized)

    async def put(self, page: CachedPage) -> None:
        await anyio.to_thread.run_sync(self._put, page)

    def _get(self, url_normalized: str) -> CachedPage | None:
        path = self.path_for(url_normalized)
        try:
            page = msgspec.json.decode(gzip.decompress(path.read_bytes()), type=CachedPage)
        except (OSError, EOFError, msgspec.DecodeError, msgspec.ValidationError):
            return None  # absent or damaged: fetch again
        return page if page.url_normalized == scrub_named_text(url_normalized) else None

    def _put(self, page: CachedPage) -> None:
        path = self.path_for(page.url_normalized)
        page = msgspec.structs.replace(page, url_normalized=scrub_named_text(page.url_normalized),
                                       content=scrub_named_text(page.content))
        path.parent.mkdir(parents=True, exist_ok=True)
        data = gzip.compress(msgspec.json.encode(page), compresslevel=6, mtime=0)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
