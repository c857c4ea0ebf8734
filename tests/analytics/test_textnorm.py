"""docs/concepts/metrics.md answer normalisation, exact match and token F1."""

from __future__ import annotations

from fractions import Fraction

from searchtrace.analytics import exact_match, token_f1, tokens


def test_tokens_order_of_steps() -> None:
    assert tokens("The U.S.A.!") == ["usa"]
    assert tokens("Twenty-one") == ["twentyone"]  # punctuation deleted first, so not a number word
    assert tokens("twenty one hundred") == ["20", "1", "100"]
    assert tokens("An apple, a pear; THE end") == ["apple", "pear", "end"]
    assert tokens("  a\tthe  ") == [] and tokens(None) == []
    assert tokens("Eleven ninety Zero") == ["11", "90", "0"]
    assert tokens("thousand") == ["thousand"]  # not a simple number word


def test_exact_match() -> None:
    assert exact_match("Three cats!", "3 cats") == 1
    assert exact_match("the cats three", "3 cats") == 0  # order matters
    assert exact_match(None, "3 cats") == 0
    assert exact_match("the", "") == 0  # no tokens scores 0 even against an empty gold


def test_token_f1() -> None:
    assert token_f1("The city is Paris", "Paris") == Fraction(1, 2)
    assert token_f1("paris paris", "paris") == Fraction(2, 3)  # multiset overlap 1: P=1/2, R=1
    assert token_f1("London", "Paris") == 0
    assert token_f1(None, "Paris") == 0 and token_f1("a an", "a") == 0
    assert token_f1("two cats", "2 Cats.") == 1
