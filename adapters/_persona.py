"""What a provider module's sandbox persona and routes are given and give back, so no provider imports the sandbox.

The sandbox app hands each route handler a `WireRequest` and a `Shelf` (its world, ranked for one persona) and
sends back the `WireReply`, or, for a `Deferred`, runs it through the fault plan keyed by the request (docs/concepts/sandbox.md).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec

from searchtrace.adapters._urls import domain_of

EPOCH = 1767225600  # 2026-01-01T00:00:00Z: a fixed clock, so bodies are byte-identical across runs
RETRY_HEADERS = {"Retry-After": "1"}
# the plain message of an injected fault, for providers whose error body carries one of their own wording
FAULT_TEXT = {429: "Rate limit exceeded", 401: "Invalid API key", 500: "Internal server error",
              503: "Service temporarily unavailable"}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
canon = msgspec.json.Encoder(order="sorted")  # a request's canonical bytes (its identity for faults and ids)


class PageView(Protocol):
    """A page of the sandbox world as a persona reads it."""

    url: str
    title: str
    site: str
    description: str
    body: str
    published: str  # YYYY-MM-DD
    authority: float
    kind: str  # gold, outdated, distractor, filler


class Hit(msgspec.Struct, kw_only=True):
    """One result of a persona, before it is put in a provider's wire format."""

    page: PageView
    url: str  # the spelling this provider returns (may differ from the canonical URL)
    title: str
    rank: int
    description: str = ""  # brave description / firecrawl description
    extra_snippets: list[str] = []  # brave only
    content: str = ""  # tavily lead; perplexity / linkup page extracts
    score: float = 0.0
    passages: list[str] = []  # exa highlights, parallel excerpts, youcom snippets
    answer: str = ""  # serpapi / serper answer box (rank 1 only)


class Shelf(Protocol):
    """The sandbox world's ranking tools; `persona` selects the part of the web that provider indexes."""

    @property
    def pages(self) -> Sequence[PageView]: ...

    def ranked(self, persona: str, query: str, field: str = "full") -> list[tuple[float, int]]:
        """(BM25 score, page index) over `field` ("full" or "head"), pages this persona does not index left out."""
        ...

    def bm25_hits(self, persona: str, query: str, n: int) -> list[tuple[int, int]]:
        """(rank, page index) of the top n by BM25."""
        ...

    def authority_order(self, persona: str, query: str, n: int) -> list[tuple[int, int, float]]:
        """(rank, page index, score relative to rank 1) by best passage weighted by site authority."""
        ...

    def serp(self, persona: str, query: str, n: int, limit: int) -> list[Hit]:
        """Google-style results: title and description first, fresher pages ahead, `limit`-character snippets
        and an answer box on a strong rank 1."""
        ...

    def sentences(self, i: int) -> list[str]: ...

    def passage_scores(self, query: str, i: int) -> list[float]: ...

    def best(self, query: str, i: int, k: int) -> list[str]:
        """The page's k best passages for the query; the lead when none match."""
        ...

    def plain(self, i: int) -> str:
        """The page as plain sentences."""
        ...

    def answer(self, query: str, hits: list[Hit], k: int = 1) -> str | None:
        """A generated answer: the k best sentences of the top result's page."""
        ...

    def respelled(self, persona: str, url: str) -> bool:
        """Whether this persona spells `url` its own way (host case, tracking tags, a trailing slash)."""
        ...

    def terms(self, query: str) -> set[str]:
        """The query's index terms."""
        ...


class WireRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request to a provider's sandbox route."""

    method: str
    params: dict[str, str]  # query parameters
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any] | None  # the JSON object body; None when it does not parse or is not an object

    def bearer(self) -> str | None:
        """The bearer token, '' for 'Bearer ' with nothing after it, None without the header."""
        auth = self.headers.get("authorization")
        if auth is None:
            return None
        scheme, _, token = auth.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    def fields(self) -> dict[str, Any]:
        """Query parameters, overlaid by the JSON body of a POST (routes that take both)."""
        out: dict[str, Any] = dict(self.params)
        if self.method == "POST":
            out.update(self.body or {})
        return out


class WireReply(msgspec.Struct, frozen=True):
    """A JSON reply: its body, status and headers."""

    body: Any
    status: int = 200
    headers: dict[str, str] | None = None


class Deferred(msgspec.Struct, frozen=True):
    """A valid search: the sandbox picks a fault by `key` and `text` (a query's markers), else sends `produce()`."""

    key: str
    text: str
    produce: Callable[[], WireReply]


class SandboxRoute(msgspec.Struct, frozen=True):
    """One path of a provider in the sandbox, below its base URL."""

    path: str
    methods: tuple[str, ...]
    handler: Callable[[WireRequest, Shelf], WireReply | Deferred]


def request_key(*parts: str | bytes) -> str:
    """A stable key for 'the same request' (attempt counting, fault draws, ids)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\x00")
    return h.hexdigest()[:32]


def stable_uuid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "sandbox:" + "|".join(parts)))


def digest(*parts: str, n: int = 24) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:n]


def age(published: str) -> str:
    """YYYY-MM-DD as a SERP shows it ("May 17, 2026")."""
    y, m, d = published.split("-")
    return f"{_MONTHS[int(m) - 1]} {int(d)}, {y}"


def favicon(url: str) -> str:
    return f"https://{domain_of(url)}/favicon.ico"


def clip(text: str, limit: int) -> str:
    """`text` cut at a word boundary before `limit` characters, marked with " ..."."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def is_false(value: Any) -> bool:
    return str(value).lower() in ("false", "0", "no")


def is_on(value: Any) -> bool:
    """A request flag that is set (true, "basic", 1, …), not absent, null or a false spelling."""
    return bool(value) and not is_false(value)


def rejected(token: str | None) -> bool:
    """The sandbox's key rule: a missing key or one starting with `bad` is refused."""
    return not token or token.startswith("bad")


def int_field(value: Any, default: int) -> int | None:
    """An integer request field (None when it is not one)."""
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def obj_field(value: Any) -> dict[str, Any]:
    """A nested request object, {} when absent or not an object."""
    return value if isinstance(value, dict) else {}


def jina_error(code: int, name: str, status: int, message: str) -> dict[str, Any]:
    """Jina's error envelope (Reader and Search share it)."""
    return {"data": None, "code": code, "name": name, "status": status, "message": message,
            "readableMessage": f"{name}: {message}"}


def retry_headers(status: int) -> dict[str, str]:
    """Retry-After on a 429, nothing otherwise."""
    return dict(RETRY_HEADERS) if status == 429 else {}
