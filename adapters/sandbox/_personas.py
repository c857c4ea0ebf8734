"""The sandbox world as each search persona sees it: the `Shelf` a provider module's persona ranks with (docs/concepts/sandbox.md). Same pages for every persona, a different (deterministic) part of the web indexed by each; each provider's
own ranking and surface live in its module (adapters/providers/<name>.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from searchtrace.adapters._persona import Hit, PageView, clip
from searchtrace.adapters.sandbox._corpus import Page
from searchtrace.adapters.sandbox._world import World, tokens


def _h(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:8], 16)


def covered(persona: str, page: Page) -> bool:
    """Each provider indexes a different (deterministic) part of the web; answer pages are rarely missing."""
    return _h("cover", persona, page.url) % 100 < (97 if page.kind == "gold" else 85)


class WorldShelf:
    """The `Shelf` (adapters._persona) over one World: ranking tools for the personas."""

    def __init__(self, world: World) -> None:
        self.world = world

    @property
    def pages(self) -> Sequence[PageView]:
        return self.world.pages

    def ranked(self, persona: str, query: str, field: str = "full") -> list[tuple[float, int]]:
        return [(s, i) for s, i in self.world.bm25(query, field) if covered(persona, self.world.pages[i])]

    def bm25_hits(self, persona: str, query: str, n: int) -> list[tuple[int, int]]:
        return [(rank, i) for rank, (_, i) in enumerate(self.ranked(persona, query)[:n], start=1)]

    def authority_order(self, persona: str, query: str, n: int) -> list[tuple[int, int, float]]:
        scored = []
        for s, i in self.ranked(persona, query):
            best = max(self.world.passage_scores(query, i), default=0.0)
            scored.append(((0.5 + self.world.pages[i].authority) * (s + best), i))
        scored.sort(key=lambda x: (-x[0], x[1]))
        top = scored[0][0] if scored else 1.0
        return [(rank, i, round(0.95 * s / top, 8)) for rank, (s, i) in enumerate(scored[:n], start=1)]

    def serp(self, persona: str, query: str, n: int, limit: int) -> list[Hit]:
        pages = self.world.pages
        full = dict((i, s) for s, i in self.ranked(persona, query))
        head = {i: s for s, i in self.ranked(persona, query, "head")}

        def fresh(i: int) -> float:
            return 1.0 + (int(pages[i].published[:4]) - 2010) / 32

        scored = sorted((((head.get(i, 0.0) + 0.5 * s) * fresh(i)), i) for i, s in full.items())
        scored.sort(key=lambda x: (-x[0], x[1]))
        out = []
        for rank, (_, i) in enumerate(scored[:max(0, n)], start=1):
            best = self.best(query, i, 1)
            answer = best[0] if rank == 1 and max(self.world.passage_scores(query, i), default=0.0) >= 2.0 else ""
            out.append(Hit(page=pages[i], url=pages[i].url, title=pages[i].title, rank=rank,
                           description=clip(best[0] if best else pages[i].description, limit), answer=answer))
        return out

    def sentences(self, i: int) -> list[str]:
        return [x for x, _ in self.world.page_sentences(i)]

    def passage_scores(self, query: str, i: int) -> list[float]:
        return self.world.passage_scores(query, i)

    def best(self, query: str, i: int, k: int) -> list[str]:
        sents = self.sentences(i)
        scored = sorted(((sc, j) for j, sc in enumerate(self.world.passage_scores(query, i)) if sc > 0),
                        key=lambda x: (-x[0], x[1]))
        return [sents[j] for _, j in scored[:k]] or sents[:1]

    def plain(self, i: int) -> str:
        return " ".join(self.sentences(i))

    def answer(self, query: str, hits: list[Hit], k: int = 1) -> str | None:
        if not hits:
            return None
        i = next((j for j, p in enumerate(self.world.pages) if p.url == hits[0].page.url), None)
        return " ".join(self.best(query, i, k)) if i is not None else None

    def respelled(self, persona: str, url: str) -> bool:
        return _h(persona, url) % 4 == 0

    def terms(self, query: str) -> set[str]:
        return set(tokens(query))
