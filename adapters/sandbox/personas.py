"""Eleven search personas over one World: same pages, different decision surfaces (SPEC §11, §14).

The paper's three (the default demo):
- brave: BM25 ranking; snippet-rich (query-biased description with <strong> terms, plus extra snippets).
- tavily: ranks by best passage weighted by site authority (the answer page tends to be rank 1);
  its `content` is the page's lead, so the answer shows only when the lead states it.
- firecrawl: BM25 ranking; sparse snippets (the page's short meta description).
The eight of SPEC §14, each with its own character:
- exa: "neural" ranking by the best passages; highlight-only surface (two query-relevant sentences);
  page text only when `contents.text` asks for it.
- perplexity: BM25 ranking; long excerpts (the page from its start, about 4 characters per token of
  `max_tokens_per_page`, default 512).
- serpapi, serper: Google-style ranking (title and description first, fresher pages ahead); SERP-style short
  snippets (~155 characters) and an answer box quoting the best sentence of rank 1 when it matches well.
- parallel: BM25 plus passages; objective-focused excerpts (the three best passages, in markdown).
- youcom: BM25; the meta description plus two query-relevant snippets.
- linkup: authority-weighted like tavily; a page-text extract (the first ~1,200 characters) per result.
- jina_search: BM25; only the short description unless page content is asked for (then the whole page).
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from searchtrace.adapters.sandbox.corpus import Page
from searchtrace.adapters.sandbox.world import World, tokens

PERSONAS = ("brave", "tavily", "firecrawl", "exa", "perplexity", "serpapi", "serper", "parallel", "youcom", "linkup",
            "jina_search")


class Hit(msgspec.Struct, kw_only=True):
    """One result of a persona, before it is put in a provider's wire format."""

    page: Page
    url: str  # the spelling this provider returns (may differ from the canonical URL)
    title: str
    rank: int
    description: str = ""  # brave description / firecrawl description
    extra_snippets: list[str] = []  # brave only
    content: str = ""  # tavily lead; perplexity / linkup page extracts
    score: float = 0.0
    passages: list[str] = []  # exa highlights, parallel excerpts, youcom snippets
    answer: str = ""  # serpapi / serper answer box (rank 1 only)


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


def _authority_order(world: World, persona: str, query: str, n: int) -> list[tuple[int, int, float]]:
    """(rank, page index, score relative to rank 1) by best passage weighted by site authority (tavily, linkup)."""
    scored = []
    for s, i in _ranked(world, persona, query):
        best = max(world.passage_scores(query, i), default=0.0)
        scored.append(((0.5 + world.pages[i].authority) * (s + best), i))
    scored.sort(key=lambda x: (-x[0], x[1]))
    top = scored[0][0] if scored else 1.0
    return [(rank, i, round(0.95 * s / top, 8)) for rank, (s, i) in enumerate(scored[:n], start=1)]


def _tavily(world: World, query: str, n: int) -> list[Hit]:
    out = []
    for rank, i, score in _authority_order(world, "tavily", query, n):
        page = world.pages[i]
        lead = " ".join(x for x, _ in world.page_sentences(i)[:2])
        out.append(Hit(page=page, url=_variant(page.url, "tavily"), title=page.title, rank=rank,
                       content=_clip(lead, 400), score=score))
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


def _best(world: World, query: str, i: int, k: int) -> list[str]:
    """The page's k best passages for the query, in score order (ties: page order); the lead when none match."""
    sents = [x for x, _ in world.page_sentences(i)]
    scored = sorted(((sc, j) for j, sc in enumerate(world.passage_scores(query, i)) if sc > 0), key=lambda x: (-x[0], x[1]))
    return [sents[j] for _, j in scored[:k]] or sents[:1]


def answer(world: World, query: str, hits: list[Hit], k: int = 1) -> str | None:
    """A generated answer (Tavily's include_answer): the k best sentences of the top result's page; None without one."""
    if not hits:
        return None
    i = next((j for j, p in enumerate(world.pages) if p.url == hits[0].page.url), None)
    return " ".join(_best(world, query, i, k)) if i is not None else None


