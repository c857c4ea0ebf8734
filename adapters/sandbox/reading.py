"""How the scripted agent and judge read text: the question's subject, document blocks, and stated facts.

Both only understand the corpus' fact phrasing ("The <attribute> of <entity> is <answer>." or an infobox row
"| <Attribute> | <answer> |"), which makes them honest functions of what they are shown.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_SUBJECT = re.compile(r"\bthe ([a-z][a-z\- ]*?) of ((?:Port )?[A-Z][\w'\-]*(?: [A-Z0-9][\w'\-]*)*)")
_DOC = re.compile(r"<document ([^>]*)>(.*?)</document>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")


class Subject(msgspec.Struct, frozen=True):
    attribute: str
    entity: str


class Doc(msgspec.Struct, kw_only=True):
    """One parsed <document> block."""

    doc_id: str
    rank: int
    domain: str
    title: str
    url: str
    snippet: str
    page: str | None = None


def message_text(content: Any) -> str:
    """A chat message's text: the content string, or its content parts' text joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def subject_of(question: str) -> Subject | None:
    """The (attribute, entity) a question asks about, if it is phrased the corpus' way."""
    m = _SUBJECT.search(question)
    return Subject(m.group(1).strip(), m.group(2).strip()) if m else None


def strip_tags(text: str) -> str:
    return _TAG.sub("", text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _element(body: str, tag: str) -> str | None:
    """The text of one element; <page> counts only as the element after </metadata>, not inside a snippet."""
    start = body.find(f"<{tag}>", body.find("</metadata>") + 1 if tag == "page" else 0)
    if start < 0:
        return None
    end = body.rfind(f"</{tag}>") if tag == "page" else body.find(f"</{tag}>", start)
    return body[start + len(tag) + 2 : end if end >= 0 else len(body)]


def documents(text: str) -> list[Doc]:
    """Every <document> block in a text (as engine/documents.py renders them)."""
    out = []
    for m in _DOC.finditer(text):
        attrs: dict[str, Any] = dict(_ATTR.findall(m.group(1)))
        body = m.group(2)
        try:
            rank = int(attrs.get("rank", "0"))
        except ValueError:
            rank = 0
        out.append(Doc(doc_id=attrs.get("doc_id", ""), rank=rank, domain=attrs.get("domain", ""),
                       title=_element(body, "title") or "", url=_element(body, "url") or "",
                       snippet=_element(body, "snippet") or "", page=_element(body, "page")))
    return out


def stated_answers(text: str, subject: Subject) -> list[str]:
    """Answers the text states for this subject, in order of appearance (fact sentences and infobox rows)."""
    plain = strip_tags(text)
    found: list[tuple[int, str]] = []
    fact = re.compile(rf"The {re.escape(subject.attribute)} of {re.escape(subject.entity)} is (.+?)\.(?=\s|$)", re.I)
    found += [(m.start(), m.group(1).strip()) for m in fact.finditer(plain)]
    if subject.entity.lower() in plain.lower():  # an infobox row only counts on a page about the entity
        row = re.compile(rf"^\|\s*{re.escape(subject.attribute)}\s*\|\s*([^|]+?)\s*\|\s*$", re.I | re.M)
        found += [(m.start(), m.group(1).strip()) for m in row.finditer(plain)]
    return [a for _, a in sorted(found)]


def same_answer(a: str, b: str) -> bool:
    """Answers compare case- and space-insensitively."""
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def mentions(text: str, subject: Subject) -> bool:
    return subject.entity.lower() in strip_tags(text).lower()
