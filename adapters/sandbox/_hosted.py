"""Hosted search in the sandbox (docs/how-to/hosted.md): the sandbox model runs its own search over the sandbox world
and answers in each hosted layer's wire format, keyless.

One search (the question as the query, the world's BM25, top five) and one answer (the first result whose snippet,
else whose page, states the answer to the question's subject), then per layer what its caller receives:

- `openai_web_search`: a `web_search_call` item (action search, its sources when the request includes
  `web_search_call.action.sources`) and a message whose `url_citation` annotation spans the cited sentence;
- `anthropic_web_search`: `server_tool_use`, `web_search_tool_result` (url, title, page_age and an
  `encrypted_content` stand-in only `unseal` reads), a text block citing `web_search_result_location`;
- `anthropic_web_fetch`: the same search, then `server_tool_use` web_fetch and `web_fetch_tool_result` with the page
  text of the top result;
- `gemini_grounding`: `groundingMetadata` with the query, chunks whose URIs go through the sandbox's redirect route
  (the domain as title) and a support over the answer sentence;
- `perplexity_agent`: `search_results` (id, title, url, snippet, date), `fetch_url_results` of the top result and a
  message whose `url_citation` annotation spans the cited sentence (the shape chosen where Perplexity's docs are thin).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any

import msgspec

from searchtrace.adapters._persona import digest
from searchtrace.adapters._urls import domain_of
from searchtrace.adapters.sandbox._reading import message_text, stated_answers, subject_of
from searchtrace.adapters.sandbox._world import World, plain_text

TOP_K = 5
CITED_MAX = 150  # Anthropic's cited_text is at most 150 characters
REDIRECT_PATH = "grounding-api-redirect"
_SEAL_PREFIX = "stx1."
_KEY = hashlib.sha256(b"searchtrace sandbox hosted search").digest()


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One result of the sandbox model's own search."""

    url: str
    title: str
    snippet: str  # the page's sentence that best matches the query
    page: str  # the page's prose, what a hosted fetch reads
    published: str


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """The sandbox model's grounded answer: its text and the span of it that cites one hit (`cited` its index)."""

    text: str
    cited: int | None = None
    start: int = 0
    end: int = 0
    cited_text: str = ""


def _stream(n: int) -> bytes:
    out, block = b"", 0
    while len(out) < n:
        out += hashlib.sha256(_KEY + block.to_bytes(4, "big")).digest()
        block += 1
    return out[:n]


def seal(text: str) -> str:
    """The encrypted-content stand-in: the text compressed and masked; a caller sees base64, only `unseal` reads it."""
    raw = zlib.compress(text.encode())
    return _SEAL_PREFIX + base64.b64encode(bytes(a ^ b for a, b in zip(raw, _stream(len(raw)), strict=True))).decode()


def unseal(token: str) -> str | None:
    """The text a `seal` token hides (what the sandbox model reads when a caller sends it back), None if not one."""
    if not token.startswith(_SEAL_PREFIX):
        return None
    try:
        raw = base64.b64decode(token[len(_SEAL_PREFIX):], validate=True)
        return zlib.decompress(bytes(a ^ b for a, b in zip(raw, _stream(len(raw)), strict=True))).decode()
    except (ValueError, zlib.error):
        return None


def search(world: World, query: str, k: int = TOP_K) -> list[Hit]:
    """The sandbox model's hosted search: the world's BM25 over title and body, each hit's best sentence as snippet."""
    hits = []
    for _, i in world.bm25(query)[:k]:
        page = world.pages[i]
        sentences = world.page_sentences(i)
        scores = world.passage_scores(query, i)
        best = sentences[max(range(len(scores)), key=lambda j: (scores[j], -j))][0] if sentences else page.description
        hits.append(Hit(url=page.url, title=page.title, snippet=best, page=plain_text(page.body),
                        published=page.published))
    return hits


def answer(question: str, hits: list[Hit]) -> Answer:
    """The first hit whose snippet states the answer, else the first whose page does (the model read more than the
    caller got), cited; without one, an honest answer citing nothing."""
    subject = subject_of(question)
    if subject is not None:
        for field in ("snippet", "page"):
            for i, h in enumerate(hits):
                found = stated_answers(getattr(h, field), subject)
                if found:
                    claim = f"According to {h.title}, the {subject.attribute} of {subject.entity} is {found[0]}."
                    text = f"{claim}\nFINAL ANSWER: {found[0]}"
                    cited = h.snippet if field == "snippet" else claim
                    return Answer(text=text, cited=i, start=0, end=len(claim), cited_text=cited[:CITED_MAX])
    return Answer(text="The search did not state an answer.\nFINAL ANSWER: unknown")


def question_of(messages: list[dict[str, Any]]) -> str:
    """What the sandbox model searches for: the first user message (the question), as its agent reads it."""
    users = [message_text(m.get("content")) for m in messages if m.get("role") == "user"]
    return users[0].strip() if users else ""


