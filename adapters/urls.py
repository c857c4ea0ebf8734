"""URL normalisation of SPEC §2: the one key for caching, de-duplication and cross-provider comparison."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": "80", "https": "443"}
_DROP = {"gclid", "fbclid"}


def normalize_url(url: str) -> str:
    """Apply SPEC §2's steps in their order; idempotent."""
    s = url.strip()
    parts = urlsplit(s)
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rsplit("@", 1)[1]
    host, port = netloc, ""
    if netloc.startswith("["):  # IPv6 literal
        end = netloc.find("]")
        host, rest = netloc[: end + 1], netloc[end + 1 :]
        port = rest[1:] if rest.startswith(":") else ""
    elif ":" in netloc:
        host, port = netloc.rsplit(":", 1)
    host = host.lower()
    if port and _DEFAULT_PORTS.get(scheme) == port:
        port = ""
    netloc = f"{host}:{port}" if port else host
    path = parts.path or "/"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    params = []
    if parts.query:
        for p in parts.query.split("&"):
            name, value = (p.split("=", 1) + [None])[:2] if "=" in p else (p, None)
            if name.startswith("utm_") or name in _DROP:
                continue
            params.append((name, value, p))
    params.sort(key=lambda t: (t[0], t[1] if t[1] is not None else ""))
    query = "&".join(p for _, _, p in params)
    return urlunsplit((scheme, netloc, path, query, ""))


def domain_of(url: str) -> str:
    """Host of a URL, lowercase, without port or user information."""
    netloc = urlsplit(url.strip()).netloc.rsplit("@", 1)[-1]
    if netloc.startswith("["):
        return netloc[: netloc.find("]") + 1].lower()
    return netloc.split(":", 1)[0].lower()
