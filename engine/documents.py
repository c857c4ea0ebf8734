"""The one document block of SPEC §2: what the agent sees of a result, and what the judge sees of an item."""

from __future__ import annotations

from typing import Any

import msgspec

_enc = msgspec.json.Encoder(order="sorted")


def _text(value: str) -> str:
    """Untrusted text must not close our tags (pages are never executed or followed)."""
    return value.replace("</document>", "&lt;/document&gt;").replace("</page>", "&lt;/page&gt;")


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
        f"<metadata>{_enc.encode(metadata or {}).decode()}</metadata>",
    ]
    if page is not None:
        lines.append(f"<page>{_text(page)}</page>")
    lines.append("</document>")
    return "\n".join(lines)
