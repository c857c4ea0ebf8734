"""Three search personas over one World: same pages, different decision surfaces (SPEC §11).

- brave: BM25 ranking; snippet-rich (query-biased description with <strong> terms, plus extra snippets).
- tavily: ranks by best passage weighted by site authority (the answer page tends to be rank 1);
  its `content` is the page's lead, so the answer shows only when the lead states it.
- firecrawl: BM25 ranking; sparse snippets (the page's short meta description).
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from searchtrace.adapters.sandbox.corpus import Page
from searchtrace.adapters.sandbox.world import World, tokens

PERSONAS = ("brave", "tavily", "firecrawl")


class Hit(msgspec.Struct, kw_only=True):
    """One result of a persona, before it is put in a provider's wire format."""

    page: Page
    url: str  # the spelling this provider returns (may differ from the canonical URL)
    title: str
    rank: int
    description: str = ""  # brave description / firecrawl description
    extra_snippets: list[str] = []  # brave only
    content: str = ""  # tavily only
    score: float = 0.0


def _h(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)


def _variant(url: str, persona: str) -> str:
    """Providers spell some URLs differently (host case, utm_ tags, trailing slash); normalisation undoes it."""
    k = _h(persona, url) % 4
    if k != 0:
        return url
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    if persona == "brave":
        return f"{scheme}://{host[:1].upper()}{host[1:]}/{path}"
    if persona == "tavily":
        return url + ("&" if "?" in url else "?") + "utm_source=tavily&utm_medium=search"
    return url if url.endswith("/") else url + "/"


def covered(persona: str, page: Page) -> bool:
    """Each provider indexes a different (deterministic) part of the web; answer pages are rarely missing."""
    return _h("cover", persona, page.url) % 100 < (97 if page.kind == "gold" else 85)


def _ranked(world: World, persona: str, query: str, field: str = "full") -> list[tuple[float, int]]:
    return [(s, i) for s, i in world.bm25(query, field) if covered(persona, world.pages[i])]


def _decorate(text: str, query: str) -> str:
    """Brave's text decorations: query terms wrapped in <strong>."""
    q = set(tokens(query))
    return re.sub(r"[A-Za-z0-9]+", lambda m: f"<strong>{m.group(0)}</strong>" if m.group(0).lower() in q else m.group(0), text)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def _brave(world: World, query: str, n: int, decorate: bool, extra: bool) -> list[Hit]:
    out = []
    for rank, (_, i) in enumerate(_ranked(world, "brave", query)[:n], start=1):
        page = world.pages[i]
        sents = [x for x, _ in world.page_sentences(i)]
        scored = sorted(((sc, j, sents[j]) for j, sc in enumerate(world.passage_scores(query, i))),
                        key=lambda x: (-x[0], x[1]))
        best = [s for sc, _, s in scored if sc > 0] or sents[:1]
        desc = _clip(best[0], 300) if best else page.description
        extras = [_clip(s, 240) for s in best[1:4]] if extra else []
        if decorate:
            desc, extras = _decorate(desc, query), [_decorate(s, query) for s in extras]
        out.append(Hit(page=page, url=_variant(page.url, "brave"), title=page.title, rank=rank,
                       description=desc, extra_snippets=extras))
    return out


def _tavily(world: World, query: str, n: int) -> list[Hit]:
    scored = []
    for s, i in _ranked(world, "tavily", query):
        page = world.pages[i]
        best = max(world.passage_scores(query, i), default=0.0)
        scored.append(((0.5 + page.authority) * (s + best), i))
    scored.sort(key=lambda x: (-x[0], x[1]))
    out = []
    top = scored[0][0] if scored else 1.0
    for rank, (s, i) in enumerate(scored[:n], start=1):
        page = world.pages[i]
        lead = " ".join(x for x, _ in world.page_sentences(i)[:2])
        out.append(Hit(page=page, url=_variant(page.url, "tavily"), title=page.title, rank=rank,
                       content=_clip(lead, 400), score=round(0.95 * s / top, 8)))
    return out


def _firecrawl(world: World, query: str, n: int) -> list[Hit]:
    """Ranks by a shallow index (title and description) first, the page body only as a weak tie-breaker."""
    full = dict((i, s) for s, i in _ranked(world, "firecrawl", query))

    def fresh(i: int) -> float:  # newer pages first among equally matching heads
        return 1.0 + (int(world.pages[i].published[:4]) - 2010) / 16

    scored = sorted(((s * fresh(i) + 0.1 * full.get(i, 0.0), i) for s, i in _ranked(world, "firecrawl", query, "head")),
                    key=lambda x: (-x[0], x[1]))
    seen = {i for _, i in scored}
    scored += [(0.1 * s, i) for i, s in full.items() if i not in seen]
    return [
        Hit(page=world.pages[i], url=_variant(world.pages[i].url, "firecrawl"), title=world.pages[i].title,
            rank=rank, description=_clip(world.pages[i].description, 160))
        for rank, (_, i) in enumerate(scored[:n], start=1)
    ]


def search(world: World, persona: str, query: str, n: int, *, decorate: bool = True, extra: bool = True) -> list[Hit]:
    """The persona's top-n results for a query (deterministic)."""
    n = max(0, n)
    if persona == "brave":
        return _brave(world, query, n, decorate, extra)
    if persona == "tavily":
        return _tavily(world, query, n)
    if persona == "firecrawl":
        return _firecrawl(world, query, n)
    raise ValueError(f"unknown persona {persona!r}")
