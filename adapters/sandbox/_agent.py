"""Model `sandbox-agent`: a scripted, deterministic search policy that reads only the messages it is sent.

Turn 1 searches the question (for some questions two searches in one turn). After each tool result it collects
the answers stated for the question's subject: a fetched page that states one wins; snippets that all agree are
answered directly; snippets that disagree are resolved by fetching the page behind the top-ranked claim. With
no stated answer it fetches the most promising unfetched results (one or two per turn, at most two per search),
then searches again with a new query, forever, so a question whose answer is nowhere ends at the harness'
iteration limit.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec

from searchtrace.adapters._toolset import DEFAULT, FETCH, SEARCH, Doc, Tools, read_page, read_results
from searchtrace.adapters.sandbox._reading import (
    Subject,
    mentions,
    message_text,
    same_answer,
    stated_answers,
    subject_of,
)

__all__ = ["CITE_PHRASE", "FETCH", "SEARCH", "Turn", "decide"]
FETCHES_PER_SEARCH = 2
# docs/how-to/hosted.md: a system prompt with this phrase asks for the answer's evidence by doc_id: `... 1937 [d3]`
CITE_PHRASE = "cite the doc_ids"


class Turn(msgspec.Struct, kw_only=True):
    """What the agent says: text, or tool calls as (name, arguments) pairs."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = []


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class _State:
    """What the conversation so far tells the agent."""

    def __init__(self, messages: list[dict[str, Any]], tools: Tools = DEFAULT) -> None:
        self.tools = tools
        self.cites = any(CITE_PHRASE in message_text(m.get("content")).lower() for m in messages
                         if m.get("role") == "system")
        users = [message_text(m.get("content")) for m in messages if m.get("role") == "user"]
        self.question = users[0].strip() if users else ""
        self.subject: Subject | None = subject_of(self.question)
        self.turns = sum(1 for m in messages if m.get("role") == "assistant")
        self.queries: list[str] = []
        self.docs: dict[str, Doc] = {}
        self.fetched: list[str] = []
        self.fetched_since_search = 0
        self.pages: list[tuple[str, str]] = []  # (doc_id, page text) in fetch order
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                args = args if isinstance(args, dict) else {}
                calls[tc.get("id", "")] = (fn.get("name", ""), args)
                if fn.get("name") == tools.search:
                    self.queries.append(str(args.get(tools.search_arg, "")))
                    self.fetched_since_search = 0
                elif fn.get("name") == tools.fetch:
                    self.fetched.append(str(args.get(tools.fetch_arg, "")))
                    self.fetched_since_search += 1
            if m.get("role") == "tool":
                name, args = calls.get(m.get("tool_call_id", ""), ("", {}))
                text = message_text(m.get("content"))
                if name == tools.fetch:  # a <page> element, a reader's JSON, or the text
                    page = read_page(text)
                    if page is not None:
                        self.pages.append((str(args.get(tools.fetch_arg, "")), page))
                else:  # <document> blocks, any provider's JSON, or (another harness' tools) plain text
                    for d in read_results(text, plain_text=tools != DEFAULT):
                        self.docs.setdefault(d.doc_id, d)

    def is_fetched(self, d: Doc) -> bool:
        return d.doc_id in self.fetched or (bool(d.url) and d.url in self.fetched)

    def fetch_call(self, d: Doc) -> tuple[str, dict[str, Any]]:
        t = self.tools
        assert t.fetch is not None
        return t.fetch, {t.fetch_arg: d.url if t.fetch_by_url else d.doc_id}

    def search_call(self, query: str) -> tuple[str, dict[str, Any]]:
        return self.tools.search, {self.tools.search_arg: query}

    def answer(self, answer: str, evidence: list[str]) -> Turn:
        """The final turn; when the system prompt asks for it, citing the doc_ids of `evidence` (doc_ids, or the URLs
        pages were fetched by)."""
        if not self.cites:
            return Turn(text=f"FINAL ANSWER: {answer}")
        by_url = {d.url: d.doc_id for d in self.docs.values() if d.url}
        ids = list(dict.fromkeys(by_url.get(e, e) for e in evidence if by_url.get(e, e) in self.docs))
        return Turn(text=f"FINAL ANSWER: {answer}" + "".join(f" [{i}]" for i in ids))


def _queries(s: _State) -> list[str]:
    if s.subject is None:
        return [s.question]
    a, e = s.subject.attribute, s.subject.entity
    return [s.question, f"{e} {a}", f"{a} of {e}", f'"{e}" {a} official record', f"{e} history {a}"]


def _next_query(s: _State) -> str:
    done = set(s.queries)
    for q in _queries(s):
        if q not in done:
            return q
    base = _queries(s)[1] if s.subject else s.question
    return f"{base} page {len(s.queries) + 1}"


def _promising(s: _State) -> list[Doc]:
    """Unfetched results about the subject: those whose surface names the attribute first, then by rank."""
    order = {d: i for i, d in enumerate(s.docs)}
    docs = [d for d in s.docs.values() if not s.is_fetched(d)]
    if s.subject is None:
        return sorted(docs, key=lambda d: (d.rank, order[d.doc_id]))
    subject = s.subject
    about = [d for d in docs if mentions(d.title + " " + d.snippet, subject)]
    attr = subject.attribute.lower()
    return sorted(about, key=lambda d: (attr not in (d.title + d.snippet).lower(), d.rank, order[d.doc_id]))


def _best_effort(s: _State) -> Turn:
    """Without tools: the answer the evidence so far states, or an honest admission."""
    if s.subject is not None:
        for key, text in [*s.pages, *((d.doc_id, d.title + "\n" + d.snippet) for d in s.docs.values())]:
            answers = stated_answers(text, s.subject)
            if answers:
                return s.answer(answers[0], [key])
    return Turn(text="I cannot answer this without searching, and no tool is available.")


def decide(messages: list[dict[str, Any]], can_call_tools: bool = True, tools: Tools = DEFAULT) -> Turn:
    """The agent's next turn, a pure function of the conversation, of whether it may call tools and of which."""
    s = _State(messages, tools)
    if not can_call_tools:
        return _best_effort(s)
    if not s.queries:
        calls = [s.search_call(s.question)]
        if s.subject is not None and _h(s.question) % 3 == 0:  # sometimes two searches in parallel
            calls.append(s.search_call(f"{s.subject.entity} {s.subject.attribute}"))
        return Turn(calls=calls)
    if s.subject is not None:
        for key, page in s.pages:  # a page that states the answer settles it
            answers = stated_answers(page, s.subject)
            if answers:
                return s.answer(answers[0], [key])
        stated = [(d, a) for d in sorted(s.docs.values(), key=lambda d: (d.rank, d.doc_id))
                  for a in stated_answers(d.title + "\n" + d.snippet, s.subject)[:1]]
        if stated:
            first = stated[0][1]
            if all(same_answer(a, first) for _, a in stated):
                return s.answer(first, [d.doc_id for d, _ in stated])
            to_check = [d for d, _ in stated if not s.is_fetched(d)][:1]  # verify the top claim
            if to_check and tools.fetch is not None:
                return Turn(calls=[s.fetch_call(d) for d in to_check])
            return s.answer(first, [stated[0][0].doc_id])
    promising = _promising(s)
    budget = FETCHES_PER_SEARCH - s.fetched_since_search  # then a new query beats reading further down the list
    if promising and budget > 0 and tools.fetch is not None:
        k = min(budget, 2 if (_h(s.question) + s.turns) % 2 == 0 else 1)
        return Turn(calls=[s.fetch_call(d) for d in promising[:k]])
    return Turn(calls=[s.search_call(_next_query(s))])
