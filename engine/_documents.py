"""The one document block of docs/concepts/protocol.md: what the agent sees of a result, and what the judge sees of an item."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

_enc = msgspec.json.Encoder(order="sorted")
# A closing tag of any element of the block, in any case and spacing (`</Snippet >`), is neutralised.
_CLOSING = re.compile(r"</(\s*(?:document|page|title|url|snippet|cited_text|metadata)\s*)>", re.IGNORECASE)
CITED_TEXT_KEY = "cited_text"  # docs/how-to/hosted.md: a hosted result's cited passage, kept in its metadata
OPAQUE_KEY = "opaque_blob"  # docs/how-to/hosted.md: the blob of a field the caller cannot read (never shown to the judge)


def _text(value: str) -> str:
    """Untrusted text must not close our tags (pages are never executed or followed)."""
    return _CLOSING.sub(r"&lt;/\1&gt;", value)


def _attr(value: str | int) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def document_block(
    *,
    doc_id: str,
    rank: int,
    domain: str,
    title: str,
    url: str,
    snippet: str,
    metadata: dict[str, Any] | None = None,
    page: str | None = None,
    surface: Sequence[str] | None = None,
) -> str:
    if surface is not None:  # docs/how-to/hosted.md: exactly the fields the caller received, absent ones omitted
        return _received_block(doc_id, rank, domain, title, url, snippet, metadata or {}, page, surface)
    lines = [
        f'<document doc_id="{_attr(doc_id)}" rank="{_attr(rank)}" domain="{_attr(domain)}">',
        f"<title>{_text(title)}</title>",
        f"<url>{_text(url)}</url>",
        f"<snippet>{_text(snippet)}</snippet>",
        f"<metadata>{_text(_enc.encode(metadata or {}).decode())}</metadata>",
    ]
    if page is not None:
        lines.append(f"<page>{_text(page)}</page>")
    lines.append("</document>")
    return "\n".join(lines)


def _received_block(doc_id: str, rank: int, domain: str, title: str, url: str, snippet: str,
                    metadata: dict[str, Any], page: str | None, surface: Sequence[str]) -> str:
    """The block of a hosted result: only the received fields, the cited passage in its own element."""
    lines = [f'<document doc_id="{_attr(doc_id)}" rank="{_attr(rank)}" domain="{_attr(domain)}">']
    if "title" in surface:
        lines.append(f"<title>{_text(title)}</title>")
    lines.append(f"<url>{_text(url)}</url>")
    if "snippet" in surface:
        lines.append(f"<snippet>{_text(snippet)}</snippet>")
    if "cited_text" in surface and metadata.get(CITED_TEXT_KEY):
        lines.append(f"<cited_text>{_text(str(metadata[CITED_TEXT_KEY]))}</cited_text>")
    rest = {k: v for k, v in metadata.items() if k not in (CITED_TEXT_KEY, OPAQUE_KEY)}
    if rest:
        lines.append(f"<metadata>{_text(_enc.encode(rest).decode())}</metadata>")
    if page is not None:
        lines.append(f"<page>{_text(page)}</page>")
    lines.append("</document>")
    return "\n".join(lines)
