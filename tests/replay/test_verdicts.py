"""Strict verdict parsing: exactly schema 1, one code fence at most, page against page visibility."""

from __future__ import annotations

import msgspec
import pytest

from searchtrace.replay import parse_verdict, strip_fence

LABELS = {"supports_gold": True, "contradicts_gold": False, "relevant": True}


def reply(page: object = None, **over: object) -> str:
    body: dict[str, object] = {"snippet": LABELS, "page": page, "supports_final_answer": False, "rationale": "r"}
    body.update(over)
    return msgspec.json.encode(body).decode()


def test_snippet_only_valid() -> None:
    p = parse_verdict(reply(), page_visible=False)
    assert p.valid and p.reason is None and p.labels is not None
    assert p.labels.snippet.supports_gold is True and p.labels.page is None


def test_page_visible_gets_both_labels() -> None:
    p = parse_verdict(reply(page={**LABELS, "relevant": False}), page_visible=True)
    assert p.valid and p.labels is not None and p.labels.page is not None
    assert p.labels.page.relevant is False and p.labels.snippet.relevant is True


@pytest.mark.parametrize("fence", ["```json\n{}\n```", "```\n{}\n```", "  ```JSON\n{}```  "])
def test_one_code_fence_is_stripped(fence: str) -> None:
    p = parse_verdict(fence.replace("{}", reply()), page_visible=False)
    assert p.valid, p.reason


def test_two_fences_are_not_stripped() -> None:
    p = parse_verdict("```\n```json\n" + reply() + "\n```\n```", page_visible=False)
    assert not p.valid and p.reason is not None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("The snippet supports the gold answer.", "not a JSON object"),
        (reply()[:-12], "not valid JSON"),
        ("", "empty reply"),
        (None, "empty reply"),
        ("[1, 2]", "not a JSON object"),
        (reply(snippet={"supports_gold": "yes", "contradicts_gold": False, "relevant": True}), "wrong shape"),
        (reply(snippet={"supports_gold": 1, "contradicts_gold": False, "relevant": True}), "wrong shape"),
        (reply(extra=True), "wrong shape"),
        ('{"snippet": {"supports_gold": true, "contradicts_gold": false, "relevant": true}, "page": null}', "wrong shape"),
        (reply(rationale=None), "wrong shape"),
        (reply() + " trailing", "not valid JSON"),
    ],
)
def test_invalid_replies_name_their_reason(text: str | None, needle: str) -> None:
    p = parse_verdict(text, page_visible=False)
    assert not p.valid and p.labels is None
    assert p.reason is not None and needle in p.reason and "\n" not in p.reason


def test_page_against_visibility_is_invalid() -> None:
    a = parse_verdict(reply(), page_visible=True)
    b = parse_verdict(reply(page=LABELS), page_visible=False)
    assert not a.valid and a.reason == "page is null but the item is page-visible"
    assert not b.valid and b.reason == "page is not null but the item was not page-visible"


def test_truncated_reply_mentions_length() -> None:
    p = parse_verdict(reply()[:30], page_visible=False, finish_reason="length")
    assert not p.valid and p.reason is not None and "finish_reason=length" in p.reason


def test_strip_fence_leaves_plain_text() -> None:
    assert strip_fence("  {\"a\": 1}\n") == '{"a": 1}'
    assert strip_fence("```\nx\n```") == "x"