def _plain(world: World, i: int) -> str:
    return " ".join(x for x, _ in world.page_sentences(i))


def _exa(world: World, query: str, n: int) -> list[Hit]:
    scored = []
    for _, i in _ranked(world, "exa", query):
        top = sorted(world.passage_scores(query, i), reverse=True)[:2]
        scored.append((sum(top), i))
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                passages=[_clip(x, 300) for x in _best(world, query, i, 2)], score=round(s, 6))
            for rank, (s, i) in enumerate(scored[:n], start=1)]


def _bm25_hits(world: World, persona: str, query: str, n: int) -> list[tuple[int, int]]:
    return [(rank, i) for rank, (_, i) in enumerate(_ranked(world, persona, query)[:n], start=1)]


def _perplexity(world: World, query: str, n: int, chars: int) -> list[Hit]:
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                content=_clip(f"## {world.pages[i].title}\n\n{_plain(world, i)}", chars))
            for rank, i in _bm25_hits(world, "perplexity", query, n)]


def _google(world: World, persona: str, query: str, n: int, limit: int) -> list[Hit]:
    """Title and description first, fresher pages ahead; short snippets, an answer box on a strong rank 1."""
    full = dict((i, s) for s, i in _ranked(world, persona, query))
    head = {i: s for s, i in _ranked(world, persona, query, "head")}

    def fresh(i: int) -> float:
        return 1.0 + (int(world.pages[i].published[:4]) - 2010) / 32

    scored = sorted((((head.get(i, 0.0) + 0.5 * s) * fresh(i)), i) for i, s in full.items())
    scored.sort(key=lambda x: (-x[0], x[1]))
    out = []
    for rank, (_, i) in enumerate(scored[:n], start=1):
        best = _best(world, query, i, 1)
        answer = best[0] if rank == 1 and max(world.passage_scores(query, i), default=0.0) >= 2.0 else ""
        out.append(Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                       description=_clip(best[0] if best else world.pages[i].description, limit), answer=answer))
    return out


def _parallel(world: World, query: str, n: int) -> list[Hit]:
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                passages=[_clip(x, 500) for x in _best(world, query, i, 3)])
            for rank, i in _bm25_hits(world, "parallel", query, n)]


def _youcom(world: World, query: str, n: int) -> list[Hit]:
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                description=world.pages[i].description, passages=[_clip(x, 300) for x in _best(world, query, i, 2)])
            for rank, i in _bm25_hits(world, "youcom", query, n)]


def _linkup(world: World, query: str, n: int) -> list[Hit]:
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                content=_clip(_plain(world, i), 1200))
            for rank, i, _ in _authority_order(world, "linkup", query, n)]


def _jina_search(world: World, query: str, n: int) -> list[Hit]:
    return [Hit(page=world.pages[i], url=world.pages[i].url, title=world.pages[i].title, rank=rank,
                description=_clip(world.pages[i].description, 200), content=world.pages[i].body)
            for rank, i in _bm25_hits(world, "jina_search", query, n)]


def search(world: World, persona: str, query: str, n: int, *, decorate: bool = True, extra: bool = True,
           chars: int = 2048) -> list[Hit]:
    """The persona's top-n results for a query (deterministic); `chars`: perplexity's excerpt budget."""
    n = max(0, n)
    if persona == "brave":
        return _brave(world, query, n, decorate, extra)
    if persona == "tavily":
        return _tavily(world, query, n)
    if persona == "firecrawl":
        return _firecrawl(world, query, n)
    if persona == "exa":
        return _exa(world, query, n)
    if persona == "perplexity":
        return _perplexity(world, query, n, chars)
    if persona in ("serpapi", "serper"):
        return _google(world, persona, query, n, 155 if persona == "serpapi" else 160)
    if persona == "parallel":
        return _parallel(world, query, n)
    if persona == "youcom":
        return _youcom(world, query, n)
    if persona == "linkup":
        return _linkup(world, query, n)
    if persona == "jina_search":
        return _jina_search(world, query, n)
    raise ValueError(f"unknown persona {persona!r}")