def redirect_token(url: str) -> str:
    return base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def redirect_target(token: str) -> str | None:
    """The URL a grounding redirect token stands for, None when the token is not one."""
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


# -- each layer's wire ------------------------------------------------------------------------------------------
def openai_output(key: str, query: str, hits: list[Hit], said: Answer, *, sources: bool) -> list[dict[str, Any]]:
    """Responses output items: the web_search_call, then the message with its url_citation."""
    action: dict[str, Any] = {"type": "search", "query": query, "queries": [query]}
    if sources:
        action["sources"] = [{"type": "url", "url": h.url} for h in hits]
    annotations = []
    if said.cited is not None:
        h = hits[said.cited]
        annotations.append({"type": "url_citation", "url": h.url, "title": h.title, "start_index": said.start,
                            "end_index": said.end})
    return [{"id": f"ws_{digest(key, 'ws', n=48)}", "type": "web_search_call", "status": "completed", "action": action},
            {"id": f"msg_{digest(key, 'msg', n=48)}", "type": "message", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": said.text, "annotations": annotations, "logprobs": []}]}]


def anthropic_content(key: str, query: str, hits: list[Hit], said: Answer, *, fetch: bool) -> list[dict[str, Any]]:
    """Messages content blocks: server_tool_use web_search, its result, (web_fetch of the top hit), cited text."""
    search_id = f"srvtoolu_{digest(key, 'search')}"
    blocks: list[dict[str, Any]] = [
        {"type": "server_tool_use", "id": search_id, "name": "web_search", "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": search_id,
         "content": [{"type": "web_search_result", "url": h.url, "title": h.title, "page_age": h.published,
                      "encrypted_content": seal(h.snippet + "\n" + h.page)} for h in hits]},
    ]
    if fetch and hits:
        fetch_id = f"srvtoolu_{digest(key, 'fetch')}"
        top = hits[0]
        blocks += [
            {"type": "server_tool_use", "id": fetch_id, "name": "web_fetch", "input": {"url": top.url}},
            {"type": "web_fetch_tool_result", "tool_use_id": fetch_id,
             "content": {"type": "web_fetch_result", "url": top.url, "retrieved_at": "2026-01-01T00:00:00Z",
                         "content": {"type": "document", "title": top.title, "citations": None,
                                     "source": {"type": "text", "media_type": "text/plain", "data": top.page}}}},
        ]
    citations = None
    if said.cited is not None:
        h = hits[said.cited]
        citations = [{"type": "web_search_result_location", "url": h.url, "title": h.title,
                      "cited_text": said.cited_text, "encrypted_index": seal(str(said.cited))}]
    blocks.append({"type": "text", "text": said.text[: said.end] if citations else said.text, "citations": citations})
    if citations and said.end < len(said.text):
        blocks.append({"type": "text", "text": said.text[said.end:], "citations": None})
    return blocks


def gemini_grounding(query: str, hits: list[Hit], said: Answer, redirect_base: str) -> dict[str, Any]:
    """groundingMetadata: the query, a chunk per hit (redirect URI, domain title), a support over the cited span."""
    supports = []
    if said.cited is not None:
        supports.append({"segment": {"startIndex": said.start, "endIndex": said.end, "text": said.text[: said.end]},
                         "groundingChunkIndices": [said.cited], "confidenceScores": [0.9]})
    base = redirect_base.rstrip("/")
    return {"webSearchQueries": [query],
            "groundingChunks": [{"web": {"uri": f"{base}/{REDIRECT_PATH}/{redirect_token(h.url)}",
                                         "title": domain_of(h.url)}} for h in hits],
            "groundingSupports": supports,
            "searchEntryPoint": {"renderedContent": "<div>sandbox search</div>"}}


def perplexity_output(key: str, query: str, hits: list[Hit], said: Answer, *, fetch: bool) -> list[dict[str, Any]]:
    """Agent API output items: search_results (and fetch_url_results of the top hit), then the message."""
    out: list[dict[str, Any]] = [{"type": "search_results", "queries": [query], "results": [
        {"id": i + 1, "title": h.title, "url": h.url, "snippet": h.snippet, "date": h.published, "source": "web"}
        for i, h in enumerate(hits)]}]
    if fetch and hits:
        out.append({"type": "fetch_url_results",
                    "contents": [{"url": hits[0].url, "title": hits[0].title, "snippet": hits[0].page}]})
    annotations = []
    if said.cited is not None and hits:
        h = hits[said.cited]
        annotations.append({"type": "url_citation", "url": h.url, "title": h.title, "start_index": said.start,
                            "end_index": said.end})
    out.append({"id": f"msg_{digest(key, 'msg')}", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": said.text, "annotations": annotations}]})
    return out
