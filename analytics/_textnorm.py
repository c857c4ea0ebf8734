"""Answer normalisation of docs/concepts/metrics.md and the exact-match / token-F1 scores, as exact fractions."""

from __future__ import annotations

import string
from collections import Counter
from fractions import Fraction

_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = frozenset({"a", "an", "the"})
NUMBER_WORDS: dict[str, str] = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
NUMBER_WORDS.update(
    {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90"}
)
NUMBER_WORDS["hundred"] = "100"


def tokens(text: str | None) -> list[str]:
    """Lowercase, delete ASCII punctuation, split on whitespace, number words to digits, drop a/an/the."""
    if text is None:
        return []
    out = [NUMBER_WORDS.get(t, t) for t in text.lower().translate(_PUNCT).split()]
    return [t for t in out if t not in _ARTICLES]


def exact_match(prediction: str | None, gold: str | None) -> int:
    """1 when the normalised token lists are equal and the prediction has tokens, else 0."""
    p = tokens(prediction)
    return int(bool(p) and p == tokens(gold))


def token_f1(prediction: str | None, gold: str | None) -> Fraction:
    """Harmonic mean of token-multiset precision and recall; 0 when the overlap (or the prediction) is empty."""
    p, g = tokens(prediction), tokens(gold)
    if not p or not g:
        return Fraction(0)
    overlap = sum((Counter(p) & Counter(g)).values())
    if overlap == 0:
        return Fraction(0)
    return Fraction(2 * overlap, len(p) + len(g))


def alias_scores(prediction: str | None, aliases: list[str]) -> tuple[int, Fraction]:
    """(exact match, token F1) against the best of several accepted answers, each maximised on its own (SQuAD)."""
    if not aliases:
        return exact_match(prediction, ""), token_f1(prediction, "")
    return max(exact_match(prediction, g) for g in aliases), max(token_f1(prediction, g) for g in aliases)
