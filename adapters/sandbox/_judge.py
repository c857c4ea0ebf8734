"""Model `sandbox-judge`: the docs/concepts/judge.md judge as a deterministic reader of the one document it is shown.

It reads <question>, <gold_answer>, <final_answer> and the <document> block of the judge prompt
(replay/_judge_prompt.py; plain "Gold answer:" / "Final answer:" lines work too). On each surface:
supports_gold when the surface states the gold answer for the question's subject in the corpus' fact phrasing,
contradicts_gold when it states a different answer, relevant when it names the subject. `page` is non-null
exactly when a <page> element is present. `sandbox-judge-sloppy` returns a bad reply for a deterministic ~2%
of documents; fault kinds prose / badjson / wrongshape / pagemismatch force one. Without JSON mode in
`response_format` the JSON comes in one ```json code fence, as chat models often write it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

from searchtrace.adapters._toolset import Doc, documents
from searchtrace.adapters.sandbox._reading import (
    Subject,
    mentions,
    same_answer,
    stated_answers,
    subject_of,
)
from searchtrace.store import gold_text_aliases

_enc = msgspec.json.Encoder()
BAD_KINDS = ("prose", "badjson", "wrongshape", "pagemismatch")


def _field(text: str, tag: str, labels: tuple[str, ...]) -> str | None:
    m = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.S)
    if m:
        return m.group(1).strip()
    for label in labels:
        m = re.search(rf"^\s*{label}\s*:\s*(.+?)\s*$", text, re.I | re.M)
        if m:
            return m.group(1).strip()
    return None


def _labels(text: str | None, subject: Subject | None, golds: list[str]) -> dict[str, bool]:
    """Labels of one surface; `golds`: every accepted answer (an answer none of them is contradicts)."""
    if text is None or subject is None:
        return {"supports_gold": False, "contradicts_gold": False, "relevant": False}
    answers = stated_answers(text, subject)
    return {
        "supports_gold": any(same_answer(a, g) for a in answers for g in golds),
        "contradicts_gold": any(not any(same_answer(a, g) for g in golds) for a in answers),
        "relevant": mentions(text, subject),
    }


def verdict(prompt: str) -> dict[str, Any]:
    """The honest verdict for one judge prompt (the user message text)."""
    docs = documents(prompt)
    doc: Doc | None = docs[-1] if docs else None
    before = prompt[: prompt.rfind("<document")] if doc else prompt
    question = _field(before, "question", ("question",)) or before
    gold = gold_text_aliases(_field(before, "gold_answer", ("gold answer", "gold_answer", "reference answer")) or "")
    final = _field(before, "final_answer", ("final answer", "final_answer", "model answer")) or ""
    subject = subject_of(question)
    surface = f"{doc.title}\n{doc.url}\n{doc.snippet}" if doc else None
    snippet = _labels(surface, subject, gold)
    page = _labels(doc.page, subject, gold) if doc is not None and doc.page is not None else None
    seen = "\n".join(t for t in (surface, doc.page if doc else None) if t)
    supports_final = bool(subject and final and any(same_answer(a, final) for a in stated_answers(seen, subject)))
    if doc is None:
        why = "no document was shown"
    elif snippet["supports_gold"] or (page and page["supports_gold"]):
        why = "the document states the gold answer for the question's subject"
    elif snippet["contradicts_gold"] or (page and page["contradicts_gold"]):
        why = "the document states a different answer"
    elif snippet["relevant"] or (page and page["relevant"]):
        why = "the document is about the subject but does not state the answer"
    else:
        why = "the document is not about the question's subject"
    return {"snippet": snippet, "page": page, "supports_final_answer": supports_final, "rationale": why}


def sloppy_kind(prompt: str) -> str | None:
    """The bad reply kind `sandbox-judge-sloppy` gives for this prompt (~2% of documents), or None."""
    docs = documents(prompt)
    key = (docs[-1].url + "|" + (docs[-1].page or "")[:64]) if docs else prompt
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return BAD_KINDS[(h // 50) % len(BAD_KINDS)] if h % 50 == 0 else None


def reply(prompt: str, bad: str | None = None, fenced: bool = False) -> str:
    """The judge's reply text: JSON (optionally in a code fence), or a bad reply of kind `bad`."""
    v = verdict(prompt)
    if bad == "prose":
        return f"Looking at this document, I think {v['rationale']}. The snippet seems relevant to the question."
    if bad == "badjson":
        return _enc.encode(v).decode()[:-7]  # truncated JSON
    if bad == "wrongshape":
        return _enc.encode({"supports_gold": v["snippet"]["supports_gold"], "labels": [v["snippet"]]}).decode()
    if bad == "pagemismatch":
        v["page"] = None if v["page"] is not None else dict(v["snippet"])
    text = _enc.encode(v).decode()
    return f"```json\n{text}\n```" if fenced else text
