"""The one document block of docs/concepts/protocol.md: what the agent sees of a result, and what the judge sees of an item."""

from __future__ import annotations

import re
from typing import Any

import msgspec

_enc = msgspec.json.Encoder(order="sorted")
# A closing tag of any element of the block, in any case and spacing (`</Snippet >`), is neutralised.
_CLOSING = re.compile(r"</(\s*(?:document|page|title|url|snippet|metadata)\s*)>", re.IGNORECASE)


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
) -> str:
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
