"""Which of a client's declared tools searches and which fetches, and how their replies read, whatever the shape.

For any tool loop (an Inspect log being imported, the sandbox's scripted agent): the searching tool is the one with
a single string parameter (a name with `search` wins a tie), the fetching one takes a URL or an id. Replies are read
as the project's <document> blocks (engine/_documents.py renders them), any search provider's JSON (a list of
objects with a URL and text fields, wherever it sits), a reader's JSON, or text.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

SEARCH, FETCH = "search_web", "fetch_page"
_URL_PARAMS = ("url", "link", "uri", "href", "page_url", "urls")
_ID_PARAMS = ("doc_id", "id", "document_id", "result_id", "docid")
_URL_KEYS = ("url", "link", "href", "uri")
_TEXT_KEYS = ("snippet", "description", "content", "text", "summary", "snippets", "extra_snippets", "highlights",
              "excerpts", "excerpt")
_URL_RE = re.compile(r"https?://[^\s<>\"')\]]+")
_DOC = re.compile(r"<document ([^>]*)>(.*?)</document>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')


class Doc(msgspec.Struct, kw_only=True):
    """One parsed <document> block."""

    doc_id: str
    rank: int
    domain: str
    title: str
    url: str
    snippet: str
    page: str | None = None


class Tools(msgspec.Struct, frozen=True, kw_only=True):
    """The searching and fetching tools of a request (names and the parameter each takes)."""

    search: str = SEARCH
    search_arg: str = "query"
    fetch: str | None = FETCH
    fetch_arg: str = "doc_id"
    fetch_by_url: bool = False


DEFAULT = Tools()


def _element(body: str, tag: str) -> str | None:
    """The text of one element; <page> counts only as the element after </metadata>, not inside a snippet."""
    start = body.find(f"<{tag}>", body.find("</metadata>") + 1 if tag == "page" else 0)
    if start < 0:
        return None
    end = body.rfind(f"</{tag}>") if tag == "page" else body.find(f"</{tag}>", start)
    return body[start + len(tag) + 2 : end if end >= 0 else len(body)]


def documents(text: str) -> list[Doc]:
    """Every <document> block in a text (as engine/_documents.py renders them)."""
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


def _params(tool: dict[str, Any]) -> tuple[str, str, dict[str, Any], list[str]]:
    fn: dict[str, Any] = tool["function"] if isinstance(tool.get("function"), dict) else tool
    name = str(fn.get("name", ""))
    desc = str(fn.get("description", ""))
    schema = fn.get("parameters") or fn.get("input_schema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    req = schema.get("required") if isinstance(schema, dict) else None
    return name, desc, props if isinstance(props, dict) else {}, [str(r) for r in req] if isinstance(req, list) else []


def _strings(props: dict[str, Any]) -> list[str]:
    return [k for k, v in props.items() if isinstance(v, dict) and v.get("type") in ("string", None)]


def pick(tools: Any) -> Tools:
    """The searching and fetching tools among those declared (the defaults when none is declared)."""
    if not isinstance(tools, list) or not tools:
        return DEFAULT
    search: tuple[int, str, str] | None = None
    fetch: tuple[int, str, str, bool] | None = None
    for t in tools:
        if not isinstance(t, dict):
            continue
        name, desc, props, required = _params(t)
        strings = _strings(props)
        lowered = {k.lower(): k for k in props}
        url_arg = next((lowered[p] for p in _URL_PARAMS if p in lowered), None)
        id_arg = next((lowered[p] for p in _ID_PARAMS if p in lowered), None)
        label = (name + " " + desc).lower()
        if url_arg or id_arg:
            score = 2 if any(w in label for w in ("fetch", "read", "open", "page", "extract", "browse")) else 1
            if fetch is None or score > fetch[0]:
                fetch = (score, name, url_arg or id_arg or "", url_arg is not None)
            continue
        core = [k for k in strings if k in required] or strings
        if len(core) == 1:
            score = 2 if "search" in label or "query" in core[0].lower() else 1
            if search is None or score > search[0]:
                search = (score, name, core[0])
    if search is None:
        return DEFAULT
    if fetch is None:
        return Tools(search=search[1], search_arg=search[2], fetch=None)
    return Tools(search=search[1], search_arg=search[2], fetch=fetch[1], fetch_arg=fetch[2], fetch_by_url=fetch[3])


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value if _text(v))
    if isinstance(value, dict):
        return _text(value.get("text") or value.get("content") or value.get("snippet") or "")
    return ""


def _hits(node: Any, out: list[dict[str, Any]]) -> None:
    """Every object with a URL and some text, depth first, in document order."""
    if isinstance(node, list):
        for v in node:
            _hits(v, out)
    elif isinstance(node, dict):
        url = next((node[k] for k in _URL_KEYS if isinstance(node.get(k), str) and node[k].startswith("http")), None)
        if url is not None and (isinstance(node.get("title"), str) or any(k in node for k in _TEXT_KEYS)):
            out.append(node)
            return
        for v in node.values():
            _hits(v, out)


def read_results(text: str, *, plain_text: bool = True) -> list[Doc]:
    """Search results in a tool reply: <document> blocks, any provider's JSON, or plain text (one document)."""
    blocks = [d for d in documents(text) if d.page is None]
    if blocks:
        return blocks
    try:
        doc = msgspec.json.decode(text)
    except msgspec.DecodeError:
        doc = None
    if doc is not None:
        found: list[dict[str, Any]] = []
        _hits(doc, found)
        out = []
        for rank, h in enumerate(found, start=1):
            url = next(h[k] for k in _URL_KEYS if isinstance(h.get(k), str) and h[k].startswith("http"))
            snippet = "\n".join(s for s in (_text(h.get(k)) for k in _TEXT_KEYS) if s)
            out.append(Doc(doc_id=str(h.get("doc_id") or h.get("id") or url), rank=rank, domain="",
                           title=str(h.get("title") or h.get("name") or ""), url=url, snippet=snippet))
        if out:
            return out
    if not plain_text or not text.strip() or text.startswith("Error"):
        return []
    urls = _URL_RE.findall(text)
    return [Doc(doc_id=urls[0] if urls else "text", rank=1, domain="", title="", url=urls[0] if urls else "",
                snippet=text)]


def read_page(text: str) -> str | None:
    """A fetched page in a tool reply: a <page> element, a reader's JSON (`data.content` / `content`), or the text."""
    blocks = documents(text)
    if blocks and blocks[0].page is not None:
        return blocks[0].page
    try:
        doc = msgspec.json.decode(text)
    except msgspec.DecodeError:
        doc = None
    if isinstance(doc, dict):
        data: dict[str, Any] = doc["data"] if isinstance(doc.get("data"), dict) else doc
        for k in ("content", "markdown", "text", "raw_content"):
            if isinstance(data.get(k), str):
                return str(data[k])
        results = doc.get("results")
        if isinstance(results, list) and results and isinstance(results[0], dict):
            return _text(results[0].get("raw_content") or results[0].get("content") or "") or None
    if text.startswith("Error"):
        return None
    return text
