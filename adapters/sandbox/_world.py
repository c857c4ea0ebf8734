"""The World: the corpus' pages by normalised URL, its questions, and a deterministic lexical (BM25) index."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from searchtrace.adapters._urls import domain_of, normalize_url
from searchtrace.adapters.sandbox._corpus import Corpus, Page, Question, build_corpus

_TOKEN = re.compile(r"[a-z0-9]+")
_MARKER = re.compile(r"!fault:[A-Za-z0-9_\-]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were what which who"
    " whom whose with as 2026 name".split()
)
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9|])")


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric tokens without stopwords or fault markers."""
    return [t for t in _TOKEN.findall(_MARKER.sub(" ", text).lower()) if t not in STOPWORDS]


def plain_text(markdown: str) -> str:
    """The readable prose of a markdown page: headings, tables and link lists dropped."""
    keep = []
    for line in markdown.splitlines():
        s = line.strip()
        if not s or s.startswith(("#", "|", "- [")):
            continue
        keep.append(s)
    return " ".join(keep)


def sentences(markdown: str) -> list[str]:
    """Sentences of the prose, in page order."""
    return [s.strip() for s in _SENT.split(plain_text(markdown)) if s.strip()]


class World:
    """Pages, questions and the search index of one sandbox world; immutable after construction."""

    def __init__(self, corpus: Corpus) -> None:
        self.pages: list[Page] = list(corpus.pages)
        self.questions: list[Question] = list(corpus.questions)
        self.by_url: dict[str, Page] = {normalize_url(p.url): p for p in self.pages}
        if len(self.by_url) != len(self.pages):
            raise ValueError("two pages of the corpus normalise to the same URL")
        self.hosts: frozenset[str] = frozenset(domain_of(p.url) for p in self.pages)
        self._tf: dict[str, list[Counter[str]]] = {"full": [], "head": []}
        for p in self.pages:
            full: Counter[str] = Counter(tokens(p.body))
            head: Counter[str] = Counter(tokens(p.description))
            for t in tokens(p.title):
                full[t] += 3  # titles weigh more
                head[t] += 1
            self._tf["full"].append(full)
            self._tf["head"].append(head)
        self._len = {f: [sum(tf.values()) for tf in tfs] for f, tfs in self._tf.items()}
        self._avg = {f: sum(lens) / max(len(lens), 1) for f, lens in self._len.items()}
        df: Counter[str] = Counter()
        for tf in self._tf["full"]:
            df.update(tf.keys())
        n = len(self.pages)
        self._sentences: dict[int, list[tuple[str, frozenset[str]]]] = {}
        self.idf: dict[str, float] = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def page(self, url: str) -> Page | None:
        """The page a URL (in any spelling that normalises alike) points to."""
        return self.by_url.get(normalize_url(url))

    def question(self, qid: str) -> Question | None:
        return next((q for q in self.questions if q.qid == qid), None)

    def bm25(self, query: str, field: str = "full") -> list[tuple[float, int]]:
        """(score, page index) for every page matching any query token, best first; ties by index.

        field "full" scores title and body, "head" only title and meta description (a shallow index)."""
        q = sorted(set(tokens(query)))  # a fixed summation order: float sums must not depend on hash seeds
        out = []
        lens, avg = self._len[field], self._avg[field]
        for i, tf in enumerate(self._tf[field]):
            s = 0.0
            for t in q:
                f = tf.get(t, 0)
                if f:
                    s += self.idf.get(t, 0.0) * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * lens[i] / avg))
            if s > 0:
                out.append((s, i))
        out.sort(key=lambda x: (-x[0], x[1]))
        return out

    def page_sentences(self, i: int) -> list[tuple[str, frozenset[str]]]:
        """Page i's sentences with their token sets (computed once per page)."""
        cached = self._sentences.get(i)
        if cached is None:
            cached = [(x, frozenset(tokens(x))) for x in sentences(self.pages[i].body)]
            self._sentences[i] = cached
        return cached

    def passage_scores(self, query: str, i: int) -> list[float]:
        """passage_score of each sentence of page i, in page order."""
        q = frozenset(tokens(query))
        return [sum(self.idf.get(t, 0.0) for t in sorted(q & toks)) for _, toks in self.page_sentences(i)]

    def passage_score(self, query: str, text: str) -> float:
        """How well one sentence matches a query: idf mass of the distinct query tokens it contains."""
        return sum(self.idf.get(t, 0.0) for t in sorted(set(tokens(query)) & set(tokens(text))))


@lru_cache(maxsize=4)
def default_world(seed: int | None = None) -> World:
    """The embedded world (built once per process)."""
    return World(build_corpus() if seed is None else build_corpus(seed))
