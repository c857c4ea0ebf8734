"""How the scripted agent and judge read text: the question's subject and the facts a text states.

Both only understand the corpus' fact phrasing ("The <attribute> of <entity> is <answer>." or an infobox row
"| <Attribute> | <answer> |"), which makes them honest functions of what they are shown.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_SUBJECT = re.compile(r"\bthe ([a-z][a-z\- ]*?) of ((?:Port )?[A-Z][\w'\-]*(?: [A-Z0-9][\w'\-]*)*)")
_TAG = re.compile(r"<[^>]+>")


class Subject(msgspec.Struct, frozen=True):
    attribute: str
    entity: str


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
